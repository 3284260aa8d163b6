"""Generation with the KV cache against recomputing the window for every new token.

Notebook 07 decodes through the student's own model with the student's cached attention
(`decode_with_cache`) and counts the positions each way feeds through a layer
(`positions_through_qkv`). Notebook 08 and `benchmarks/generation.py` time gptlib's two paths
(`compare_cache`): both decode from the same prompt (greedily, or sampled with generators seeded
alike) and their tokens are compared, the two timed in alternation so that load on a shared
machine slows both alike; `cached_logit_gap` measures how far apart their logits are, and
`window_passes` when `GPT.generate` re-reads a whole window.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from gptlib.model import GPT
from gptlib.validation import check_positive_int

# attend(attn, x [B, 1, d], cache or None, n_heads) → (y [B, 1, d], (keys, values)): notebook
# 07's exercise `attend_with_cache`
Attend = Callable[[nn.Module, torch.Tensor, object, int], tuple[torch.Tensor, object]]


def decode_with_cache(
    model: nn.Module, idx: torch.Tensor, n_new: int, attend: Attend, n_heads: int
) -> torch.Tensor:
    """Greedy decoding through a model named as notebook 07 names it (tok_emb, pos_emb, blocks
    of ln1 / attn / ln2 / mlp, ln_f, lm_head or head): every position goes through the model
    once, and each layer's attention is `attend`, which keeps that layer's cache.

    idx [B, T] → [B, T + n_new]. The text must fit in the model's positions (the cache is
    never slid): ValueError otherwise.
    """
    check_positive_int("n_new", n_new)
    T, max_len = idx.shape[1], model.pos_emb.num_embeddings
    if T + n_new > max_len:
        raise ValueError(
            f"a prompt of {T} tokens and n_new={n_new} make {T + n_new} positions, more than "
            f"the model's {max_len}; decode at most {max_len - T} new tokens"
        )
    unembed = model.lm_head if hasattr(model, "lm_head") else model.head
    caches: list[object] = [None] * len(model.blocks)
    tokens = idx
    with torch.no_grad():
        for t in range(T + n_new - 1):  # the last new token is never fed back
            x = model.tok_emb(tokens[:, t : t + 1]) + model.pos_emb.weight[t]  # [B, 1, d]
            for i, block in enumerate(model.blocks):
                y, caches[i] = attend(block.attn, block.ln1(x), caches[i], n_heads)
                x = x + y
                x = x + block.mlp(block.ln2(x))
            if t >= T - 1:  # past the prompt: x is the newest position's state
                next_id = unembed(model.ln_f(x))[:, -1].argmax(dim=-1, keepdim=True)
                tokens = torch.cat([tokens, next_id], dim=1)
    return tokens


def positions_through_qkv(
    model: nn.Module, decode: Callable[[], torch.Tensor]
) -> tuple[torch.Tensor, int]:
    """Run `decode()`; return its result and how many positions of one sequence went through
    the first layer's `qkv` meanwhile (each layer does the same work)."""
    result, lengths = _qkv_calls(model, decode)
    return result, sum(lengths)


def _qkv_calls(
    model: nn.Module, decode: Callable[[], torch.Tensor]
) -> tuple[torch.Tensor, list[int]]:
    """Run `decode()`; its result, and the positions per sequence [B, T, d] → T of each call
    of the first layer's `qkv` meanwhile."""
    lengths: list[int] = []
    handle = model.blocks[0].attn.qkv.register_forward_hook(
        lambda module, inputs, output: lengths.append(inputs[0].shape[1])
    )
    try:
        result = decode()
    finally:
        handle.remove()
    return result, lengths


@dataclass(frozen=True)
class CacheComparison:
    """Generation of `n_new` tokens after a prompt, with and without the KV cache, at a
    `temperature` (0: greedy) with generators seeded alike.

    cached_s and recomputed_s are median seconds (of the clock given to `compare_cache`) over
    `rounds` alternating runs; identical says whether the two token sequences [B, T + n_new]
    were equal.
    """

    max_len: int
    n_new: int
    rounds: int
    identical: bool
    cached_s: float
    recomputed_s: float
    temperature: float = 0.0

    @property
    def speedup(self) -> float:
        return self.recomputed_s / self.cached_s

    def lines(self) -> list[str]:
        """The comparison as `name = value` lines."""
        return [
            f"window = {self.max_len}",
            f"with the cache = {self.cached_s * 1e3:z.0f} ms",
            f"recomputing = {self.recomputed_s * 1e3:z.0f} ms",
            f"speedup = {self.speedup:z.1f}x",
            f"identical = {self.identical}",
        ]


def compare_cache(
    model: GPT,
    prompt: torch.Tensor,
    n_new: int,
    rounds: int = 1,
    clock: Callable[[], float] = time.perf_counter,
    temperature: float = 0.0,
    seed: int = 0,
) -> CacheComparison:
    """Generate `n_new` tokens after `prompt` [B, T] both ways (greedily, or sampled at
    `temperature` with a generator seeded with `seed` each time); time and compare them.

    `clock=time.process_time` counts CPU seconds instead of wall seconds (for a shared machine).
    """
    check_positive_int("rounds", rounds)
    runs: dict[bool, list[float]] = {True: [], False: []}
    outputs: dict[bool, torch.Tensor] = {}
    for _ in range(rounds):
        for use_cache in (True, False):
            generator = torch.Generator(device=prompt.device).manual_seed(seed)
            start = clock()
            outputs[use_cache] = model.generate(
                prompt, n_new, temperature=temperature, generator=generator, use_cache=use_cache
            )
            runs[use_cache].append(clock() - start)
    return CacheComparison(
        max_len=model.config.max_len,
        n_new=n_new,
        rounds=rounds,
        identical=torch.equal(outputs[True], outputs[False]),
        cached_s=statistics.median(runs[True]),
        recomputed_s=statistics.median(runs[False]),
        temperature=temperature,
    )


@torch.no_grad()
def cached_logit_gap(model: GPT, idx: torch.Tensor, prompt_len: int) -> float:
    """Largest |difference| between the logits of idx [B, T] (T <= max_len) computed in one
    pass and computed as generation does with the cache: the first `prompt_len` tokens in one
    pass, then one token at a time. Rounding differs between the two orders of work."""
    model.eval()
    whole = model(idx)[0]  # [B, T, V]
    caches = model.new_caches(idx.shape[0])
    parts = [model.hidden_states(idx[:, :prompt_len], caches=caches)]
    for t in range(prompt_len, idx.shape[1]):
        parts.append(model.hidden_states(idx[:, t : t + 1], start=t, caches=caches))
    return (model.lm_head(torch.cat(parts, dim=1)) - whole).abs().max().item()


def window_passes(model: GPT, decode: Callable[[], torch.Tensor]) -> list[int]:
    """Run `decode()`; return, for each forward call of the first layer's `qkv` that took more
    than one position (the prompt, or, once the text outgrows max_len, each cropped window),
    the number of calls before it: with the cache, the index of the new token it produced."""
    return [i for i, n in enumerate(_qkv_calls(model, decode)[1]) if n > 1]
