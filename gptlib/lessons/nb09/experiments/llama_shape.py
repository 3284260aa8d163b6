"""A decoder with Llama's parameter tensors, built to be counted (notebook 09).

idx [B, T] → embed_tokens → L × (RMSNorm → attention, RMSNorm → SwiGLU) → RMSNorm → lm_head
→ logits [B, T, V]. No biases anywhere, untied embeddings, three d × d_ff matrices per FFN.
Parameter names follow the Hugging Face Llama layout (q_proj, gate_proj, input_layernorm, …).

Llama 3 gives keys and values fewer heads than queries (grouped-query attention, chapter 1.4):
`n_kv_heads` key/value heads, each shared by n_heads / n_kv_heads query heads, so W_K and W_V
are d × (n_kv_heads·d_h). Llama rotates queries and keys with RoPE (chapter 1.4). RoPE has no
parameters and does no matrix multiplications, so it is left out: this module exists to have
its parameters and matmul FLOPs counted. Build a 7B or 405B shape on `torch.device("meta")` to
count it without allocating.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from gptlib.model import attention_with_weights, causal_mask
from gptlib.validation import check_positive_int, check_token_ids


class RMSNorm(nn.Module):
    """x / √(mean(x²) + ε) ⊙ γ over the last axis: LayerNorm without centring or β.

    Holds d weights and no bias. [..., d] → [..., d].
    """

    def __init__(self, d_model: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


class SwiGLU(nn.Module):
    """Gated FFN down(silu(gate(x)) ⊙ up(x)): three d × d_ff matrices, no biases.

    [B, T, d] → [B, T, d_ff] (twice) → [B, T, d].
    """

    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaAttention(nn.Module):
    """Causal attention with separate W_Q, W_K, W_V, W_O and no biases: 4d² weights, or
    2d² + 2·d·(n_kv_heads·d_h) with fewer key/value heads.

    x [B, T, d] → q [B, h, T, d_h], k, v [B, n_kv_heads, T, d_h], each key/value head repeated
    for its group of h / n_kv_heads query heads → written-out causal softmax → [B, T, d].
    """

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int | None = None) -> None:
        super().__init__()
        n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        if n_heads < 1 or d_model % n_heads:
            raise ValueError(
                f"d_model={d_model} is not divisible by n_heads={n_heads}; pick n_heads so "
                "that each head gets d_model / n_heads features"
            )
        if n_kv_heads < 1 or n_heads % n_kv_heads:
            raise ValueError(
                f"n_kv_heads={n_kv_heads} does not divide n_heads={n_heads}; each key/value "
                "head must serve a whole group of query heads"
            )
        self.n_heads, self.n_kv_heads, self.head_size = n_heads, n_kv_heads, d_model // n_heads
        kv_width = n_kv_heads * self.head_size
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, kv_width, bias=False)
        self.v_proj = nn.Linear(d_model, kv_width, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, d = x.shape
        q = self.q_proj(x).view(B, T, self.n_heads, self.head_size).transpose(1, 2)
        group = self.n_heads // self.n_kv_heads
        k, v = (
            proj(x)
            .view(B, T, self.n_kv_heads, self.head_size)
            .transpose(1, 2)
            .repeat_interleave(group, dim=1)  # [B, h, T, d_h]: one copy per query head
            for proj in (self.k_proj, self.v_proj)
        )
        out, _ = attention_with_weights(q, k, v, mask=causal_mask(T, device=x.device))
        return self.o_proj(out.transpose(1, 2).reshape(B, T, d))


class LlamaBlock(nn.Module):
    """Pre-norm block: x + attn(RMSNorm(x)), then x + SwiGLU(RMSNorm(x)). [B, T, d] → [B, T, d]."""

    def __init__(
        self, d_model: int, n_heads: int, d_ff: int, n_kv_heads: int | None = None
    ) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(d_model)
        self.self_attn = LlamaAttention(d_model, n_heads, n_kv_heads)
        self.post_attention_layernorm = RMSNorm(d_model)
        self.mlp = SwiGLU(d_model, d_ff)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaShaped(nn.Module):
    """A Llama-style decoder (notebook 09): `LlamaShaped(32, 4096, 32, 32_000, 11_008)` has
    exactly Llama 2 7B's 6,738,415,616 parameters; `n_kv_heads` < n_heads gives grouped-query
    attention (Llama 3).

    forward(idx [B, T]) → logits [B, T, V].
    """

    def __init__(
        self,
        n_layers: int,
        d_model: int,
        n_heads: int,
        vocab_size: int,
        d_ff: int,
        n_kv_heads: int | None = None,
    ) -> None:
        super().__init__()
        for name, value in (
            ("n_layers", n_layers),
            ("d_model", d_model),
            ("n_heads", n_heads),
            ("vocab_size", vocab_size),
            ("d_ff", d_ff),
            ("n_kv_heads", n_heads if n_kv_heads is None else n_kv_heads),
        ):
            check_positive_int(name, value)
        self.vocab_size = vocab_size
        self.embed_tokens = nn.Embedding(vocab_size, d_model)
        self.layers = nn.ModuleList(
            LlamaBlock(d_model, n_heads, d_ff, n_kv_heads) for _ in range(n_layers)
        )
        self.norm = RMSNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        check_token_ids(idx, self.vocab_size)
        x = self.embed_tokens(idx)  # [B, T, d]
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x))
