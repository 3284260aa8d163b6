"""Multi-head attention taken apart: every intermediate shape, the reshape pitfall planted in a
layer, the cost of h heads, and the same layer in `torch.nn.MultiheadAttention` (notebook 04).
Which outputs a token moves is the student's measurement (notebook 04, exercise 4).

Shapes: B batch, T positions, d model width, h heads, d_h = d / h.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from gptlib.lessons.shared.experiments.attention_maps import attention_maps
from gptlib.lessons.shared.experiments.variants import is_masked
from gptlib.model import GPT, CausalSelfAttention, attention_with_weights, causal_mask

SplitFn = Callable[[torch.Tensor], torch.Tensor]  # [B, T, d] → [B, h, T, d_h]
MergeFn = Callable[[torch.Tensor], torch.Tensor]  # [B, h, T, d_h] → [B, T, d]


@dataclass(frozen=True)
class Step:
    """One stage of the forward pass: its name, the code that makes it, its symbolic shape."""

    name: str
    code: str
    symbols: tuple[str, ...]
    tensor: torch.Tensor

    def shape_of_symbols(self, sizes: dict[str, int]) -> tuple[int, ...]:
        """The symbolic shape with numbers put in, e.g. (B, T, 3d) → (2, 8, 384)."""
        shape = []
        for symbol in self.symbols:
            factor, name = re.fullmatch(r"(\d*)(\w+)", symbol).groups()
            shape.append(int(factor or 1) * sizes[name])
        return tuple(shape)


def split_heads_without_transpose(t: torch.Tensor, n_heads: int) -> torch.Tensor:
    """The pitfall: `view(B, h, T, d_h)` on t [B, T, d]. Right shape, wrong contents.

    Both read the numbers of [B, T, d] in row order, so "head 0" receives the first T·d_h of
    them: all the features of the first T/h tokens, not the first d_h features of every
    token. Tokens and heads are scrambled together. Written with `reshape` because a slice of
    the fused qkv is not contiguous, where `view` raises instead; `view` on a contiguous
    tensor scrambles in exactly the same way.
    """
    B, T, d = t.shape
    return t.reshape(B, n_heads, T, d // n_heads)


def scramble_head_split(model: nn.Module) -> nn.Module:
    """Plant the pitfall in every `CausalSelfAttention` of `model` (or in `model` itself), in
    place, and return it.

    Each layer's `split_heads` becomes `split_heads_without_transpose`; weights, mask and
    merge stay as they were. Only a forward pass over several positions at once differs: a
    single new token ([B, 1, d]) splits the same either way, so generate without the KV cache.
    """
    for attn in model.modules():
        if isinstance(attn, CausalSelfAttention):
            attn.split_heads = functools.partial(
                split_heads_without_transpose, n_heads=attn.n_heads
            )
    return model


def multi_head_steps(
    attn: nn.Module,
    x: torch.Tensor,
    split: SplitFn | None = None,
    merge: MergeFn | None = None,
) -> list[Step]:
    """The forward pass of a fused-qkv attention layer on x [B, T, d], one named stage at a time.

    `attn` holds the layer's `qkv` (d → 3d) and `proj` (d → d): gptlib's `CausalSelfAttention`,
    or a student's module with the same two layers. `split` and `merge` replace its
    `split_heads` and `merge_heads` (a layer without them must be given both): a student's
    functions, or a wrong reshape. Between them the scores are scaled by 1/√d_h, causally masked
    (unless `attn` is an `UnmaskedAttention`) and put through the softmax. With gptlib's layer
    and its own split and merge, the last step's tensor equals `attn(x)`.
    """
    split = attn.split_heads if split is None else split
    merge = attn.merge_heads if merge is None else merge
    qkv = attn.qkv(x)
    q, k, v = (split(t) for t in qkv.split(x.shape[-1], dim=-1))
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if is_masked(attn):
        scores = scores.masked_fill(~causal_mask(x.shape[1], device=x.device), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    out = weights @ v
    merged = merge(out)
    y = attn.proj(merged)
    return [
        Step("input", "x", ("B", "T", "d"), x),
        Step("fused projection", "qkv = x @ W_qkv", ("B", "T", "3d"), qkv),
        Step("split into heads", "q = split_heads(q), same for k, v", ("B", "h", "T", "d_h"), q),
        Step("scores", "q @ k.transpose(-2, -1) / √d_h", ("B", "h", "T", "T"), scores),
        Step("mask + softmax", "softmax(masked scores)", ("B", "h", "T", "T"), weights),
        Step("weighted sum of values", "out = weights @ v", ("B", "h", "T", "d_h"), out),
        Step("merge heads", "out = merge_heads(out)", ("B", "T", "d"), merged),
        Step("output projection", "y = out @ W_O", ("B", "T", "d"), y),
    ]


def multi_head_by_loop(attn: CausalSelfAttention, x: torch.Tensor) -> torch.Tensor:
    """The same layer as h separate attentions, each with its own slice of W_Q, W_K, W_V.

    Head i uses rows i·d_h..(i+1)·d_h of each projection; the h outputs [B, T, d_h] are
    concatenated and projected by W_O. x [B, T, d] → [B, T, d], equal to `attn(x)`.
    """
    d, d_h = attn.d_model, attn.d_head
    W, b = attn.qkv.weight, attn.qkv.bias
    mask = causal_mask(x.shape[1], device=x.device) if is_masked(attn) else None
    heads = []
    for i in range(attn.n_heads):
        q, k, v = (
            x @ W[part * d + i * d_h : part * d + (i + 1) * d_h].T
            + (0 if b is None else b[part * d + i * d_h : part * d + (i + 1) * d_h])
            for part in range(3)
        )
        heads.append(attention_with_weights(q, k, v, mask=mask)[0])
    return attn.proj(torch.cat(heads, dim=-1))


def count_flops(fn: Callable[..., object], *args: object) -> int:
    """FLOPs of the matrix products in fn(*args), as counted by `torch.utils.flop_counter`."""
    with FlopCounterMode(display=False) as counter:
        fn(*args)
    return counter.get_total_flops()


def multi_head_flops(d_model: int, n_heads: int, T: int, B: int = 1) -> dict[str, int]:
    """Counted FLOPs of each stage of one attention layer's forward pass, plus score entries.

    Keys: "qkv projection" (6·B·T·d²), "scores" (2·B·T²·d), "weights @ v" (2·B·T²·d),
    "output projection" (2·B·T·d²), "total", and "score entries" (B·h·T², the softmax's
    element count, the one part that grows with h).
    """
    attn = CausalSelfAttention(d_model, n_heads)
    x = torch.zeros(B, T, d_model)
    with torch.no_grad():
        steps = {s.name: s.tensor for s in multi_head_steps(attn, x)}
        q = k = v = steps["split into heads"]
        weights, merged = steps["mask + softmax"], steps["merge heads"]
        counts = {
            "qkv projection": count_flops(attn.qkv, x),
            "scores": count_flops(lambda: q @ k.transpose(-2, -1)),
            "weights @ v": count_flops(lambda: weights @ v),
            "output projection": count_flops(attn.proj, merged),
        }
    counts["total"] = sum(counts.values())
    counts["score entries"] = weights.numel()
    return counts


@torch.no_grad()
def to_torch_multihead(attn: CausalSelfAttention) -> nn.MultiheadAttention:
    """A `torch.nn.MultiheadAttention` (batch_first) holding copies of attn's weights.

    Its `in_proj_weight` [3d, d] stacks W_Q, W_K, W_V exactly as our fused `qkv` does, and it
    splits heads into contiguous chunks of d_h features, as `split_heads` does. Call it with
    `attn_mask=~causal_mask(T)`: torch's boolean masks mark the positions to *block*.
    """
    bias = attn.qkv.bias is not None
    mha = nn.MultiheadAttention(attn.d_model, attn.n_heads, bias=bias, batch_first=True)
    mha.in_proj_weight.copy_(attn.qkv.weight)
    mha.out_proj.weight.copy_(attn.proj.weight)
    if bias:
        mha.in_proj_bias.copy_(attn.qkv.bias)
        mha.out_proj.bias.copy_(attn.proj.bias)
    return mha


@dataclass(frozen=True)
class HeadPatterns:
    """One attention layer's patterns [h, T, T] on one sequence, and its sizes."""

    n_heads: int
    d_head: int
    n_parameters: int
    weights: torch.Tensor

    def entropies(self) -> torch.Tensor:
        """Mean entropy (nats) of each head's attention rows, [h]: low = sharp, high = spread."""
        return torch.special.entr(self.weights).sum(-1).mean(-1)  # entr(w) = -w ln w, entr(0) = 0

    def previous_token_weights(self) -> torch.Tensor:
        """Mean weight each head puts from query t on key t-1 (queries 1..T-1), [h]."""
        return self.weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(-1)

    def title(self) -> str:
        """A figure title: the head count, their width and the layer's parameter count."""
        return (
            f"{self.n_heads} head(s) of width {self.d_head}: "
            f"{self.n_parameters:,} attention parameters"
        )

    def lines(self) -> list[str]:
        """The numbers as `name = value` lines, printed by the explorer, read by browser tests."""
        pairs = zip(self.entropies().tolist(), self.previous_token_weights().tolist(), strict=True)
        head_lines = []
        for i, (entropy, previous) in enumerate(pairs):
            head_lines += [
                f"head {i} mean entropy = {entropy:z.3f}",
                f"head {i} weight on previous token = {previous:z.3f}",
            ]
        return [
            f"n_heads = {self.n_heads}",
            f"d_head = {self.d_head}",
            f"parameters = {self.n_parameters:,}",
            *head_lines,
        ]


@torch.no_grad()
def head_patterns(model: GPT, idx: torch.Tensor, layer: int = 0) -> HeadPatterns:
    """Every head's attention weights in one layer of `model` on one sequence idx [1, T]."""
    if idx.dim() != 2 or idx.shape[0] != 1:
        raise ValueError(f"idx must be one sequence [1, T], got shape {list(idx.shape)}")
    n_layers = len(model.blocks)
    if not 0 <= layer < n_layers:
        raise ValueError(f"layer must be in 0..{n_layers - 1}, got {layer}")
    attn = model.blocks[layer].attn
    weights = attention_maps(model, idx)[layer, 0]  # [h, T, T]
    n_parameters = sum(p.numel() for p in attn.parameters())
    return HeadPatterns(attn.n_heads, attn.d_head, n_parameters, weights)
