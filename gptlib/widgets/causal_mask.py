"""Notebook 03's explorer: switch the causal mask on or off, change one token, and see which
positions' outputs move."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch

from gptlib.causality import changed_positions, output_change, with_causal
from gptlib.model import GPT
from gptlib.viz.causal_mask import plot_output_change


@dataclass(frozen=True)
class Perturbation:
    """The result of changing one token: per-position change [T] and who moved."""

    causal: bool
    position: int
    change: torch.Tensor
    changed: list[int]
    unchanged: list[int]

    def lines(self) -> list[str]:
        """The numbers as `name = value` lines (read by the browser tests)."""
        return [
            f"causal mask = {'on' if self.causal else 'off'}",
            f"perturbed position = {self.position}",
            f"changed positions = {self.changed}",
            f"unchanged positions = {self.unchanged}",
            f"earlier positions unchanged = {all(t >= self.position for t in self.changed)}",
        ]


def perturb(
    models: dict[bool, GPT], idx: torch.Tensor, position: int, causal: bool, atol: float = 1e-5
) -> Perturbation:
    """Change token `position` of idx [1, T] and measure every position's logits (pure)."""
    change = output_change(models[causal], idx, position)
    changed = changed_positions(change, atol)
    unchanged = [t for t in range(idx.shape[1]) if t not in changed]
    return Perturbation(causal, position, change, changed, unchanged)


def mask_twins(model: GPT) -> dict[bool, GPT]:
    """{True: the model with its mask, False: the same weights without it}, in eval mode."""
    return {c: with_causal(model, c).eval() for c in (True, False)}


def show_perturbation(
    models: dict[bool, GPT], idx: torch.Tensor, position: int, causal: bool, labels: Sequence[str]
) -> Perturbation:
    """Print the perturbation's lines and draw the change per position."""
    result = perturb(models, idx, position, causal)
    print("\n".join(result.lines()))
    mask = "with" if causal else "without"
    title = f"{mask} the mask, token {position} changed: red positions moved"
    plot_output_change(result.change, position, labels, title=title)
    plt.show()
    return result


def causal_mask_explorer(
    model: GPT, idx: torch.Tensor, labels: Sequence[str], position: int = 5
) -> widgets.VBox:
    """A mask toggle and a position slider over `perturb` for one sequence idx [1, T]."""
    models = mask_twins(model)
    toggle = widgets.ToggleButton(value=True, description="causal mask", icon="check")
    slider = widgets.IntSlider(
        value=position,
        min=0,
        max=idx.shape[1] - 1,
        description="perturb token",
        continuous_update=True,
    )
    out = widgets.interactive_output(
        lambda causal, position: show_perturbation(models, idx, position, causal, labels),
        {"causal": toggle, "position": slider},
    )
    return widgets.VBox([widgets.HBox([toggle, slider]), out])
