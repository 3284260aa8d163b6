"""Plots of softmax saturation against d_k (notebook 02): the explorer's view and the curves."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from gptlib.lessons.engine.figures import describe
from gptlib.lessons.nb02.experiments import RetrievalRun, Saturation

MODE_STYLE = {False: ("unscaled  q·k", "tab:red"), True: ("scaled  q·k / √d_k", "tab:blue")}
HISTOGRAM_BINS = 60
DK_TICKS = (1, 4, 16, 64, 256, 1024)


def _log2_axis(ax) -> None:
    """d_k on a base-2 log axis with plain-number labels (mathtext labels cost a redraw ~25%)."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(DK_TICKS, labels=[str(t) for t in DK_TICKS])
    ax.minorticks_off()


class SaturationView:
    """The explorer's figure for one (d_k, scaled) setting, built once and updated in place.

    Panels: histogram of the scores entering the softmax (dashed: ± their std), the first
    query's weights over its keys, and the mean max weight against d_k for both modes (`curves`,
    from `saturation_sweep`) with the current setting marked. Updating artists instead of
    redrawing the axes keeps a slider step fast.
    """

    FIGSIZE = (11.0, 3.6)

    def __init__(
        self, fig: Figure, curves: dict[bool, Sequence[Saturation]], n_keys: int = 16
    ) -> None:
        self.fig = fig
        self.hist_ax, self.weights_ax, curve_ax = fig.subplots(1, 3)
        fig.subplots_adjust(left=0.05, right=0.98, bottom=0.15, top=0.78, wspace=0.25)
        edges = np.linspace(-1, 1, HISTOGRAM_BINS + 1)
        self.histogram = self.hist_ax.stairs(np.zeros(HISTOGRAM_BINS), edges, fill=True)
        self.std_lines = [
            self.hist_ax.axvline(0, color="black", linestyle="--", linewidth=1, label=label)
            for label in ("± one std", None)
        ]
        self.hist_ax.set_ylabel("count")
        self.hist_ax.legend(fontsize=8, loc="upper right")
        self.bars = self.weights_ax.bar(np.arange(n_keys), np.zeros(n_keys))
        self.weights_ax.axhline(
            1 / n_keys, color="gray", linestyle=":", linewidth=1, label=f"uniform 1/{n_keys}"
        )
        self.weights_ax.set(
            ylim=(0, 1), xlabel="key j", ylabel="softmax weight", xticks=range(0, n_keys, 5)
        )
        self.weights_ax.legend(fontsize=8, loc="upper right")
        for scaled, runs in curves.items():
            label, color = MODE_STYLE[scaled]
            curve_ax.plot(
                [r.d_k for r in runs], [r.max_weight for r in runs], ".-", color=color, label=label
            )
        curve_ax.axhline(1, color="gray", linestyle="--", linewidth=1, label="one-hot")
        curve_ax.axhline(
            1 / n_keys, color="gray", linestyle=":", linewidth=1, label=f"uniform 1/{n_keys}"
        )
        (self.marker,) = curve_ax.plot([], [], "o", color="black", markersize=9, zorder=3)
        _log2_axis(curve_ax)
        curve_ax.set(ylim=(0, 1.05), xlabel="d_k", title="mean max weight over 256 queries")
        curve_ax.legend(fontsize=8, loc="center right")
        self.title = fig.suptitle("", fontsize=11)

    def update(self, result: Saturation) -> None:
        """Show `result` (same n_keys as the view was built for)."""
        if len(result.weights) != len(self.bars):
            raise ValueError(
                f"this view shows {len(self.bars)} keys, the result has {len(result.weights)}; "
                f"build SaturationView(..., n_keys={len(result.weights)})"
            )
        label, color = MODE_STYLE[result.scaled]
        half_width = 4 * max(1.0, result.score_std)
        edges = np.linspace(-half_width, half_width, HISTOGRAM_BINS + 1)
        counts, _ = np.histogram(result.scores.flatten().numpy(), edges)
        self.histogram.set_data(counts, edges)
        self.histogram.set_color(color)
        self.hist_ax.set_xlim(-half_width, half_width)
        self.hist_ax.set_ylim(0, 1.05 * counts.max())
        self.hist_ax.set(
            xlabel=label, title=f"scores into the softmax (std {result.score_std:z.2f})"
        )
        for line, x in zip(self.std_lines, (-result.score_std, result.score_std), strict=True):
            line.set_xdata([x, x])
        for bar, weight in zip(self.bars, result.weights.tolist(), strict=True):
            bar.set_height(weight)
            bar.set_color(color)
        self.weights_ax.set_title(f"one query's weights (max {result.weights.max():z.2f})")
        self.marker.set_data([result.d_k], [result.max_weight])
        self.title.set_text(
            f"d_k = {result.d_k}, {'scaled' if result.scaled else 'unscaled'}: "
            f"max weight {result.max_weight:z.3f}, entropy {result.entropy:z.3f}, "
            f"grad norm {result.grad_norm:z.3f}"
        )
        n, mode = len(self.bars), "scaled" if result.scaled else "unscaled"
        describe(
            self.fig,
            f"Softmax saturation at d_k = {result.d_k}, {mode} scores, in three panels: a "
            "histogram of the scores entering the softmax with one "
            f"standard deviation either side dashed; one query's weights over its {n} keys as "
            f"bars, uniform 1/{n} dotted; and the mean max weight against d_k (log scale) for "
            f"unscaled (red) and scaled (blue) scores, between uniform (1/{n}) and one-hot (1), "
            "this setting circled.",
        )


