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
    ax.set(title="same model, same data, same learning rate", xlabel="step", ylabel="training loss")
    ax.legend()
    fig.tight_layout()
    return fig
