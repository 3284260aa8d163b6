"""Exercises of notebook 04 (multi-head attention): split the heads; merge them; write the causal
multi-head self-attention module with a fused qkv projection (the piece notebook 07's capstone
builds on); measure which outputs a token moves, and which later tokens each output position
reads (the reshape pitfall, measured)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from gptlib.lessons.engine.checks.core import CheckError, Exercise, Mistake, register
from gptlib.lessons.engine.checks.delegation import Route
from gptlib.lessons.engine.checks.weights import load_weights
from gptlib.lessons.nb04.experiments.multihead import scramble_head_split
from gptlib.lessons.shared.routes import MULTI_HEAD_LAYER
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


def _merge_by_view(out: torch.Tensor) -> torch.Tensor:
    B, h, T, d_h = out.shape
    return out.transpose(1, 2).view(B, T, h * d_h)  # raises: the transpose is not contiguous


def _merge_interleaved(out: torch.Tensor) -> torch.Tensor:
    B, h, T, d_h = out.shape
    return out.permute(0, 2, 3, 1).reshape(B, T, h * d_h)


def _merge_heads_averaged(out: torch.Tensor) -> torch.Tensor:
    return out.mean(dim=1)


RESHAPE_WITHOUT_TRANSPOSE = (
    "this is the chapter's “wrong reshape order” pitfall: you reshaped [B, T, d] straight "
    "into [B, h, T, d_h]. The shape is right but the contents are scrambled: a reshape fills the "
    "new axes in memory order, so head 0 receives all the features of the first T/h tokens. "
    "Cut each token's features into h blocks first, keeping the tokens where they are; only "
    "then move the head axis in front of the positions."
)
RESHAPE_WITHOUT_TRANSPOSE_FIX = "x.view(B, T, h, d_h).transpose(1, 2)"


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
        forbidden=(
            Route(
                "gptlib.model:CausalSelfAttention.split_heads",
                "gptlib's `CausalSelfAttention.split_heads`",
                "it is the split this exercise asks you to write.",
            ),
            Route(
                "gptlib.lessons.nb04.checks:heads_of",
                "the course's `heads_of`",
                "it is the split this exercise asks you to write.",
            ),
        ),
        make_inputs=_split_inputs,
        mistakes=(
            Mistake(
                "reshape-without-transpose",
                RESHAPE_WITHOUT_TRANSPOSE,
                _split_without_transpose,
                fix=RESHAPE_WITHOUT_TRANSPOSE_FIX,
            ),
            Mistake(
                "missing-transpose",
                "you split d into h blocks of d_h but left the tokens on axis 1: the result is "
                "[B, T, h, d_h]. Attention runs over the positions of each head separately, so "
                "it needs [B, h, T, d_h]: the head axis before the positions.",
                lambda x, h: x.view(x.shape[0], x.shape[1], h, x.shape[2] // h),
                fix="add .transpose(1, 2) after the view",
            ),
            Mistake(
                "interleaved-heads",
                "each head takes every h-th feature instead of a contiguous block of d_h "
                "features: you cut d as (d_h, h) rather than (h, d_h). The projection's "
                "output features are grouped head by head (as in PyTorch's MultiheadAttention), so "
                "the head index must come first when the feature axis is cut.",
                _split_interleaved,
                fix="x.view(B, T, h, d_h), head index first, then .transpose(1, 2)",
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


# --- Exercise 2: merge the heads ---------------------------------------------------------
# The inverse of the split, checked on its own: a module that merges inline, or not at all, would
# let a wrong merge_heads pass. The inputs are contiguous, as `weights @ v` makes them, so a
# `view` after the transpose raises as it does in the layer.

MERGE_WITHOUT_TRANSPOSE = (
    "you reshaped [B, h, T, d_h] straight into [B, T, d]: a reshape (or a view) reads the numbers "
    "in memory order, head after head, so each output row holds pieces of several tokens from one "
    "head. Bring the positions in front of the heads first, then join each position's blocks."
)
MERGE_WITHOUT_TRANSPOSE_FIX = "out.transpose(1, 2).reshape(B, T, d)"


def _merge_inputs(generator: torch.Generator) -> list[tuple]:
    return [
        (torch.randn(2, 3, 5, 4, generator=generator),),
        (torch.randn(1, 4, 6, 2, generator=generator),),
        (torch.randn(2, 2, 7, 3, generator=generator),),
    ]


register(
    Exercise(
        name="merge-heads",
        notebook="04_multi_head_attention",
        reference=_merge,
        forbidden=(
            Route(
                "gptlib.model:CausalSelfAttention.merge_heads",
                "gptlib's `CausalSelfAttention.merge_heads`",
                "it is the merge this exercise asks you to write.",
            ),
        ),
        make_inputs=_merge_inputs,
        mistakes=(
            Mistake(
                "merge-without-transpose",
                MERGE_WITHOUT_TRANSPOSE,
                _merge_without_transpose,
                fix=MERGE_WITHOUT_TRANSPOSE_FIX,
            ),
            Mistake(
                "view-not-contiguous",
                "view refused your merge: after moving the positions in front of the heads, the "
                "numbers no longer lie in memory in the order the new shape reads them (the "
                "tensor is not contiguous), and view can only relabel memory, never reorder it. "
                "The order of your axes was right; join them with an operation that copies when "
                "it has to.",
                _merge_by_view,
                fix="out.transpose(1, 2).reshape(B, T, d), or .contiguous() before the view",
            ),
            Mistake(
                "interleaved-heads",
                "each position's features come out interleaved: feature j of every head, then "
                "feature j + 1 of every head. Head 0's d_h features must come first, then head "
                "1's, as the split cut them: the head axis goes before the feature axis when "
                "they are joined.",
                _merge_interleaved,
                fix="out.transpose(1, 2) gives [B, T, h, d_h]; then reshape to [B, T, d]",
            ),
            Mistake(
                "heads-averaged",
                "you averaged the heads into one [B, T, d_h] result. Each head's output is a "
                "separate block of the result: the h blocks of d_h features are set side by "
                "side into d features, and the output projection mixes them afterwards.",
                _merge_heads_averaged,
                fix="concatenate the heads: out.transpose(1, 2).reshape(B, T, h * d_h)",
            ),
        ),
        hints=(
            "Merging undoes the split: position t of the result holds head 0's d_h features of "
            "position t, then head 1's, and so on. First put the positions in front of the "
            "heads, then join each position's h blocks into one row of d.",
            "Swap the head axis and the position axis, so that each position's h blocks of d_h "
            "features sit side by side, then join the last two axes into one of size h times "
            "d_h. After the swap the tensor is not contiguous: join with an operation that may "
            "copy.",
        ),
    )
)


# --- Exercise 3: the module ---------------------------------------------------------------
# The student writes a class `MultiHeadAttention(d_model, n_heads)` holding `qkv` and `proj`
# Linear layers, as gptlib's CausalSelfAttention does, using their split_heads and merge_heads.
# The check builds it, loads the state dict of a CausalSelfAttention with random weights into
# it, and compares the outputs.


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
        fix=RESHAPE_WITHOUT_TRANSPOSE_FIX,
    ),
    Mistake(
        "merge-without-transpose",
        "you merged the heads by reshaping [B, h, T, d_h] straight into [B, T, d]: "
        "each output row then holds pieces of several tokens from one head. Bring the "
        "positions in front of the heads first, then join each position's blocks.",
        _MergeWithoutTranspose,
        fix="out.transpose(1, 2).reshape(B, T, d)",
    ),
    Mistake(
        "scaled-by-sqrt-d",
        "you divided the scores by √d, the model width. Each head's dot product sums "
        "only d_h = d / h products, so for queries and keys with unit-variance entries "
        "its variance is d_h, not d.",
        _ScaledBySqrtD,
        fix="divide by math.sqrt(d // n_heads)",
    ),
    Mistake(
        "no-mask",
        "there is no causal mask: every position also attends to the positions after "
        "it, so it can read the token it is meant to predict. The keys later than each "
        "query must get no weight.",
        _NoMask,
        fix="scores.masked_fill(~allowed, float('-inf')) before the softmax, with allowed "
        "lower-triangular",
    ),
    Mistake(
        "mask-after-softmax",
        "you zeroed the future weights after the softmax, so each row no longer sums "
        "to 1: the future's share is thrown away instead of shared among the allowed "
        "keys. Block the future before the softmax, where minus infinity becomes a weight "
        "of exactly 0.",
        _MaskAfterSoftmax,
        fix="mask the scores with float('-inf') before the softmax",
    ),
    Mistake(
        "mask-filled-with-zero",
        "you filled the blocked scores with 0, but e^0 = 1: the future keys still get "
        "weight. A blocked score must be one whose exponential is 0.",
        _MaskFilledWithZero,
        fix="fill with float('-inf')",
    ),
    Mistake(
        "softmax-wrong-axis",
        "the softmax runs over the queries, down each column of the scores. Each query's "
        "weights over the keys must sum to 1: the softmax runs along each row, over the "
        "keys.",
        _SoftmaxOverQueries,
        fix="torch.softmax(scores, dim=-1)",
    ),
    Mistake(
        "no-output-projection",
        "you returned the merged heads without the output projection W_O, the layer that "
        "mixes the heads' results.",
        _NoOutputProjection,
        fix="return self.proj(merged)",
    ),
)


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


register(
    Exercise(
        name="attention-module",
        notebook="04_multi_head_attention",
        reference=CausalSelfAttention,
        forbidden=MULTI_HEAD_LAYER,
        make_inputs=module_inputs,
        adapt=run_module,
        mistakes=ATTENTION_MODULE_MISTAKES,
        hints=(
            "Two linear layers: one makes q, k and v at once (d → 3d), one mixes the heads' "
            "outputs (d → d). forward cuts the queries, keys and values apart, splits each into "
            "heads, attends causally in every head, merges the heads and projects.",
            "Scale the scores by one over the square root of a head's width d_h, not the "
            "model's width; give each key later than its query −∞ before the softmax over the "
            "keys. split_heads and merge_heads do the reshaping: merging undoes the split, so it "
            "puts the positions back in front of the heads before joining each position's "
            "blocks of d_h features.",
        ),
    )
)

# --- Exercise 4: which outputs a token moves ------------------------------------------------
# The student measures, on a real forward pass, which outputs of a function (a head split, an
# attention layer) move when one input token changes. Notebook 04 feeds it the queries of a
# d = 128 layer after either split, that layer with the right and the scrambled split, and (in
# an optional section) a fresh scrambled layer at T = 32: the inputs below include those shapes.


def _moved_by_token(fn: Callable, x: torch.Tensor, atol: float = 1e-6) -> torch.Tensor:
    T = x.shape[1]
    rows = []
    with torch.no_grad():
        before = fn(x)
        for s in range(T):
            nudged = x.clone()
            nudged[:, s] += 1.0
            rows.append((fn(nudged) - before).abs().amax(dim=(0, -1)) > atol)
    return torch.stack(rows)


def _nudges_add_up(fn: Callable, x: torch.Tensor, atol: float = 1e-6) -> torch.Tensor:
    rows = []
    with torch.no_grad():
        before = fn(x)
        for s in range(x.shape[1]):
            x[:, s] += 1.0
            rows.append((fn(x) - before).abs().amax(dim=(0, -1)) > atol)
    return torch.stack(rows)


def _one_feature(fn: Callable, x: torch.Tensor, atol: float = 1e-6) -> torch.Tensor:
    rows = []
    with torch.no_grad():
        before = fn(x)
        for s in range(x.shape[1]):
            nudged = x.clone()
            nudged[:, s, 0] += 1.0
            rows.append((fn(nudged) - before).abs().amax(dim=(0, -1)) > atol)
    return torch.stack(rows)


def _signed_change(fn: Callable, x: torch.Tensor, atol: float = 1e-6) -> torch.Tensor:
    rows = []
    with torch.no_grad():
        before = fn(x)
        for s in range(x.shape[1]):
            nudged = x.clone()
            nudged[:, s] += 1.0
            rows.append((fn(nudged) - before).amax(dim=(0, -1)) > atol)
    return torch.stack(rows)


def _tokens_last(fn: Callable, x: torch.Tensor, atol: float = 1e-6) -> torch.Tensor:
    return _moved_by_token(fn, x, atol).movedim(0, -1)


def _batch_kept(fn: Callable, x: torch.Tensor, atol: float = 1e-6) -> torch.Tensor:
    rows = []
    with torch.no_grad():
        before = fn(x)
        for s in range(x.shape[1]):
            nudged = x.clone()
            nudged[:, s] += 1.0
            rows.append((fn(nudged) - before).abs().amax(dim=-1) > atol)
    return torch.stack(rows)


def _values_kept(fn: Callable, x: torch.Tensor, atol: float = 1e-6) -> torch.Tensor:
    rows = []
    with torch.no_grad():
        before = fn(x)
        for s in range(x.shape[1]):
            nudged = x.clone()
            nudged[:, s] += 1.0
            rows.append((fn(nudged) - before).abs().amax(dim=0) > atol)
    return torch.stack(rows)


def _drawn(module: nn.Module, generator: torch.Generator) -> nn.Module:
    """`module` with every parameter drawn from `generator` (weights ~ N(0, 1/fan_in)), in
    evaluation mode: the same numbers on every run."""
    with torch.no_grad():
        for p in module.parameters():
            scale = p.shape[-1] ** -0.5 if p.dim() == 2 else 0.1
            p.copy_(torch.randn(p.shape, generator=generator) * scale)
    return module.eval()


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


def moved_inputs(generator: torch.Generator) -> list[tuple]:
    with torch.random.fork_rng():  # building the layers draws numbers: not from the notebook's
        attn128 = _drawn(CausalSelfAttention(128, 4), generator)
        attn16 = _drawn(CausalSelfAttention(16, 4), generator)
        attn64 = scramble_head_split(_drawn(CausalSelfAttention(64, 4), generator))
    wide = functools.partial(heads_scrambled, n_heads=4)
    return [
        (functools.partial(heads_of, n_heads=3), torch.randn(2, 5, 12, generator=generator)),
        (negative_running_total, torch.randn(2, 6, 3, generator=generator)),
        (Queries(attn128, wide), torch.randn(2, 8, 128, generator=generator)),
        (Queries(attn128, attn128.split_heads), torch.randn(2, 8, 128, generator=generator)),
        (attn16, torch.randn(2, 8, 16, generator=generator)),
        (attn64, torch.randn(1, 32, 64, generator=generator)),
    ]


register(
    Exercise(
        name="moved-by-token",
        notebook="04_multi_head_attention",
        reference=_moved_by_token,
        make_inputs=moved_inputs,
        atol=0.0,
        rtol=0.0,
        mistakes=(
            Mistake(
                "nudges-add-up",
                "each token's row also holds what the tokens before it moved: every change "
                "stayed in the input when the next token was changed, so the changes added up. "
                "Measure each token against the unchanged input, with only that token changed.",
                _nudges_add_up,
                fix="nudged = x.clone(); nudged[:, s] += 1.0; compare fn(nudged) with fn(x)",
            ),
            Mistake(
                "one-feature-nudged",
                "you changed a single feature of the token, so only the outputs that read that "
                "feature moved. A head split hands each token's features to several heads: "
                "change every feature of the token to find every output that holds a part of it.",
                _one_feature,
                fix="nudged[:, s] += 1.0 changes all d features of token s",
            ),
            Mistake(
                "signed-change",
                "an output that went down by more than atol did not count as moved: you "
                "compared the signed change with atol. Movement either way counts, so compare "
                "the size of the change.",
                _signed_change,
                fix="(fn(nudged) - before).abs() before taking the largest value",
            ),
            Mistake(
                "tokens-last",
                "the changed token is on the last axis of your result. The specification puts it "
                "first: row s says which outputs token s moves.",
                _tokens_last,
                fix="torch.stack(rows) stacks the rows along a new first axis (dim=0)",
            ),
            Mistake(
                "batch-axis-kept",
                "your result keeps the batch axis. An output counts as moved when it moves in "
                "any sequence of the batch, so the largest change over the batch decides.",
                _batch_kept,
                fix="take the largest change over dim 0 (the batch) and dim -1 (the values)",
            ),
            Mistake(
                "values-axis-kept",
                "your result keeps the last axis, the k values of each output slot. A slot "
                "counts as moved when any of its values moves, so the largest change over "
                "that axis decides.",
                _values_kept,
                fix="take the largest change over dim 0 (the batch) and dim -1 (the values)",
            ),
        ),
        hints=(
            "Measure it by experiment: run fn once on x as it is, then once for every token "
            "with only that token changed. Whatever moved between the two runs depends on "
            "that token.",
            "Change a copy, never x itself, so that each token is measured alone; change all "
            "of the token's features; an output slot moved when any of its values, in any "
            "sequence, moved by more than atol: reduce the batch axis and the last axis, and "
            "stack one row per token along a new first axis.",
        ),
    )
)

# --- Exercise 5: the later tokens each position reads ---------------------------------------


def _reads_ahead(moved: torch.Tensor) -> list[list[int]]:
    T = moved.shape[0]
    return [[s for s in range(t + 1, T) if moved[s, t]] for t in range(T)]


def _reads_backwards(moved: torch.Tensor) -> list[list[int]]:
    return _reads_ahead(moved.T)


def _own_token_included(moved: torch.Tensor) -> list[list[int]]:
    T = moved.shape[0]
    return [[s for s in range(t, T) if moved[s, t]] for t in range(T)]


def _every_token(moved: torch.Tensor) -> list[list[int]]:
    T = moved.shape[0]
    return [[s for s in range(T) if moved[s, t]] for t in range(T)]


def _next_token_skipped(moved: torch.Tensor) -> list[list[int]]:
    T = moved.shape[0]
    return [[s for s in range(t + 2, T) if moved[s, t]] for t in range(T)]


def reads_ahead_inputs(generator: torch.Generator) -> list[tuple]:
    def drawn(T: int, p: float) -> torch.Tensor:
        moved = torch.rand(T, T, generator=generator) < p
        return moved | torch.eye(T, dtype=torch.bool)  # every output reads its own token

    with torch.random.fork_rng():
        scrambled = scramble_head_split(_drawn(CausalSelfAttention(16, 4), generator))
    return [
        (drawn(6, 0.5),),
        (_moved_by_token(scrambled, torch.randn(2, 8, 16, generator=generator)),),
        (torch.ones(5, 5, dtype=torch.bool).tril().T,),  # a causal layer: nothing ahead
        (drawn(32, 0.3),),
    ]


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


register(
    Exercise(
        name="reads-ahead",
        notebook="04_multi_head_attention",
        reference=_reads_ahead,
        make_inputs=reads_ahead_inputs,
        adapt=read_as_lists,
        mistakes=(
            Mistake(
                "read-the-wrong-way",
                "you read the matrix the other way round: its rows are the changed tokens and "
                "its columns the outputs, so what output t reads is in column t.",
                _reads_backwards,
                fix="output t reads token s when moved[s, t] is True",
            ),
            Mistake(
                "own-token-included",
                "each list also holds t itself. Every position reads its own token, which "
                "attention is for; only the tokens after t are a leak.",
                _own_token_included,
                fix="let s run from t + 1 to T - 1",
            ),
            Mistake(
                "earlier-tokens-included",
                "your lists hold every token the output reads, earlier ones too. The question "
                "is which of them come after the position.",
                _every_token,
                fix="keep only s > t",
            ),
            Mistake(
                "next-token-skipped",
                "your lists never hold token t + 1, the one right after the position: the very "
                "token position t is trained to predict, and the leak that matters most.",
                _next_token_skipped,
                fix="let s start at t + 1, not t + 2",
            ),
        ),
        hints=(
            "Entry (s, t) of the measurement says whether changing token s moves output t: "
            "what output t reads is one column; keep only the tokens later than t.",
            "For each t from 0 to T − 1, collect in increasing order the s from t + 1 to T − 1 "
            "whose entry (s, t) is True; a position that reads no later token gets an empty "
            "list. Return a list of T lists of ints.",
        ),
    )
)
