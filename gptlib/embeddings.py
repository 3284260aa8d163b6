"""Token embeddings and position information (notebook 01).

ids [B, T] → token vectors [B, T, d]; positions add [T, d] (learned or sinusoidal) or nothing.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from gptlib._validate import check_choice, check_sinusoid, check_window

POSITION_KINDS = ("learned", "sinusoidal", "none")


def sinusoidal_positions(T: int, d: int, base: float = 10000.0) -> torch.Tensor:
    """The original Transformer's fixed position vectors, [T, d] (notebook 01).

    Column pair (2i, 2i+1) holds sin and cos of pos / base^(2i/d): low columns turn fast,
    high columns slowly, so every position gets a distinct pattern.
    """
    check_sinusoid(T, d, base)
    pos = torch.arange(T, dtype=torch.float32)[:, None]  # [T, 1]
    inv_freq = torch.exp(-math.log(base) * torch.arange(0, d, 2, dtype=torch.float32) / d)
    angles = pos * inv_freq  # [T, d/2]
    out = torch.empty(T, d)
    out[:, 0::2] = torch.sin(angles)
    out[:, 1::2] = torch.cos(angles)
    return out


class PositionalEmbedding(nn.Module):
    """Position vectors P[0:T], [T, d], of kind "learned", "sinusoidal" or "none" (notebook 01).

    "learned" is GPT-2's trainable table P ∈ R^{max_len × d}; "sinusoidal" is a fixed buffer;
    "none" returns zeros, leaving the model only the causal mask as a hint of order.
    """

    def __init__(self, kind: str, max_len: int, d_model: int) -> None:
        super().__init__()
        check_choice("positions", kind, POSITION_KINDS)
        self.kind, self.max_len, self.d_model = kind, max_len, d_model
        if kind == "learned":
            self.table = nn.Embedding(max_len, d_model)
        elif kind == "sinusoidal":
            self.register_buffer(
                "table_values", sinusoidal_positions(max_len, d_model), persistent=False
            )

    def forward(self, start: int, T: int, device: torch.device) -> torch.Tensor:
        """Vectors for positions start..start+T-1, [T, d]."""
        check_window(start, T, self.max_len)
        if self.kind == "learned":
            return self.table(torch.arange(start, start + T, device=device))
        if self.kind == "sinusoidal":
            return self.table_values[start : start + T]
        return torch.zeros(T, self.d_model, device=device)
