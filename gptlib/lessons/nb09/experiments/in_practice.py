"""The chapter's "in practice" list, computed where a count can show it (notebook 09): the
parameters that QKV biases add, rotary positions (RoPE), RMSNorm against LayerNorm, and a
mixture-of-experts FFN's total against its active parameters."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gptlib.lessons.nb09.experiments.llama_shape import LlamaBlock
from gptlib.validation import check_positive_int


def qkv_bias_parameters(n_layers: int, d_model: int, n_heads: int, n_kv_heads: int) -> int:
    """What biases on W_Q, W_K and W_V (Qwen2 keeps them) add to a decoder: a bias per output
    feature of the three projections in every layer, L·(d + 2·n_kv_heads·d_h)."""
    kv_width = n_kv_heads * (d_model // n_heads)
    return n_layers * (d_model + 2 * kv_width)


def rotate(x: torch.Tensor, positions: torch.Tensor, base: float = 10_000.0) -> torch.Tensor:
    """Rotary position embedding (RoPE, Su et al. 2021) of x [..., T, d_h] at `positions` [T].

    Feature pairs (2i, 2i + 1) turn by the angle position·θ_i, θ_i = base^(−2i/d_h): no
    parameters. A query and a key rotated this way have a dot product that depends on their
    positions only through the offset between them.
    """
    d_head = x.shape[-1]
    if d_head % 2:
        raise ValueError(f"RoPE turns pairs of features: d_h={d_head} must be even")
    if positions.shape != x.shape[-2:-1]:
        raise ValueError(
            f"positions {list(positions.shape)} must give one position per row of x, "
            f"{list(x.shape[-2:-1])}"
        )
    theta = base ** (-torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)  # [d_h / 2]
    angles = positions.to(torch.float64)[:, None] * theta  # [T, d_h / 2]
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


@dataclass(frozen=True)
class ExpertCount:
    """A decoder whose FFN is a mixture of experts: all its parameters, and those one token
    uses (the shared attention, norms, router and embeddings, and top_k of the experts)."""

    total: int
    active: int


def mixture_of_experts_parameters(
    n_layers: int,
    d_model: int,
    n_heads: int,
    n_kv_heads: int,
    d_ff: int,
    vocab_size: int,
    n_experts: int,
    top_k: int,
) -> ExpertCount:
    """A Llama-shaped decoder (untied embeddings, RMSNorms, no biases) whose SwiGLU FFN is
    replaced by `n_experts` SwiGLU experts of width d_ff and a router (d → n_experts, no bias)
    that sends each token to `top_k` of them. The block and one expert are counted on modules
    built on the meta device."""
    for name, value in (("n_experts", n_experts), ("top_k", top_k)):
        check_positive_int(name, value)
    if top_k > n_experts:
        raise ValueError(f"top_k={top_k} experts per token, but there are only {n_experts}")
    with torch.device("meta"):
        block = LlamaBlock(d_model, n_heads, d_ff, n_kv_heads)
    expert = sum(p.numel() for p in block.mlp.parameters())
    shared = sum(p.numel() for p in block.parameters()) - expert  # attention and the two norms
    router = d_model * n_experts
    outside = 2 * vocab_size * d_model + d_model  # embeddings, output layer, final norm
    return ExpertCount(
        total=n_layers * (shared + router + n_experts * expert) + outside,
        active=n_layers * (shared + router + top_k * expert) + outside,
    )
