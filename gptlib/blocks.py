"""The pieces of a Transformer block: the MLP (notebook 05), LayerNorm written out and the Pre-LN
Block (notebook 06). All take and return [B, T, d].
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from gptlib._validate import check_choice, check_dropout, check_positive_int
from gptlib.attention import CausalSelfAttention, KVCache

GELUS = ("exact", "tanh")  # the MLP's GELU: x·Φ(x) with erf (05), or GPT-2's approximation (08)


class MLP(nn.Module):
    """Position-wise feed-forward network d → d_ff = 4d → d with GELU (notebook 05).

    Holds 8d² weights (+ 5d biases): twice the 4d² of attention. [B, T, d] → [B, T, d].
    `gelu` is one of `GELUS`: "exact" (the chapter's `F.gelu`) or "tanh", GPT-2's
    0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), at most 4.7e-4 from it (near x = ±2.7).
    """

    def __init__(
        self,
        d_model: int,
        *,
        d_ff: int | None = None,
        bias: bool = True,
        dropout: float = 0.0,
        gelu: str = "exact",
    ) -> None:
        super().__init__()
        check_choice("gelu", gelu, GELUS)
        d_ff = 4 * d_model if d_ff is None else d_ff
        check_positive_int("d_model", d_model)
        check_positive_int("d_ff", d_ff)
        check_dropout(dropout)
        self.up = nn.Linear(d_model, d_ff, bias=bias)
        self.down = nn.Linear(d_ff, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)
        self.approximate = "none" if gelu == "exact" else "tanh"  # F.gelu's name for each

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.down(F.gelu(self.up(x), approximate=self.approximate)))


def layer_norm(
    x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None, eps: float = 1e-5
) -> torch.Tensor:
    """LayerNorm written out over the last axis: γ ⊙ (x − μ) / √(σ² + ε) + β (notebook 06).

    σ² is the biased variance (divide by d, not d − 1), and ε sits inside the square root, as in
    `nn.LayerNorm`, which the model uses (one fused pass). x: [..., d]; γ and β: [d] or None.
    """
    mean = x.mean(dim=-1, keepdim=True)
    var = (x - mean).pow(2).mean(dim=-1, keepdim=True)
    y = (x - mean) / torch.sqrt(var + eps)
    y = y if weight is None else y * weight
    return y if bias is None else y + bias


class Block(nn.Module):
    """One Pre-LN Transformer block, as in GPT-2 (notebook 06): x ← x + attn(ln1(x)), then
    x ← x + mlp(ln2(x)), so the residual path is a clean sum. [B, T, d] → [B, T, d].

    Post-LN and blocks without residuals are lessons, built by
    `gptlib.lessons.experiments.variants`.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        *,
        bias: bool = True,
        dropout: float = 0.0,
        gelu: str = "exact",
    ) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model, bias=bias)
        self.attn = CausalSelfAttention(d_model, n_heads, bias=bias, dropout=dropout)
        self.ln2 = nn.LayerNorm(d_model, bias=bias)
        self.mlp = MLP(d_model, bias=bias, dropout=dropout, gelu=gelu)  # gelu: one of GELUS

    def forward(self, x: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """x [B, T, d] → [B, T, d]; `cache` as in `CausalSelfAttention.forward`."""
        x = x + self.attn(self.ln1(x), cache)  # tokens exchange information
        return x + self.mlp(self.ln2(x))  # each token computes on its own
