"""Which outputs a change of one token reaches (notebook 03).

The student measures it (`output_changes` in the notebook): change[p, t] is how far position t's
logits move when token p changes. A causal model's change matrix is zero below its diagonal
(t < p); without the mask every entry moves. `perturbation` reads one row of it for the explorer,
and `with_causal` gives the same weights with or without the mask.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gptlib.lessons.shared.experiments.variants import Variant, build_gpt
from gptlib.model import GPT


def with_causal(model: GPT, causal: bool) -> GPT:
    """A copy of `model` (a `gptlib.GPT`) with the same weights, with or without the causal mask
    (the unmasked lesson variant). The mask has no parameters, so the state dict fits either way.
    """
    twin = build_gpt(model.config, Variant(attention="fused" if causal else "unmasked"))
    twin.load_state_dict(model.state_dict())
    return twin.to(next(model.parameters()).device).train(model.training)


@dataclass(frozen=True)
class Perturbation:
    """What changing one token did: each position's logit change [T], and who moved."""

    causal: bool
    position: int
    change: torch.Tensor
    changed: list[int]
    unchanged: list[int]

    def lines(self) -> list[str]:
        """The numbers as `name = value` lines, printed by the explorer, read by browser tests."""
        return [
            f"causal mask = {'on' if self.causal else 'off'}",
            f"perturbed position = {self.position}",
            f"changed positions = {self.changed}",
            f"number changed = {len(self.changed)}",
            f"earliest changed position = {min(self.changed, default=None)}",
            f"earlier positions unchanged = {set(range(self.position)) <= set(self.unchanged)}",
        ]


def perturbation(
    changes: torch.Tensor, position: int, causal: bool, atol: float = 1e-5
) -> Perturbation:
    """Row `position` of a change matrix [T, T] (change[p, t]: how far position t's logits moved
    when token p changed): the positions that moved by more than `atol`, and those that did not.
    `causal` says which model the matrix was measured on."""
    if changes.dim() != 2 or changes.shape[0] != changes.shape[1]:
        raise ValueError(f"changes must be a square matrix [T, T], got {list(changes.shape)}")
    T = changes.shape[0]
    if not 0 <= position < T:
        raise ValueError(f"position must be in 0..{T - 1}, got {position}")
    change = changes[position].detach().float()
    moved = change > atol
    changed = [t for t in range(T) if moved[t]]
    unchanged = [t for t in range(T) if not moved[t]]
    return Perturbation(causal, position, change, changed, unchanged)
