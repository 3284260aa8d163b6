"""Scaled dot-product attention (notebook 02), the causal mask (03), multi-head attention (04).

Shapes: B batch, h heads, T positions (T_k keys), d model width, d_h = d / h per-head width.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from gptlib._validate import check_dropout, check_heads, check_positive_int


def causal_mask(
    T_q: int, *, T_k: int | None = None, device: torch.device | None = None
) -> torch.Tensor:
    """Boolean mask [T_q, T_k], True where query i may attend to key j (notebook 03).

    True means *allowed*, as in `F.scaled_dot_product_attention` (the chapter marks the blocked
    scores instead). The queries are the last T_q of T_k positions: the lower triangle when
    T_q == T_k, a band shifted right after T_k − T_q cached positions.
    """
    T_k = T_q if T_k is None else T_k
    return torch.ones(T_q, T_k, dtype=torch.bool, device=device).tril(diagonal=T_k - T_q)


def attention_with_weights(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    mask: torch.Tensor | None = None,
    scaled: bool = True,
    dropout_p: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q kᵀ / √d_k) v written out → (output [..., T_q, d_v], weights [..., T_q, T_k]).

    q [..., T_q, d_k], k [..., T_k, d_k], v [..., T_k, d_v] (notebook 02). Where the boolean
    mask is False the score becomes −∞ and the weight exactly 0. `scaled=False` skips the √d_k;
    `dropout_p` drops weights before they mix the values. torch's fused
    `F.scaled_dot_product_attention` computes the same output but never forms the weights.
    """
    scores = q @ k.transpose(-2, -1)  # [..., T_q, T_k]
    if scaled:
        scores = scores / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    mixing = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
    return mixing @ v, weights


@dataclass
class KVCache:
    """Keys and values of one attention layer, kept between generation steps (notebook 08).

    k, v: preallocated [B, h, max_len, d_h]; the first `filled` positions hold data.
    """

    k: torch.Tensor
    v: torch.Tensor
    filled: int = 0

    @classmethod
    def empty(cls, shape: tuple[int, ...], *, device: torch.device, dtype: torch.dtype) -> KVCache:
        """A cache with room for `shape` = [B, h, max_len, d_h], as in `torch.empty(shape)`."""
        k = torch.empty(shape, device=device, dtype=dtype)
        return cls(k, torch.empty_like(k))

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store new k, v [B, h, T_new, d_h]; return all keys and values so far [B, h, T_k, d_h]."""
        start, self.filled = self.filled, self.filled + k.shape[-2]
        self.k[:, :, start : self.filled] = k
        self.v[:, :, start : self.filled] = v
        return self.k[:, :, : self.filled], self.v[:, :, : self.filled]


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with a fused qkv projection (notebook 04).

    x [B, T, d] → qkv [B, T, 3d] → q, k, v [B, h, T, d_h] → attend → [B, h, T, d_h] → [B, T, d]
    → W_O. `attend` runs torch's fused kernel; the lesson wing's variants (written out, without
    the mask) override it (`gptlib.lessons.experiments.variants`).
    """

    def __init__(
        self, d_model: int, n_heads: int, *, bias: bool = True, dropout: float = 0.0
    ) -> None:
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("n_heads", n_heads)
        check_heads(d_model, n_heads)
        check_dropout(dropout)
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        self.dropout_p = dropout  # on the attention weights, while training
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias)  # W_Q, W_K, W_V fused
        self.proj = nn.Linear(d_model, d_model, bias=bias)  # W_O
        self.dropout = nn.Dropout(dropout)  # on the output

    def split_heads(self, t: torch.Tensor) -> torch.Tensor:
        """[B, T, d] → [B, h, T, d_h]: view the last axis as (h, d_h), then move heads forward."""
        B, T, _ = t.shape
        return t.view(B, T, self.n_heads, self.d_head).transpose(1, 2)

    @staticmethod
    def merge_heads(t: torch.Tensor) -> torch.Tensor:
        """[B, h, T, d_h] → [B, T, d]: the inverse of `split_heads`."""
        B, h, T, d_h = t.shape
        return t.transpose(1, 2).reshape(B, T, h * d_h)

    def forward(self, x: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """x [B, T, d] → y [B, T, d]; with a `cache`, x holds only the new positions."""
        q, k, v = (self.split_heads(t) for t in self.qkv(x).split(self.d_model, dim=-1))
        if cache is not None:
            k, v = cache.append(k, v)  # [B, h, T_k, d_h]: the cached positions, then these
        return self.dropout(self.proj(self.merge_heads(self.attend(q, k, v))))

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """q [B, h, T, d_h], k and v [B, h, T_k, d_h] → [B, h, T, d_h]: each query mixes the values
        of its own and earlier positions. The full triangle (T == T_k) is `is_causal=True`, the
        fast path (FlashAttention on CUDA); one new token reads every cached position; several
        after T_k − T cached ones read the shifted band of `causal_mask(T, T_k=T_k)`."""
        if q.dtype == torch.bfloat16 and q.device.type == "cpu":
            # The CPU's fused kernel differentiates about 5x slower in bfloat16 than in float32
            # (torch 2.13), more than mixed precision saves in the matrix products around it.
            with torch.autocast("cpu", enabled=False):
                return self.attend(q.float(), k.float(), v.float()).to(torch.bfloat16)
        T, T_k = q.shape[-2], k.shape[-2]
        p = self.dropout_p if self.training else 0.0
        if T == T_k:
            return F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        mask = None if T == 1 else causal_mask(T, T_k=T_k, device=q.device)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