def plot_saturation_curves(curves: dict[bool, Sequence[Saturation]], fig: Figure) -> Figure:
    """Mean max weight, entropy and gradient norm against d_k, unscaled vs scaled (notebook 02).

    The max-weight panel marks one-hot (1) and uniform (1/n_keys); the entropy panel marks
    uniform (ln n_keys; one-hot is 0, the axis).
    """
    axes = fig.subplots(1, 3)
    measures = (
        ("max_weight", "mean max weight (1 = one-hot)"),
        ("entropy", "mean entropy (nats)"),
        ("grad_norm", "mean ‖∂L/∂z‖ through the softmax"),
    )
    for ax, (field, title) in zip(axes, measures, strict=True):
        for scaled, runs in curves.items():
            label, color = MODE_STYLE[scaled]
            ax.plot(
                [r.d_k for r in runs],
                [getattr(r, field) for r in runs],
                marker="o",
                color=color,
                label=label,
            )
        _log2_axis(ax)
        ax.set(xlabel="d_k", title=title)
        ax.set_ylim(bottom=0)
    n_keys = len(next(iter(curves.values()))[0].weights)
    reference = {"color": "gray", "linewidth": 1}
    axes[0].axhline(1, linestyle="--", label="one-hot: 1", **reference)
    axes[0].axhline(1 / n_keys, linestyle=":", label=f"uniform: 1/{n_keys}", **reference)
    axes[1].axhline(
        math.log(n_keys),
        linestyle=":",
        label=f"uniform: ln {n_keys} = {math.log(n_keys):z.2f}",
        **reference,
    )
    axes[0].set_ylim(top=1.05)
    axes[1].set_ylim(top=1.1 * math.log(n_keys))
    for ax in axes[:2]:
        ax.legend(fontsize=8, loc="center right")
    fig.tight_layout()
    widths = sorted({r.d_k for runs in curves.values() for r in runs})
    describe(
        fig,
        f"Three panels against d_k (log scale, {widths[0]} to {widths[-1]}), each with unscaled "
        f"q·k (red) and scaled q·k / √d_k (blue) scores over {n_keys} keys: the mean max softmax "
        f"weight (one-hot is 1, uniform 1/{n_keys}), the mean entropy in nats (uniform is "
        f"ln {n_keys}) and the mean gradient norm through the softmax.",
    )
    return fig


def plot_scaling_runs(runs: Mapping[int, Mapping[bool, RetrievalRun]], fig: Figure) -> Figure:
    """Training with and without 1/√d_k, one column per d_k (notebook 02).

    `runs[d_k]` is `scaling_runs(d_k)`. Top row: the loss of every step in nats per answer,
    with the level of guessing (ln n_values); bottom row: the mean attention weight on the
    queried pair, with the levels of reading at random (1/n_pairs) and reading it alone (1).
    """
    axes = fig.subplots(2, len(runs), squeeze=False, sharex=True)
    for column, (d_k, pair) in enumerate(runs.items()):
        loss_ax, weight_ax = axes[0, column], axes[1, column]
        for scaled, run in sorted(pair.items()):
            label, color = MODE_STYLE[scaled]
            steps = np.arange(len(run.losses))
            loss_ax.plot(steps, run.losses.numpy(), color=color, linewidth=1, label=label)
            weight_ax.plot(steps, run.answer_weight.numpy(), color=color, linewidth=1)
        some_run = next(iter(pair.values()))
        n_pairs, n_values = some_run.task.n_pairs, some_run.task.n_values
        loss_ax.axhline(
            some_run.chance_loss,
            color="gray",
            linestyle=":",
            linewidth=1,
            label=f"guessing: ln {n_values} = {some_run.chance_loss:z.2f}",
        )
        loss_ax.set(title=f"d_k = {d_k}: loss", ylim=(0, None))
        loss_ax.set_ylabel("loss (nats per answer token)")
        loss_ax.legend(fontsize=8, loc="center right")
        weight_ax.axhline(1, color="gray", linestyle="--", linewidth=1, label="reads it alone: 1")
        weight_ax.axhline(
            1 / n_pairs, color="gray", linestyle=":", linewidth=1, label=f"at random: 1/{n_pairs}"
        )
        weight_ax.set(
            title=f"d_k = {d_k}: weight on the queried pair", xlabel="training step", ylim=(0, 1.05)
        )
        weight_ax.set_ylabel("attention weight")
        weight_ax.legend(fontsize=8, loc="center right")
    fig.tight_layout()
    describe(
        fig,
        f"Training with and without the 1/√d_k scaling, one column per d_k "
        f"({', '.join(map(str, runs))}), unscaled in red and scaled in blue, against the "
        "training step: above, the loss of every step in nats per answer token, guessing "
        f"(ln {n_values}) dotted; below, the mean attention weight on the queried pair, between "
        f"reading at random (1/{n_pairs}) and reading it alone (1).",
    )
    return fig
