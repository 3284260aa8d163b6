"""Position vectors written by formula: the original Transformer's sinusoids (notebook 01).

gptlib's GPT, like the chapter's and GPT-2, learns its positions instead: `GPT.pos_emb` is an
`nn.Embedding(max_len, d)` whose rows 0..T-1 are added to the token vectors [B, T, d].
"""

from __future__ import annotations

import math

import torch


def sinusoidal_positions(T: int, d: int, base: float = 10000.0) -> torch.Tensor:
    """The original Transformer's fixed position vectors, [T, d] (notebook 01).

    Column pair (2i, 2i+1) holds sin and cos of pos / base^(2i/d): low columns turn fast,
    high columns slowly, so every position gets a distinct pattern. An odd d ends on a sine.
    """
    pos = torch.arange(T, dtype=torch.float32)[:, None]  # [T, 1]
    inv_freq = torch.exp(-math.log(base) * torch.arange(0, d, 2, dtype=torch.float32) / d)
    angles = pos * inv_freq  # [T, ⌈d/2⌉]
    out = torch.empty(T, d)
    out[:, 0::2] = torch.sin(angles)
    out[:, 1::2] = torch.cos(angles[:, : d // 2])
    return out
