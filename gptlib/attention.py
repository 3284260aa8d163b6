"""Scaled dot-product attention, the causal mask and multi-head causal self-attention.

Introduced in notebooks 02 (attention), 03 (the causal mask) and 04 (multi-head attention).
Shapes: B batch, h heads, T positions, d model width, d_h = d / h per-head width.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from gptlib._validate import check_choice, check_features, check_heads

ATTENTION_IMPLS = ("sdpa", "explicit")


def causal_mask(
    T_q: int, T_k: int | None = None, device: torch.device | None = None
) -> torch.Tensor:
    """Boolean mask [T_q, T_k], True where query i may attend to key j (notebook 03).

    True means *allowed*, as in `F.scaled_dot_product_attention`'s boolean `attn_mask` (the
    chapter's picture marks the other triangle, the blocked scores, with −∞). Queries are the
    last T_q of T_k positions (T_k defaults to T_q): query i sits at position i + T_k − T_q and
    sees keys j up to there. With T_q == T_k this is the lower triangle; with a KV cache
    (T_q new tokens after T_k − T_q cached ones) the band shifts right.
    """
    T_k = T_q if T_k is None else T_k
    if T_q < 1 or T_k < T_q:
        raise ValueError(f"causal_mask needs 1 <= T_q <= T_k, got T_q={T_q}, T_k={T_k}")
    return torch.ones(T_q, T_k, dtype=torch.bool, device=device).tril(diagonal=T_k - T_q)


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    scale: bool = True,
    dropout_p: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q kᵀ / √d_k) v, written out; returns (output, weights) (notebook 02).

    q [..., T_q, d_k], k [..., T_k, d_k], v [..., T_k, d_v]; mask: boolean, broadcastable to
    [..., T_q, T_k], True where attention is allowed (the other scores become −∞, so their
    weights are exactly 0). `scale=False` skips the division by √d_k (notebook 02's saturation
    demo); `dropout_p` drops weights before they mix the values (training only).
    Returns output [..., T_q, d_v] and the weights [..., T_q, T_k], whose rows sum to 1.
    """
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"need q [..., T_q, d_k], k [..., T_k, d_k] and v [..., T_k, d_v], got q "
            f"{list(q.shape)}, k {list(k.shape)}, v {list(v.shape)}"
        )
    if mask is not None and mask.dtype != torch.bool:
        raise ValueError(
            f"mask must be boolean (True = may attend), got dtype {mask.dtype}; "
            "build it with gptlib.causal_mask(T)"
        )
    scores = q @ k.transpose(-2, -1)  # [..., T_q, T_k]
    if scale:
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
    def empty(
        cls, B: int, h: int, max_len: int, d_h: int, device: torch.device, dtype: torch.dtype
    ) -> KVCache:
        k = torch.empty(B, h, max_len, d_h, device=device, dtype=dtype)
        return cls(k, torch.empty_like(k))

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store new k, v [B, h, T_new, d_h]; return all keys and values so far [B, h, T_k, d_h]."""
        T_new, end = k.shape[-2], self.filled + k.shape[-2]
        if end > self.k.shape[-2]:
            raise ValueError(
                f"KV cache overflow: {end} positions needed, room for {self.k.shape[-2]}"
            )
        self.k.narrow(2, self.filled, T_new).copy_(k)
        self.v.narrow(2, self.filled, T_new).copy_(v)
        self.filled = end
        return self.k.narrow(2, 0, end), self.v.narrow(2, 0, end)


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with a fused qkv projection (notebook 04).

    x [B, T, d] → qkv [B, T, 3d] → q, k, v [B, h, T, d_h] → weights [B, h, T, T] →
    out [B, h, T, d_h] → merged [B, T, d] → y = merged W_O [B, T, d].
    Two paths compute the same numbers: `impl="sdpa"` calls PyTorch's fused
    `F.scaled_dot_product_attention`; `impl="explicit"` runs the softmax written out and passes
    the weights through `self.weights`, an identity that forward hooks can read
    (`gptlib.hooks.attention_weights`). `causal=False` drops the mask (notebook 03's pitfall).
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        bias: bool = True,
        dropout: float = 0.0,
        impl: str = "sdpa",
        causal: bool = True,
    ) -> None:
        super().__init__()
        check_heads(d_model, n_heads)
        check_choice("impl", impl, ATTENTION_IMPLS)
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        self.impl, self.causal, self.dropout = impl, causal, dropout
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias)  # W_Q, W_K, W_V fused
        self.proj = nn.Linear(d_model, d_model, bias=bias)  # W_O
        self.weights = nn.Identity()  # a hook point for the explicit path's weights
        self.resid_dropout = nn.Dropout(dropout)

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
        """x [B, T, d] → y [B, T, d].

        With a `cache` (generation), x holds only the new positions: their keys and values are
        appended, and the queries attend to every cached position.
        """
        check_features(x, self.d_model)
        q, k, v = (self.split_heads(t) for t in self.qkv(x).split(self.d_model, dim=-1))
        if cache is not None:
            k, v = cache.append(k, v)  # [B, h, T_k, d_h]: the cached positions, then these
        T, T_k = q.shape[-2], k.shape[-2]
        # One new token may see every cached position: it needs no mask.
        mask = causal_mask(T, T_k, x.device) if self.causal and T > 1 else None
        dropout = self.dropout if self.training else 0.0
        if self.impl == "explicit":
            out, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p=dropout)
            self.weights(weights)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout)
        return self.resid_dropout(self.proj(self.merge_heads(out)))
