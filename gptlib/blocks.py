"""The pieces of a Transformer block: MLP, LayerNorm and the residual Block (notebooks 05, 06).

All take and return [B, T, d].
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from gptlib._validate import check_choice
from gptlib.attention import CausalSelfAttention, KVCache

NORM_PLACEMENTS = ("pre", "post")


class MLP(nn.Module):
    """Position-wise feed-forward network d → 4d → d with GELU (notebook 05).

    Holds 8d² weights (+ 5d biases): twice the 4d² of attention. [B, T, d] → [B, T, d].
    """

    def __init__(
        self, d_model: int, hidden: int | None = None, bias: bool = True, dropout: float = 0.0
    ) -> None:
        super().__init__()
        hidden = 4 * d_model if hidden is None else hidden
        self.up = nn.Linear(d_model, hidden, bias=bias)
        self.down = nn.Linear(hidden, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.down(F.gelu(self.up(x))))


def layer_norm(
    x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None, eps: float = 1e-5
) -> torch.Tensor:
    """LayerNorm written out over the last axis: γ ⊙ (x − μ) / √(σ² + ε) + β (notebook 06).

    σ² is the biased variance (divide by d, not d − 1), and ε sits inside the square root, as in
    `nn.LayerNorm`. x: [..., d]; weight γ and bias β: [d] or None.
    """
    mean = x.mean(dim=-1, keepdim=True)
    var = (x - mean).pow(2).mean(dim=-1, keepdim=True)
    y = (x - mean) / torch.sqrt(var + eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


class LayerNorm(nn.Module):
    """`layer_norm` with learned γ (`weight`) and β (`bias`), [..., d] → [..., d] (notebook 06).

    Runs torch's fused kernel (one pass, not six); names match `nn.LayerNorm`'s state dict.
    """

    def __init__(self, d_model: int, eps: float = 1e-5, bias: bool = True) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps)


class Block(nn.Module):
    """One Transformer block: attention then MLP, each inside a residual connection (notebook 06).

    norm="pre" (GPT-2 onward): x ← x + F(LN(x)); the residual path is a clean sum.
    norm="post" (the original Transformer): x ← LN(x + F(x)).
    `residual=False` drops the skips (x ← F(LN(x))) for notebook 05's gradient experiment;
    `causal=False` removes the attention mask (notebook 03's pitfall). [B, T, d] → [B, T, d].
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        norm: str = "pre",
        bias: bool = True,
        dropout: float = 0.0,
        attn_impl: str = "sdpa",
        residual: bool = True,
        causal: bool = True,
    ) -> None:
        super().__init__()
        check_choice("norm", norm, NORM_PLACEMENTS)
        self.norm, self.residual = norm, residual
        self.ln1 = LayerNorm(d_model, bias=bias)
        self.attn = CausalSelfAttention(d_model, n_heads, bias, dropout, attn_impl, causal)
        self.ln2 = LayerNorm(d_model, bias=bias)
        self.mlp = MLP(d_model, bias=bias, dropout=dropout)

    def forward(self, x: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """x [B, T, d] → [B, T, d]; `cache` as in `CausalSelfAttention.forward`."""
        if self.norm == "pre":
            x = self._add(x, self.attn(self.ln1(x), cache))  # tokens exchange information
            return self._add(x, self.mlp(self.ln2(x)))  # each token computes on its own
        x = self.ln1(self._add(x, self.attn(x, cache)))
        return self.ln2(self._add(x, self.mlp(x)))

    def _add(self, x: torch.Tensor, update: torch.Tensor) -> torch.Tensor:
        return x + update if self.residual else update
