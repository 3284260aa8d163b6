"""Lesson 01's inputs that a graded release ships: the attention layers the permutation test
is run on (picklable, unlike closures)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from gptlib.model import attention_with_weights, causal_mask

Layer = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class AttentionLayer:
    """One attention layer without positions, like the notebook's: [..., T, d] → [..., T, d_out]."""

    W_Q: torch.Tensor
    W_K: torch.Tensor
    W_V: torch.Tensor
    causal: bool

    @classmethod
    def drawn(cls, g: torch.Generator, d: int, d_out: int, causal: bool) -> AttentionLayer:
        W_Q, W_K, W_V = (torch.randn(d, d_out, generator=g) / math.sqrt(d) for _ in range(3))
        return cls(W_Q, W_K, W_V, causal)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        mask = causal_mask(x.shape[-2]) if self.causal else None
        return attention_with_weights(x @ self.W_Q, x @ self.W_K, x @ self.W_V, mask=mask)[0]


@dataclass(frozen=True)
class Stacked:
    """`second(first(x))`: two layers one after the other."""

    first: AttentionLayer
    second: AttentionLayer

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.second(self.first(x))


@dataclass(frozen=True)
class Positioned:
    """A layer that adds position vectors [T, d] to its input first."""

    layer: AttentionLayer
    positions: torch.Tensor

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x + self.positions)


# --- properties: conditions any right answer meets (no reference needed) ---


def non_negative(out, f: Layer, x: torch.Tensor, perm: torch.Tensor) -> str | None:
    gap, prefix = out
    if isinstance(gap, torch.Tensor) and (gap < -1e-6).any():
        return "a gap is negative, but a largest absolute difference cannot be"
    return None


def nothing_to_reorder(out, f: Layer, x: torch.Tensor, perm: torch.Tensor) -> str | None:
    prefix = out[1]
    if (
        isinstance(prefix, torch.Tensor)
        and prefix.shape == (len(x),)
        and prefix[:2].abs().max() > 1e-5
    ):
        return (
            "positions 0 and 1 have fewer than two tokens before them, so there is one order "
            f"only and nothing can change, yet your prefix starts "
            f"{float(prefix[0]):z.4f}, {float(prefix[1]):z.4f}"
        )
    return None


def keeps_the_gradient(x: torch.Tensor, idx: torch.Tensor, E: torch.Tensor, P: torch.Tensor):
    if (E.requires_grad or P.requires_grad) and not x.requires_grad:
        return (
            "the result carries no gradient back to the two tables (detaching, reading the "
            "raw data or building a new tensor cuts it), so a model using it could never "
            "train them"
        )
    return None


def row_zero_is_sin0_cos0(table: torch.Tensor, T: int, d: int, base: float) -> str | None:
    expected = torch.tensor([0.0, 1.0]).repeat(d // 2)
    if not torch.allclose(table[0].float(), expected, atol=1e-5):
        return f"position 0 should be (sin 0, cos 0, ...) = (0, 1, 0, 1, ...), got {table[0][:4]}"
    return None


def self_similarity(out, P: torch.Tensor) -> str | None:
    by_offset = out[0]
    if isinstance(by_offset, torch.Tensor) and by_offset.shape == (len(P),):
        if abs(float(by_offset[0]) - 1) > 1e-4:
            return (
                "at offset 0 every position is paired with itself, so the mean cosine must be "
                f"1; yours is {float(by_offset[0]):z.4f}"
            )
    return None
