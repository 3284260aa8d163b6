"""Exercises of notebook 04 (multi-head attention): split the heads, merge them, and write the
whole causal multi-head attention layer from its weight matrices."""

from __future__ import annotations

import math

import torch

from gptlib.attention import causal_mask
from gptlib.lessons.checks.core import Exercise, Mistake, register

# --- shared pieces: the reference and each catalogued wrong way of reshaping -----------------


def _split(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    B, T, d = x.shape
    return x.view(B, T, n_heads, d // n_heads).transpose(1, 2)


def _split_without_transpose(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    B, T, d = x.shape
    return x.reshape(B, n_heads, T, d // n_heads)


def _split_interleaved(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    B, T, d = x.shape
    return x.reshape(B, T, d // n_heads, n_heads).permute(0, 3, 1, 2)


def _merge(out: torch.Tensor) -> torch.Tensor:
    B, h, T, d_h = out.shape
    return out.transpose(1, 2).reshape(B, T, h * d_h)


def _merge_without_transpose(out: torch.Tensor) -> torch.Tensor:
    B, h, T, d_h = out.shape
    return out.reshape(B, T, h * d_h)


def _merge_interleaved(out: torch.Tensor) -> torch.Tensor:
    B, h, T, d_h = out.shape
    return out.permute(0, 2, 3, 1).reshape(B, T, h * d_h)


RESHAPE_WITHOUT_TRANSPOSE = (
    "you reshaped [B, T, d] straight into [B, h, T, d_h]. The shape is right but the contents "
    "are scrambled: reshape fills the new axes in memory order, so head 0 receives all the "
    "features of the first T/h tokens. Split the feature axis first, view(B, T, h, d_h), then "
    "swap the token and head axes with .transpose(1, 2)."
)


def _split_inputs(generator: torch.Generator) -> list[tuple]:
    return [
        (torch.randn(2, 5, 12, generator=generator), 3),
        (torch.randn(3, 6, 8, generator=generator), 4),
    ]


register(
    Exercise(
        name="split-heads",
        notebook="04_multi_head_attention",
        reference=_split,
        make_inputs=_split_inputs,
        mistakes=(
            Mistake(
                "reshape-without-transpose", RESHAPE_WITHOUT_TRANSPOSE, _split_without_transpose
            ),
            Mistake(
                "missing-transpose",
                "you split d into (h, d_h) but left the tokens on axis 1: the result is "
                "[B, T, h, d_h]. Attention needs [B, h, T, d_h] (each head a separate batch of "
                "sequences), so add .transpose(1, 2).",
                lambda x, h: x.view(x.shape[0], x.shape[1], h, x.shape[2] // h),
            ),
            Mistake(
                "interleaved-heads",
                "each head takes every h-th feature instead of a contiguous block of d_h "
                "features: you split d as (d_h, h) rather than (h, d_h). The projection's "
                "output features are grouped head by head (as in nn.MultiheadAttention), so "
                "view(B, T, h, d_h), with the head index first.",
                _split_interleaved,
            ),
        ),
        hint="x.view(B, T, h, d_h) then .transpose(1, 2)",
    )
)


def _merge_inputs(generator: torch.Generator) -> list[tuple]:
    return [
        (torch.randn(2, 3, 5, 4, generator=generator),),
        (torch.randn(1, 4, 6, 2, generator=generator),),
    ]


register(
    Exercise(
        name="merge-heads",
        notebook="04_multi_head_attention",
        reference=_merge,
        make_inputs=_merge_inputs,
        mistakes=(
            Mistake(
                "reshape-without-transpose",
                "you reshaped [B, h, T, d_h] straight into [B, T, d]: the shape is right, but "
                "each output row now holds pieces of several tokens from one head. Bring the "
                "tokens forward first, .transpose(1, 2) to [B, T, h, d_h], then reshape.",
                _merge_without_transpose,
            ),
            Mistake(
                "interleaved-merge",
                "you merged in the order (d_h, h), so the heads' features are interleaved. "
                "The merge must undo the split: head 0's d_h features first, then head 1's, "
                "... that is .transpose(1, 2).reshape(B, T, h * d_h).",
                _merge_interleaved,
            ),
        ),
        hint="out.transpose(1, 2).reshape(B, T, h * d_h) (reshape, since the transpose is not "
        "contiguous)",
    )
)

# --- Exercise 3: the whole layer -------------------------------------------------------------


def _attention(
    x: torch.Tensor,
    w_qkv: torch.Tensor,
    b_qkv: torch.Tensor,
    w_o: torch.Tensor,
    b_o: torch.Tensor,
    n_heads: int,
    split=_split,
    scale_width: str = "d_h",
    masked: bool = True,
    project: bool = True,
) -> torch.Tensor:
    """The reference when called with the defaults; each keyword reproduces one mistake."""
    B, T, d = x.shape
    q, k, v = (split(t, n_heads) for t in (x @ w_qkv.T + b_qkv).split(d, dim=-1))
    width = d // n_heads if scale_width == "d_h" else d
    scores = q @ k.transpose(-2, -1) / math.sqrt(width)
    if masked:
        scores = scores.masked_fill(~causal_mask(T), float("-inf"))
    out = _merge(torch.softmax(scores, dim=-1) @ v)
    return out @ w_o.T + b_o if project else out


def _layer_inputs(generator: torch.Generator) -> list[tuple]:
    cases = []
    for B, T, d, h in ((2, 5, 12, 3), (1, 6, 12, 4)):
        g = generator
        cases.append(
            (
                torch.randn(B, T, d, generator=g),
                0.4 * torch.randn(3 * d, d, generator=g),
                0.1 * torch.randn(3 * d, generator=g),
                0.3 * torch.randn(d, d, generator=g),
                0.1 * torch.randn(d, generator=g),
                h,
            )
        )
    return cases


register(
    Exercise(
        name="multi-head-attention",
        notebook="04_multi_head_attention",
        reference=_attention,
        make_inputs=_layer_inputs,
        mistakes=(
            Mistake(
                "scaled-by-sqrt-d",
                "you divided the scores by √d, the model width. Each head's dot product sums "
                "only d_h = d / h products, so its variance is d_h: divide by √d_h.",
                lambda *a: _attention(*a, scale_width="d"),
            ),
            Mistake(
                "reshape-without-transpose",
                RESHAPE_WITHOUT_TRANSPOSE,
                lambda *a: _attention(*a, split=_split_without_transpose),
            ),
            Mistake(
                "no-mask",
                "there is no causal mask: every position also attends to the positions after "
                "it. Fill the scores where key j > query i with -inf before the softmax.",
                lambda *a: _attention(*a, masked=False),
            ),
            Mistake(
                "no-output-projection",
                "you returned the merged heads without the output projection: multiply by W_O "
                "(out @ w_o.T + b_o), which mixes the heads' results.",
                lambda *a: _attention(*a, project=False),
            ),
        ),
        hint="x @ w_qkv.T + b_qkv, split into q, k, v, split heads, scale by √d_h, mask, "
        "softmax, @ v, merge heads, then @ w_o.T + b_o",
    )
)
