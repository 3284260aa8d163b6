"""Plots of notebook 06: per-layer gradient norms at initialisation and training curves."""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

NORM_STYLE = {"pre": ("tab:blue", "Pre-LN"), "post": ("tab:red", "Post-LN")}


def draw_gradient_profile(ax: Axes, profile: torch.Tensor, norm: str) -> None:
    """One per-block gradient-norm profile [L] on `ax`, coloured by norm placement."""
    colour, label = NORM_STYLE[norm]
    layers = range(1, len(profile) + 1)
    ax.plot(
        layers, profile.tolist(), color=colour, marker="o", ms=3, label=f"{label}, L={len(profile)}"
    )


class GradientProfileView:
    """Notebook 06's explorer figure: per-block gradient norms at initialisation for one depth,
    one line per norm placement. Built once; `update` redraws the lines on the same axes."""

    FIGSIZE = (7.0, 3.6)

    def __init__(self, fig: Figure) -> None:
        self.ax = fig.subplots()
        fig.subplots_adjust(left=0.1, right=0.97, bottom=0.15, top=0.9)

    def update(self, profiles: dict[str, torch.Tensor]) -> None:
        """Show profiles {"pre"|"post": [L]} (one or both, of the same depth L)."""
        if not profiles:
            raise ValueError("give at least one profile ('pre' or 'post')")
        ax = self.ax
        ax.cla()
        for norm, profile in profiles.items():
            draw_gradient_profile(ax, profile, norm)
        depth = len(next(iter(profiles.values())))
        ax.set(
            title=f"gradient norm per block at initialisation ({depth} blocks)",
            xlabel="block (1 = next to the input)",
            ylabel="gradient norm",
            ylim=(0, None),
        )
        ax.legend(fontsize=8, loc="upper left")


def plot_init_gradients(profiles: dict[tuple[str, int], torch.Tensor]) -> Figure:
    """One panel per depth: Pre-LN and Post-LN per-block gradient norms at initialisation.

    `profiles` maps (norm, depth) to a profile [depth]. The y axes are shared.
    """
    depths = sorted({depth for _, depth in profiles})
    fig, axes = plt.subplots(1, len(depths), figsize=(4 * len(depths), 3.6), sharey=True)
    axes = [axes] if len(depths) == 1 else list(axes)
    top = 1.1 * max(float(profile.max()) for profile in profiles.values())
    for ax, depth in zip(axes, depths, strict=True):
        for norm in ("pre", "post"):
            if (norm, depth) in profiles:
                draw_gradient_profile(ax, profiles[norm, depth], norm)
        ax.set(title=f"{depth} blocks", xlabel="block (1 = next to the input)", ylim=(0, top))
        ax.legend()
    axes[0].set_ylabel("gradient norm at initialisation")
    fig.tight_layout()
    return fig


def plot_training(losses: dict[str, torch.Tensor], floor: float) -> Figure:
    """Training-loss curves, with the unigram entropy `floor` (a model that ignores context)."""
    fig, ax = plt.subplots(figsize=(7, 3.8))
    for label, curve in losses.items():
        ax.plot(range(1, len(curve) + 1), curve.tolist(), label=label)
    ax.axhline(floor, color="grey", ls="--", lw=1, label=f"letter frequencies only ({floor:.3f})")
    ax.set(
        title="same model, same data, same learning rate",
        xlabel="step",
        ylabel="training loss (nats per character)",
    )
    ax.legend()
    fig.tight_layout()
    return fig
