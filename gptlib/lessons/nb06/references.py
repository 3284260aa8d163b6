"""Notebook 06's exercise reference that the notebook itself runs after the check (so a graded
release, which leaves out `checks.py`, keeps it): LayerNorm written out."""

from __future__ import annotations

import torch


def layer_norm(
    x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None, eps: float = 1e-5
) -> torch.Tensor:
    """LayerNorm written out over the last axis, γ ⊙ (x − μ) / √(σ² + ε) + β (notebook 06), with
    the biased variance and ε inside the root, as `nn.LayerNorm` (which the model uses, one
    fused pass). x [..., d]; γ and β [d] or None."""
    mean = x.mean(dim=-1, keepdim=True)
    var = (x - mean).pow(2).mean(dim=-1, keepdim=True)
    y = (x - mean) / torch.sqrt(var + eps)
    y = y if weight is None else y * weight
    return y if bias is None else y + bias
