"""Lesson 04's inputs and adapters that a graded release ships: how a student's attention
module is built and run on known weights, the layers the moved-by-token measurement probes,
and the reads-ahead answer read as lists of ints."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from gptlib.lessons.engine.checks.core import CheckError
from gptlib.lessons.engine.checks.weights import load_weights

MODULE_HINT = (
    "Create self.qkv = nn.Linear(d_model, 3 * d_model) and self.proj = nn.Linear(d_model, "
    "d_model) (with their biases, nn.Linear's default)"
)


def run_module(
    module_class: type, exercise: str = "attention-module"
) -> Callable[..., torch.Tensor]:
    """The answer as a function of one test input: build, load the weights, run on x.
    `exercise` names the exercise in a weight misfit's message (07 asks for the module again)."""

    def run(
        d_model: int, n_heads: int, weights: dict[str, torch.Tensor], x: torch.Tensor
    ) -> torch.Tensor:
        module = module_class(d_model, n_heads)
        try:
            load_weights(module, weights)
        except ValueError as error:
            raise CheckError(exercise, f"{error}. {MODULE_HINT}") from None
        with torch.no_grad():
            return module.eval()(x)

    return run


def heads_of(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """A layer to probe: [B, T, d] → [B, h, T, d_h], each token's features cut into h heads."""
    return x.unflatten(-1, (n_heads, -1)).permute(0, 2, 1, 3)


def heads_scrambled(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """A layer to probe: [B, T, d] → [B, h, T, d_h] read straight from memory, so that one
    head's rows hold pieces of several tokens."""
    return x.flatten().view(x.shape[0], n_heads, x.shape[1], -1)


class Queries(nn.Module):
    """The queries of `attn`'s forward pass, split by `split`: x [B, T, d] → [B, h, T, d_h]."""

    def __init__(self, attn: nn.Module, split: Callable) -> None:
        super().__init__()
        self.attn, self.split = attn, split

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.split(self.attn.qkv(x).split(self.attn.d_model, dim=-1)[0])


def negative_running_total(x: torch.Tensor) -> torch.Tensor:
    """[B, T, d] → [B, T, 1]: minus the running sum of feature 0; a nudge only lowers it."""
    return -x[..., :1].cumsum(dim=1)


def as_lists(result: object) -> object:
    """A list of lists of Python ints, whatever sequences or tensors the answer used; anything
    else unchanged (the check then says what it expected)."""
    try:
        return [[int(s) for s in row] for row in result]
    except (TypeError, ValueError, RuntimeError):
        return result


def read_as_lists(answer: Callable[[torch.Tensor], Any]) -> Callable[[torch.Tensor], object]:
    """The reads-ahead answer with its result read as lists of ints (`as_lists`)."""
    return lambda moved: as_lists(answer(moved))


# --- properties: conditions any right answer meets (no reference needed) ---
