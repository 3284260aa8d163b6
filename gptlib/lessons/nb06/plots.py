"""Plots of notebook 06: per-layer gradient norms at initialisation, the learning-rate × depth
grid as heatmaps, and training curves."""

from __future__ import annotations

import math
from collections.abc import Iterable

import matplotlib.pyplot as plt
import torch
from matplotlib.axes import Axes
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

from gptlib.lessons.engine.figures import describe
from gptlib.lessons.nb06.experiments import NORM_LABELS, LearningRateGrid

NORM_STYLE = {"pre": ("tab:blue", NORM_LABELS["pre"]), "post": ("tab:red", NORM_LABELS["post"])}


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
        describe(
            ax,
            f"The gradient norm of each of the {depth} blocks at initialisation (block 1 next to "
            f"the input), {_lines(profiles)}.",
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
    describe(
        fig,
        f"Per-block gradient norms at initialisation, one panel per depth "
        f"({', '.join(map(str, depths))} blocks) on a shared y axis, "
        f"{_lines(norm for norm, _ in profiles)}; block 1 is next to the input.",
    )
    return fig


def _lines(norms: Iterable[str]) -> str:
    """The profiles' lines, in words: "Pre-LN (blue) against Post-LN (red)" for both norms."""
    norms = set(norms)
    return " against ".join(
        f"{NORM_STYLE[n][1]} ({NORM_STYLE[n][0].removeprefix('tab:')})"
        for n in ("pre", "post")
        if n in norms
    )


def plot_training(
    losses: dict[str, torch.Tensor],
    floor: float,
    title: str = "same model, same data, same learning rate",
) -> Figure:
    """Training-loss curves, with the unigram entropy `floor` (a model that ignores context)."""
    fig, ax = plt.subplots(figsize=(7, 3.8))
    for label, curve in losses.items():
        ax.plot(range(1, len(curve) + 1), curve.tolist(), label=label)
    ax.axhline(floor, color="grey", ls="--", lw=1, label=f"letter frequencies only ({floor:z.3f})")
    ax.set(
        title=title,
        xlabel="step",
        ylabel="training loss (nats per character)",
    )
    ax.legend()
    fig.tight_layout()
    describe(
        fig,
        f"{title}: the training loss (nats per character) at each step, one line per run "
        f"({'; '.join(losses)}), a dashed line at the loss of letter frequencies alone (a model "
        "that ignores the context).",
    )
    return fig


def lr_label(lr: float) -> str:
    """3e-3 for 0.003: a learning rate as a short tick label."""
    mantissa, exponent = f"{lr:z.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def plot_learning_rate_grid(grid: LearningRateGrid) -> Figure:
    """One heatmap per arm: the seed-averaged final loss of each depth × learning rate cell.

    One colour scale for all panels, from the best cell to the unigram entropy (a model that
    ignores the context); each cell shows its number, "stalled" when it ended at that entropy,
    "diverged" (grey) when a seed's loss became NaN.
    """
    A, D, R = grid.mean.shape
    fig, axes = plt.subplots(
        1, A, figsize=(3.6 * A + 1.4, 0.75 * D + 2.0), sharey=True, layout="constrained"
    )
    axes = [axes] if A == 1 else list(axes)
    finite = grid.mean[torch.isfinite(grid.mean)]
    low = float(finite.min()) if finite.numel() else grid.floor - 1
    norm = Normalize(vmin=math.floor(low * 10) / 10, vmax=grid.floor)
    cmap = plt.get_cmap("viridis_r").with_extremes(bad="lightgrey")
    for a, ax in enumerate(axes):
        values = grid.mean[a].clone().masked_fill(grid.diverged[a], math.nan).numpy()
        image = ax.imshow(values, cmap=cmap, norm=norm, origin="lower", aspect="auto")
        for d in range(D):
            for r in range(R):
                _annotate(ax, r, d, grid, a, d, r, norm)
        ax.set_xticks(range(R), [lr_label(lr) for lr in grid.lrs])
        ax.set_yticks(range(D), [str(depth) for depth in grid.depths])
        ax.set(title=grid.arms[a], xlabel="learning rate")
    axes[0].set_ylabel("blocks")
    bar = fig.colorbar(image, ax=axes, fraction=0.03, pad=0.02)
    bar.set_label(
        f"final training loss, nats per character\n(top of the scale: unigram entropy "
        f"{grid.floor:z.2f})"
    )
    fig.suptitle(
        f"final loss after {grid.steps} steps (mean of the last 10, averaged over "
        f"{len(grid.seeds)} seeds); warmup: {grid.warmup_steps} steps"
    )
    describe(
        fig,
        f"One heatmap per arm ({', '.join(grid.arms)}): the final training loss after "
        f"{grid.steps} steps (mean of the last 10, averaged over {len(grid.seeds)} seeds; "
        f"warmup {grid.warmup_steps} steps) for each depth "
        f"({', '.join(map(str, grid.depths))} blocks, rows) and learning rate "
        f"({', '.join(lr_label(lr) for lr in grid.lrs)}, columns), coloured from the lowest loss "
        "(yellow) to the unigram entropy (dark purple). Each cell is written with its loss, "
        "“stalled” where it ended at that entropy, and “diverged” on grey where a seed's loss "
        "became NaN.",
    )
    return fig


def _annotate(
    ax: Axes, x: int, y: int, grid: LearningRateGrid, a: int, d: int, r: int, norm: Normalize
) -> None:
    if grid.diverged[a, d, r]:
        ax.text(x, y, "diverged", ha="center", va="center", fontsize=9)
        return
    loss = float(grid.mean[a, d, r])
    colour = "white" if norm(loss) > 0.6 else "black"
    label = f"{loss:z.2f}" + ("\nstalled" if grid.stalled[a, d, r] else "")
    ax.text(x, y, label, ha="center", va="center", fontsize=9, color=colour)
