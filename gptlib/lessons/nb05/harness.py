"""Lesson 05's inputs and adapters that a graded release ships: how a student's MLP is built and
loaded with gptlib's weights (07 asks for it again), the similarity answer read as a number, and
the models the initialisation exercise re-initialises and measures."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from gptlib.lessons.engine.checks.core import (
    CheckError,
    exercise_named,
    mistake_error,
    running_a_mistake,
)
from gptlib.lessons.shared.experiments.variants import Variant, build_gpt
from gptlib.model import GPT, GPTConfig

HIDDEN_WIDTH_D = "hidden-width-d"  # the mistake load_mlp_weights itself reports


MLP_LAYERS = ("up", "down")


def load_mlp_weights(
    module: nn.Module, weights: dict[str, torch.Tensor], d_model: int, exercise: str
) -> None:
    """Copy gptlib's MLP weights into the student's module by name; a missing layer, an extra
    parameter or a wrong shape is a `CheckError` of `exercise` saying which. A hidden layer of
    width d is the catalogued mistake, reported as one (its fix the second time); the
    catalogue's own such module keeps its seeded weights and is matched by its output."""
    params = dict(module.named_parameters())
    missing = [f"{name}.weight" for name in MLP_LAYERS if f"{name}.weight" not in params]
    if missing:
        raise CheckError(
            exercise,
            f"your MLP has no {' or '.join(missing)}: it needs two nn.Linear layers named `up` "
            "(d_model → 4·d_model) and `down` (4·d_model → d_model), the names under which "
            f"notebook 07 loads gptlib's weights. Its parameters are {sorted(params)}.",
        )
    unexpected = sorted(set(params) - set(weights))
    if unexpected:
        raise CheckError(
            exercise,
            f"your MLP has parameters gptlib's does not: {unexpected}. It needs exactly "
            f"{sorted(weights)} (biases optional only if you mean to leave them out).",
        )
    if params["up.weight"].shape == (d_model, d_model):
        if running_a_mistake():
            return  # the catalogue's own module, matched by its output, not reported
        checked = exercise_named(exercise)
        raise mistake_error(checked, next(m for m in checked.mistakes if m.name == HIDDEN_WIDTH_D))
    for name, p in params.items():
        if p.shape != weights[name].shape:
            raise CheckError(
                exercise,
                f"{name} has shape {list(p.shape)}, gptlib's MLP({d_model}) has "
                f"{list(weights[name].shape)} (nn.Linear stores weight as [out, in]).",
            )
    with torch.no_grad():
        for name, p in params.items():
            p.copy_(weights[name])


def run_mlp(cls: type, exercise: str = "mlp") -> Callable[..., torch.Tensor]:
    """`adapt` for the MLP exercise: build cls(d_model), load the given weights, run it on x.
    `exercise` names the exercise in messages (07 asks for the module again)."""

    def run(d_model: int, x: torch.Tensor, weights: dict[str, torch.Tensor]) -> torch.Tensor:
        module = cls(d_model)
        if not isinstance(module, nn.Module):
            raise CheckError(
                exercise,
                f"MLP({d_model}) should make an nn.Module, it made {type(module).__name__}",
            )
        load_mlp_weights(module, weights, d_model, exercise)
        with torch.no_grad():
            return module(x)

    return run


def as_number(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`adapt` for the similarity exercise: a Python number, or a one-element tensor of any
    shape, is as good as a 0-d tensor."""

    def run(h: torch.Tensor) -> Any:
        out = fn(h)
        if isinstance(out, torch.Tensor) and out.numel() == 1:
            return out.reshape(())
        return torch.tensor(float(out)) if isinstance(out, int | float) else out

    return run


@dataclass(frozen=True)
class InitModel:
    """A GPT for the initialisation exercise, built afresh for every call with its biases set
    to 0.1 (so that leaving them is seen)."""

    n_layers: int
    layer_norm: bool
    d_model: int = 64
    max_len: int = 64
    seed: int = 0

    def build(self) -> GPT:
        torch.manual_seed(self.seed)
        config = GPTConfig(
            vocab_size=65, d_model=self.d_model, n_heads=4, n_layers=self.n_layers,
            max_len=self.max_len,
        )  # fmt: skip
        model = build_gpt(config, Variant(residual=False, block_norms=self.layer_norm))
        with torch.no_grad():
            for module in model.modules():
                if isinstance(module, nn.Linear) and module.bias is not None:
                    module.bias.fill_(0.1)
        return model


INIT_STATISTICS = (
    "weight std × √fan_in of attn.qkv, attn.proj, mlp.up, mlp.down, lm_head",
    "largest |bias|",
    "std of tok_emb, pos_emb",
    "largest change to a LayerNorm's scale or shift",
)


def init_statistics(model: GPT) -> tuple[torch.Tensor, ...]:
    """What an initialisation drew, pooled over the blocks (`INIT_STATISTICS`)."""
    pooled: dict[str, list[torch.Tensor]] = {}
    biases = [torch.zeros(())]
    norms = [torch.zeros(())]
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear):
            kind = ".".join(name.split(".")[-2:]) if name.startswith("blocks.") else name
            scaled = module.weight.detach().flatten() * math.sqrt(module.in_features)
            pooled.setdefault(kind, []).append(scaled)
            if module.bias is not None:
                biases.append(module.bias.detach().abs().max())
        elif isinstance(module, nn.LayerNorm):
            norms += [(module.weight.detach() - 1).abs().max(), module.bias.detach().abs().max()]
    weights = torch.stack([torch.cat(pooled[k]).std() for k in INIT_KINDS])
    embeddings = torch.stack(
        [model.tok_emb.weight.detach().std(), model.pos_emb.weight.detach().std()]
    )
    return weights, torch.stack(biases).max(), embeddings, torch.stack(norms).max()


INIT_KINDS = ("attn.qkv", "attn.proj", "mlp.up", "mlp.down", "lm_head")


def run_init(fn: Callable[..., Any]) -> Callable[..., tuple[torch.Tensor, ...]]:
    """`adapt` for the initialisation exercise: build the model, seed torch's generator, let
    fn(model, gain) re-initialise it in place, and measure what it drew."""

    def run(spec: InitModel, gain: float) -> tuple[torch.Tensor, ...]:
        model = spec.build()
        torch.manual_seed(spec.seed + 1)
        fn(model, gain)
        return init_statistics(model)

    return run


# --- properties: conditions any right answer meets (no reference needed) ---


def same_vector_same_output(out, d_model, x, weights):
    if not torch.allclose(out[:, 0], out[:, 1], atol=1e-5):
        return (
            "positions 0 and 1 hold the same vector but got different outputs; the MLP must "
            "treat every position on its own, with the same weights"
        )
    return None


def a_mean_of_cosines(out, *_: object) -> str | None:
    if -1 - 1e-6 <= float(out) <= 1 + 1e-6:
        return None
    return f"{float(out):z.4g} cannot be a mean of cosines, which lie in [-1, 1]"


def accuracies_are_shares(out, *_: object) -> str | None:
    if bool(((out[1] >= 0) & (out[1] <= 1)).all()):
        return None
    return "an accuracy is a share of positions, between 0 and 1"
