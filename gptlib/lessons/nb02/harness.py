"""Lesson 02's adapter that a graded release ships: a student's first-step gradients are run
on a freshly built retrieval head that arrives holding stale gradients."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from gptlib.lessons.nb02.experiments import RetrievalHead, RetrievalTask


def head_with_stale_gradients(d_k: int, scaled: bool, seed: int) -> RetrievalHead:
    """A retrieval head of width d_k whose .grad fields hold the gradient of another batch, as
    after an earlier training step."""
    task = RetrievalTask()
    head = RetrievalHead(task, d_k, scaled, 32, torch.Generator().manual_seed(seed))
    keys, values, queried = task.batch(8, torch.Generator().manual_seed(seed + 100))
    logits, _ = head(keys, values, queried)
    F.cross_entropy(logits, values.gather(1, queried[:, None])[:, 0]).backward()
    return head


def on_a_head(answer: Callable[..., Any]) -> Callable[..., Any]:
    """The answer called on a freshly built head (with stale gradients) for each input, whose
    first item is the head's (d_k, scaled, seed)."""

    def run(spec: tuple[int, bool, int], keys, values, queried):
        return answer(head_with_stale_gradients(*spec), keys, values, queried)

    return run


# --- properties: conditions any right answer meets (no reference needed) ---


def sums_to_one(weights: torch.Tensor, *inputs: object) -> str | None:
    sums = weights.sum(dim=-1)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-5):
        return f"each row must sum to 1 over the last axis, got sums {sums.flatten()[:4]}"
    if (weights < 0).any():
        return "weights must be non-negative"
    return None


def attention_weights_ok(output: tuple, q, k, v, mask=None) -> str | None:
    if not isinstance(output, tuple | list) or len(output) != 2:
        return "return a pair (output, weights)"
    problem = sums_to_one(output[1])
    if problem is None and mask is not None:
        leaked = output[1].detach().float().masked_fill(mask, 0.0).abs().max().item()
        if leaked > 1e-6:
            problem = (
                f"a key the mask blocks (mask False) got weight {leaked:z.3g}; blocked keys must "
                "get weight 0"
            )
    return problem


def measures_in_range(output: tuple, q, k, upstream, scaled) -> str | None:
    if not isinstance(output, tuple | list) or len(output) != 4:
        return "return four numbers: (score std, max weight, entropy, grad norm)"
    n_keys = k.shape[1]
    # detached: a right answer may return tensors still attached to autograd
    max_weight, entropy = (float(torch.as_tensor(x).detach()) for x in output[1:3])
    if not 1 / n_keys - 1e-6 <= max_weight <= 1 + 1e-6:
        return (
            f"the mean largest weight of a row of {n_keys} weights lies between 1/{n_keys} "
            f"(uniform) and 1 (one-hot); yours is {max_weight:z.4g}"
        )
    if not -1e-6 <= entropy <= math.log(n_keys) + 1e-6:
        return (
            f"the entropy of a row of {n_keys} weights lies between 0 (one-hot) and ln "
            f"{n_keys} = {math.log(n_keys):z.3f} nats (uniform); yours is {entropy:z.4g}"
        )
    return None


def gradients_ok(output: tuple, spec, keys, values, queried) -> str | None:
    if not isinstance(output, tuple | list) or len(output) != 3:
        return (
            "return three things: (W_Q's gradient norm, W_K's gradient norm, the scores' gradients)"
        )
    return None
