"""Scaled dot-product attention, the causal mask and multi-head causal self-attention.

Introduced in notebooks 02 (attention), 03 (the causal mask) and 04 (multi-head attention).
Shapes use B batch, h heads, T sequence length, d model width, d_h = d / h per-head width.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from gptlib._validate import check_features


def causal_mask(
    T_q: int, T_k: int | None = None, device: torch.device | None = None
) -> torch.Tensor:
    """Boolean mask [T_q, T_k], True where query i may attend to key j (notebook 03).

    Queries are the last `T_q` of `T_k` positions (T_k defaults to T_q), so query i sits at
    absolute position i + T_k - T_q and may see keys j <= that position. With T_q == T_k this is
    the lower triangle; with a KV cache (T_q new tokens after T_k - T_q cached ones) the band
    shifts right. Same convention as `F.scaled_dot_product_attention`'s boolean `attn_mask`.
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
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q kᵀ / √d_k) v, written out; returns (output, weights) (notebook 02).

    q: [..., T_q, d_k], k: [..., T_k, d_k], v: [..., T_k, d_v]; mask: boolean, broadcastable to
    [..., T_q, T_k], True where attention is allowed (masked scores become -inf, so their
    weights are exactly 0). `scale=False` skips the division by √d_k, for the saturation demo.
    Returns output [..., T_q, d_v] and weights [..., T_q, T_k] whose rows sum to 1.
    """
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"queries and keys need the same last size d_k, got q {list(q.shape)} and "
            f"k {list(k.shape)}"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"keys and values need the same number of positions T_k, got k {list(k.shape)} "
            f"and v {list(v.shape)}"
        )
    scores = q @ k.transpose(-2, -1)  # [..., T_q, T_k]
    if scale:
        scores = scores / math.sqrt(q.shape[-1])
    if mask is not None:
        if mask.dtype != torch.bool:
            raise ValueError(
                f"mask must be boolean (True = may attend), got dtype {mask.dtype}; "
                "build it with gptlib.causal_mask(T)"
            )
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@dataclass
class KVCache:
    """Keys and values of one attention layer kept between generation steps (notebook 07).

    k, v: preallocated [B, h, max_len, d_h]; the first `length` positions are filled.
    """

    k: torch.Tensor
    v: torch.Tensor
    length: int = 0

    @classmethod
    def empty(
        cls, B: int, h: int, max_len: int, d_h: int, device: torch.device, dtype: torch.dtype
    ) -> KVCache:
        shape = (B, h, max_len, d_h)
        return cls(
            torch.empty(shape, device=device, dtype=dtype),
            torch.empty(shape, device=device, dtype=dtype),
        )

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store new k, v [B, h, T_new, d_h]; return all keys and values so far."""
        end = self.length + k.shape[-2]
        if end > self.k.shape[-2]:
            raise ValueError(
                f"KV cache overflow: {end} positions needed, room for {self.k.shape[-2]}"
            )
        self.k.narrow(2, self.length, k.shape[-2]).copy_(k)
        self.v.narrow(2, self.length, v.shape[-2]).copy_(v)
        self.length = end
        return self.k.narrow(2, 0, end), self.v.narrow(2, 0, end)


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with a fused qkv projection (notebook 04).

    x [B, T, d] → qkv [B, T, 3d] → q, k, v [B, h, T, d_h] → scores [B, h, T, T] → out [B, T, d].
    `impl="sdpa"` uses `F.scaled_dot_product_attention` (fused kernels); `impl="explicit"` uses
    the written-out softmax and can hand back the attention weights for plots. `causal=False`
    drops the mask so every position sees the whole sequence (notebook 03's pitfall).
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
        if n_heads < 1 or d_model % n_heads != 0:
            divisors = [h for h in range(1, d_model + 1) if d_model % h == 0]
            raise ValueError(
                f"d_model={d_model} is not divisible by n_heads={n_heads}: each head gets "
                f"d_model / n_heads features. Choose n_heads from {divisors}"
            )
        if impl not in ("sdpa", "explicit"):
            raise ValueError(f"impl must be 'sdpa' or 'explicit', got {impl!r}")
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        self.impl, self.causal = impl, causal
        self.dropout = dropout
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias)  # W_Q, W_K, W_V fused
        self.proj = nn.Linear(d_model, d_model, bias=bias)  # W_O
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

    def forward(
        self,
        x: torch.Tensor,
        cache: KVCache | None = None,
        return_weights: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x [B, T, d] → (y [B, T, d], weights [B, h, T, T_k] or None).

        With a `cache`, x holds only the new positions; their keys and values are appended and
        the queries attend to everything cached so far. `return_weights=True` takes the
        explicit path whatever `impl` says.
        """
        check_features(x, self.d_model)
        q, k, v = (self.split_heads(t) for t in self.qkv(x).split(self.d_model, dim=-1))
        if cache is not None:
            k, v = cache.append(k, v)
        T_q, T_k = q.shape[-2], k.shape[-2]
        dropout_p = self.dropout if self.training else 0.0
        weights = None
        if return_weights or self.impl == "explicit":
            mask = causal_mask(T_q, T_k, device=x.device) if self.causal else None
            out, weights = scaled_dot_product_attention(q, k, v, mask=mask)
            if dropout_p > 0:
                out = F.dropout(weights, dropout_p, training=True) @ v
        elif not self.causal:
            out = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p)
        elif T_q == T_k:
            out = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=True)
        elif T_q == 1:  # one new token sees every cached position: no mask needed
            out = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p)
        else:
            mask = causal_mask(T_q, T_k, device=x.device)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
        y = self.resid_dropout(self.proj(self.merge_heads(out)))
        return y, (weights if return_weights else None)
