"""Exercises of notebook 04 (multi-head attention): split the heads, merge them, and write the
causal multi-head self-attention module with a fused qkv projection (the piece notebook 07's
capstone builds on)."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from gptlib.lessons.checks.core import CheckError, Exercise, Mistake, register
from gptlib.lessons.checks.weights import load_weights
from gptlib.model import CausalSelfAttention, causal_mask

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
    "this is the chapter's “wrong reshape order” pitfall: you reshaped [B, T, d] straight "
    "into [B, h, T, d_h]. The shape is right but the contents are scrambled: reshape fills the "
    "new axes in memory order, so head 0 receives all the features of the first T/h tokens. "
    "Split the feature axis first, view(B, T, h, d_h), then swap the token and head axes with "
    ".transpose(1, 2)."
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
        hints=(
            "Head i owns the i-th block of d_h consecutive features. First cut the last axis "
            "into (heads, d_h) without moving any number, then bring the head axis in front of "
            "the positions.",
            "View the tensor as [B, T, h, d_h], then swap axes 1 and 2. Viewing it straight as "
            "[B, h, T, d_h] puts features of several positions into one head: the chapter's "
            "reshape pitfall.",
        ),
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
        hints=(
            "Undo split_heads in reverse order: put the positions back in front of the heads, "
            "then join each position's h blocks of d_h features into one axis of h·d_h.",
            "After the two axes are swapped the tensor is no longer contiguous in memory, so "
            "view cannot join the last two axes; reshape can (or contiguous, then view).",
        ),
    )
)

# --- Exercise 3: the module ----------------------------------------------------------------
# The student writes a class `MultiHeadAttention(d_model, n_heads)` holding `qkv` and `proj`
# Linear layers, as gptlib's CausalSelfAttention does. The check builds it, loads the state
# dict of a CausalSelfAttention with random weights into it, and compares the outputs.

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


def module_inputs(generator: torch.Generator) -> list[tuple]:
    # The last case is a long sequence (T = 40): a mask stored at a fixed small size breaks.
    cases = []
    for B, T, d, h in ((2, 5, 12, 3), (1, 6, 8, 4), (1, 40, 16, 2)):
        with torch.device("meta"):  # the names and shapes of gptlib's layer, nothing drawn
            shapes = {name: w.shape for name, w in CausalSelfAttention(d, h).state_dict().items()}
        weights = {
            name: torch.randn(shape, generator=generator) / (d**0.5 if len(shape) == 2 else 4)
            for name, shape in shapes.items()
        }
        cases.append((d, h, weights, torch.randn(B, T, d, generator=generator)))
    return cases


class _Layer(nn.Module):
    """Causal multi-head self-attention written out; each subclass makes one mistake."""

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def split(self, t: torch.Tensor) -> torch.Tensor:
        return _split(t, self.n_heads)

    def merge(self, out: torch.Tensor) -> torch.Tensor:
        return _merge(out)

    def scale(self, d_model: int) -> float:
        return math.sqrt(d_model // self.n_heads)

    def weights(self, scores: torch.Tensor) -> torch.Tensor:
        allowed = causal_mask(scores.shape[-1])
        return torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = x.shape[-1]
        q, k, v = (self.split(t) for t in self.qkv(x).split(d, dim=-1))
        scores = q @ k.transpose(-2, -1) / self.scale(d)
        return self.proj(self.merge(self.weights(scores) @ v))


class _SplitWithoutTranspose(_Layer):
    def split(self, t):
        return _split_without_transpose(t, self.n_heads)


class _MergeWithoutTranspose(_Layer):
    def merge(self, out):
        return _merge_without_transpose(out)


class _ScaledBySqrtD(_Layer):
    def scale(self, d_model):
        return math.sqrt(d_model)


class _NoMask(_Layer):
    def weights(self, scores):
        return torch.softmax(scores, dim=-1)


class _MaskAfterSoftmax(_Layer):
    def weights(self, scores):
        return torch.softmax(scores, dim=-1).masked_fill(~causal_mask(scores.shape[-1]), 0.0)


class _MaskFilledWithZero(_Layer):
    def weights(self, scores):
        return torch.softmax(scores.masked_fill(~causal_mask(scores.shape[-1]), 0.0), dim=-1)


class _SoftmaxOverQueries(_Layer):
    def weights(self, scores):
        allowed = causal_mask(scores.shape[-1])
        return torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-2)


class _NoOutputProjection(_Layer):
    def forward(self, x):
        d = x.shape[-1]
        q, k, v = (self.split(t) for t in self.qkv(x).split(d, dim=-1))
        return self.merge(self.weights(q @ k.transpose(-2, -1) / self.scale(d)) @ v)


# The module's catalogue: notebook 07 asks for the module again and meets the same mistakes.
ATTENTION_MODULE_MISTAKES = (
    Mistake(
        "reshape-without-transpose",
        RESHAPE_WITHOUT_TRANSPOSE,
        _SplitWithoutTranspose,
    ),
    Mistake(
        "merge-without-transpose",
        "you merged the heads by reshaping [B, h, T, d_h] straight into [B, T, d]: "
        "each output row then holds pieces of several tokens from one head. Bring the "
        "tokens forward first: out.transpose(1, 2).reshape(B, T, d).",
        _MergeWithoutTranspose,
    ),
    Mistake(
        "scaled-by-sqrt-d",
        "you divided the scores by √d, the model width. Each head's dot product sums "
        "only d_h = d / h products, so its variance is d_h: divide by √d_h.",
        _ScaledBySqrtD,
    ),
    Mistake(
        "no-mask",
        "there is no causal mask: every position also attends to the positions after "
        "it. Fill the scores where key j > query i with -inf before the softmax.",
        _NoMask,
    ),
    Mistake(
        "mask-after-softmax",
        "you zeroed the future weights after the softmax, so each row no longer sums "
        "to 1: the future's share is thrown away instead of shared among the allowed "
        "keys. Fill the scores with -inf before the softmax.",
        _MaskAfterSoftmax,
    ),
    Mistake(
        "mask-filled-with-zero",
        "you filled the blocked scores with 0, but e^0 = 1: the future keys still get "
        "weight. Fill them with float('-inf').",
        _MaskFilledWithZero,
    ),
    Mistake(
        "softmax-wrong-axis",
        "the softmax runs over the queries (dim=-2). Each query's weights over the "
        "keys must sum to 1: take the softmax over the last axis (dim=-1).",
        _SoftmaxOverQueries,
    ),
    Mistake(
        "no-output-projection",
        "you returned the merged heads without the output projection: pass them "
        "through self.proj (W_O), which mixes the heads' results.",
        _NoOutputProjection,
    ),
)


register(
    Exercise(
        name="attention-module",
        notebook="04_multi_head_attention",
        reference=CausalSelfAttention,
        make_inputs=module_inputs,
        adapt=run_module,
        mistakes=ATTENTION_MODULE_MISTAKES,
        hints=(
            "Two linear layers: one makes q, k and v at once (d → 3d), one mixes the heads' "
            "outputs (d → d). forward cuts the queries, keys and values apart, splits each into "
            "heads, attends causally in every head, merges the heads and projects.",
            "Scale the scores by one over the square root of a head's width d_h, not the "
            "model's width; give each key later than its query −∞ before the softmax over the "
            "keys; split_heads and merge_heads above do the reshaping.",
        ),
    )
)
