"""Lesson 03's inputs that a graded release ships: the model with dropout that the held-out
losses are measured on."""

from __future__ import annotations

import math

import torch

from gptlib.data.grammar import Grammar
from gptlib.model import GPT


class SameDropoutEachCall(GPT):
    """A GPT with dropout that draws the same masks on every call: a measurement taken in
    training mode then differs from one in evaluation mode the same way every time, so the check
    can name that mistake. The global random state is left as it was."""

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            return super().forward(idx, targets)


# --- properties: conditions any right answer meets (no reference needed) ---


def rows_sum_to_one(out: torch.Tensor, scores: torch.Tensor) -> str | None:
    sums = out.sum(dim=-1)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-5):
        return (
            f"rows should sum to 1, but some sum to {sums.flatten()[sums.flatten().argmin()]:z.3f}"
        )
    return None


def future_is_zero(out: torch.Tensor, scores: torch.Tensor) -> str | None:
    if (out.triu(diagonal=1) != 0).any():
        return "weights above the diagonal (keys after the query) must be exactly 0"
    return None


def no_negative_sizes(out: torch.Tensor, model, idx, other) -> str | None:
    if (out < 0).any():
        return "a change is a size: no entry can be negative"
    return None


def below_the_uniform_guess(out: float, grammar: Grammar) -> str | None:
    uniform = math.log(len(grammar.alphabet()))
    if not 0 < float(out) < uniform:
        return (
            f"the floor must lie between 0 and ln {len(grammar.alphabet())} = {uniform:z.3f}, the "
            f"loss of a uniform guess over the alphabet; got {float(out):z.4f}"
        )
    return None


def no_gradients(out: tuple, model, x, y) -> str | None:
    if any(isinstance(o, torch.Tensor) and o.requires_grad for o in out):
        return "the losses still carry an autograd graph (requires_grad=True)"
    return None
