"""Why attention divides by √d_k: score spread, softmax saturation and the vanishing gradient.

Used by notebook 02 (the variance table, the saturation curves and the d_k explorer). Queries and
keys are drawn with independent N(0, 1) components, as the chapter assumes at initialisation, so
an unscaled score q·k has variance d_k.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import torch

WIDEST_DRAW = 1024  # components drawn once per seed; d_k <= this uses a prefix of them


@dataclass(frozen=True)
class Saturation:
    """What one (d_k, scaled) setting does to the softmax.

    scores: [n_queries, n_keys], the logits that enter the softmax (q·k, divided by √d_k when
    `scaled`); weights: [n_keys], the softmax of the first query's row (the one the explorer
    plots). score_std is the Monte-Carlo std of all scores; max_weight, entropy (nats) and
    grad_norm are means over the queries. grad_norm is ‖∂L/∂z‖ for the softmax's input z and
    L = Σ_j softmax(z)_j g_j with seeded N(0, 1) upstream gradients g: how much signal a
    learning step would get through the softmax.
    """

    d_k: int
    scaled: bool
    scores: torch.Tensor
    weights: torch.Tensor
    score_std: float
    max_weight: float
    entropy: float
    grad_norm: float

    def lines(self) -> list[str]:
        """The numbers as `name = value` lines (the explorer prints these; tests read them)."""
        return [
            f"d_k = {self.d_k}",
            f"scaled = {self.scaled}",
            f"score std = {self.score_std:.3f}",
            f"sqrt(d_k) = {math.sqrt(self.d_k):.3f}",
            f"max weight = {self.max_weight:.3f}",
            f"entropy = {self.entropy:.3f}",
            f"grad norm = {self.grad_norm:.3f}",
        ]


def saturation(
    d_k: int, scaled: bool, seed: int = 0, n_queries: int = 256, n_keys: int = 16
) -> Saturation:
    """Score sample, one query's weights, and the saturation measures for width d_k (notebook 02).

    q [n_queries, d_k] and k [n_queries, n_keys, d_k] have independent N(0, 1) components: the
    first d_k of one seeded draw of width 1024, so moving d_k adds or removes components of the
    same vectors and the explorer changes smoothly. Every query is scored against its own n_keys
    keys and the softmax of each row is measured. A uniform row has entropy ln(n_keys); a
    one-hot row has entropy 0, max weight 1 and zero gradient.
    """
    if not isinstance(d_k, int) or d_k < 1:
        raise ValueError(f"d_k must be a positive integer, got {d_k!r}")
    if n_queries < 2 or n_keys < 2:
        raise ValueError(
            f"need n_queries >= 2 and n_keys >= 2 to measure a spread, got "
            f"n_queries={n_queries}, n_keys={n_keys}"
        )
    q, k, upstream = _draw(seed, n_queries, n_keys, max(d_k, WIDEST_DRAW))
    # [n_queries, n_keys, d_k] @ [n_queries, d_k, 1]: every query against its own keys
    scores = (k[..., :d_k] @ q[..., :d_k].transpose(1, 2)).squeeze(-1)  # [n_queries, n_keys]
    if scaled:
        scores = scores / math.sqrt(d_k)
    logits = scores.clone().requires_grad_(True)
    weights = torch.softmax(logits, dim=-1)
    (weights * upstream).sum().backward()
    weights = weights.detach()

    entropy = -(weights * torch.log(weights.clamp_min(1e-30))).sum(-1)
    return Saturation(
        d_k=d_k,
        scaled=scaled,
        scores=scores,
        weights=weights[0],
        score_std=scores.std().item(),
        max_weight=weights.max(-1).values.mean().item(),
        entropy=entropy.mean().item(),
        grad_norm=logits.grad.norm(dim=-1).mean().item(),
    )


def saturation_sweep(
    widths: Sequence[int], seed: int = 0, n_queries: int = 256, n_keys: int = 16
) -> dict[bool, list[Saturation]]:
    """`saturation` at every width, unscaled (key False) and scaled (key True) (notebook 02)."""
    return {
        scaled: [saturation(d_k, scaled, seed, n_queries, n_keys) for d_k in widths]
        for scaled in (False, True)
    }


@lru_cache(maxsize=4)
def _draw(
    seed: int, n_queries: int, n_keys: int, width: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Seeded q [n_queries, 1, width], k [n_queries, n_keys, width], upstream [n_queries, n_keys].

    Cached because drawing 4M normals dominates a redraw of the explorer; callers only slice.
    """
    generator = torch.Generator().manual_seed(seed)
    upstream = torch.randn(n_queries, n_keys, generator=generator)
    q = torch.randn(n_queries, 1, width, generator=generator)
    k = torch.randn(n_queries, n_keys, width, generator=generator)
    return q, k, upstream
