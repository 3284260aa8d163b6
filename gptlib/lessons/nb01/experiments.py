"""How distinct position vectors are: cosine similarities and wavelengths (notebook 01).

Feeds the positional-encoding explorer and the learned-vs-sinusoidal comparison.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from gptlib.lessons.shared.references import sinusoidal_positions


def cosine_similarity_matrix(table: torch.Tensor) -> torch.Tensor:
    """[T, d] position vectors → [T, T] cosine similarities (1 on the diagonal)."""
    if table.dim() != 2:
        raise ValueError(f"expected a table of position vectors [T, d], got {list(table.shape)}")
    unit = table / table.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return unit @ unit.T


def sinusoidal_wavelengths(d: int, base: float = 10000.0) -> torch.Tensor:
    """Wavelength, in positions, of each sin/cos column pair: 2π · base^(2i/d), i = 0..d/2-1."""
    if d < 2 or d % 2:
        raise ValueError(f"d must be even and >= 2, got {d}")
    return 2 * math.pi * base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)


@dataclass(frozen=True)
class PositionSummary:
    """Sinusoidal positions for (T, d, base) and how well they tell positions apart.

    table [T, d]; similarity [T, T]; wavelengths [d/2]. Every vector has the same norm and
    P_i · P_j = Σ_m cos(ω_m (i - j)), so similarity depends on the offset i - j only, and row 0
    says everything. neighbour_similarity is cosine(P_0, P_1); first_rival is the smallest
    offset t >= 2 whose cosine(P_0, P_t) is at least that high (a far position that looks as
    close as a neighbour: the encoding starts to alias), or None within the T positions.
    """

    T: int
    d: int
    base: float
    table: torch.Tensor
    similarity: torch.Tensor
    wavelengths: torch.Tensor
    neighbour_similarity: float
    first_rival: int | None

    def lines(self) -> list[str]:
        """The numbers as `name = value` lines (the explorer prints these; tests read them)."""
        return [
            f"shortest wavelength = {self.wavelengths[0].item():z.3f}",
            f"longest wavelength = {self.wavelengths[-1].item():z.1f}",
            f"neighbour similarity = {self.neighbour_similarity:z.3f}",
            f"first rival offset = {self.first_rival if self.first_rival else 'none'}",
        ]


def position_summary(T: int, d: int, base: float = 10000.0) -> PositionSummary:
    """Sinusoidal table, similarities and wavelengths for T positions of width d (notebook 01)."""
    if T < 2:
        raise ValueError(f"need at least T=2 positions to compare, got T={T}")
    table = sinusoidal_positions(T, d, base)
    similarity = cosine_similarity_matrix(table)
    neighbour = similarity[0, 1].item()
    # The small tolerance counts exact recurrences (d=2: P_t cycles) despite float32 rounding.
    rivals = (similarity[0, 2:] >= neighbour - 1e-6).nonzero().flatten()
    return PositionSummary(
        T=T,
        d=d,
        base=base,
        table=table,
        similarity=similarity,
        wavelengths=sinusoidal_wavelengths(d, base),
        neighbour_similarity=neighbour,
        first_rival=int(rivals[0]) + 2 if len(rivals) else None,
    )


def mean_abs_cosine(table: torch.Tensor, min_offset: int = 1) -> float:
    """Mean |cosine(P_i, P_j)| over every pair i < j with j - i >= min_offset, each pair once.

    table [T, d]. A pair-weighted mean: offset k contributes its T - k pairs, so the few pairs
    at the largest offsets weigh no more than their number, and the mean compares directly with
    the |cosine| of one pair of random vectors, about sqrt(2 / (π d)).
    """
    T = table.shape[0] if table.dim() == 2 else 0
    if not 1 <= min_offset < T:
        raise ValueError(
            f"min_offset must be between 1 and T - 1 for a table [T, d], got {min_offset} "
            f"for {list(table.shape)}"
        )
    i, j = torch.triu_indices(T, T, offset=min_offset)
    return cosine_similarity_matrix(table)[i, j].abs().mean().item()
