"""Plots for notebook 03: the masked score matrix, which outputs a change reaches (one change, and
every change at once), and the training run without the mask."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure

from gptlib.lessons.engine.figures import describe, spans
from gptlib.lessons.engine.labels import char_labels
from gptlib.lessons.nb03.experiments import Perturbation
from gptlib.lessons.shared.experiments.mask_ablation import AblationRun


def plot_masked_attention(
    masked_scores: torch.Tensor, weights: torch.Tensor, labels: Sequence[str]
) -> Figure:
    """Masked scores [T, T] (−∞ drawn grey) beside their softmax weights [T, T], annotated."""
    fig, (ax_s, ax_w) = plt.subplots(1, 2, figsize=(9, 4), constrained_layout=True)
    finite = masked_scores.isfinite()
    shown = masked_scores.masked_fill(~finite, float("nan"))
    cmap = plt.get_cmap("coolwarm").with_extremes(bad="lightgrey")
    ax_s.imshow(shown.detach().numpy(), cmap=cmap)
    ax_w.imshow(weights.detach().numpy(), cmap="viridis", vmin=0, vmax=1)
    T = len(labels)
    for i in range(T):
        for j in range(T):
            s = "−∞" if not finite[i, j] else f"{masked_scores[i, j]:z.1f}"
            ax_s.text(j, i, s, ha="center", va="center", fontsize=8)
            w = weights[i, j].item()
            ax_w.text(
                j,
                i,
                "0" if w == 0 else f"{w:z.2f}",
                ha="center",
                va="center",
                fontsize=8,
                color="white" if w < 0.5 else "black",
            )
    for ax, title in ((ax_s, "scores after masking"), (ax_w, "softmax weights")):
        ax.set_xticks(range(T), char_labels(labels))
        ax.set_yticks(range(T), char_labels(labels))
        ax.set_xlabel("key j")
        ax.set_ylabel("query i")
        ax.set_title(title)
    blocked = ~finite
    where = (
        "every key after its query"
        if torch.equal(blocked, torch.ones(T, T, dtype=torch.bool).triu(1))
        else "where the mask blocks"
    )
    describe(
        fig,
        f"Two {T} × {T} grids over the characters “{''.join(labels)}”, query i "
        "down and key j across, each cell written with its value: on the left the scores after "
        f"masking, −∞ (grey) at {where} ({int(blocked.sum())} cells); on the right their "
        f"softmax weights, {int((weights == 0).sum())} of them exactly 0, each row summing to 1.",
    )
    return fig


class OutputChangeView:
    """Bars of how far each position's logits moved [T] after one token changed (notebook 03).

    Built once for a sequence of `labels` and updated in place by `update`: red bars moved,
    grey "0"s did not (change <= atol), the dashed line marks the changed token. Log scale.
    """

    FIGSIZE = (8.0, 3.2)

    def __init__(self, fig: Figure, labels: Sequence[str], atol: float = 1e-5) -> None:
        self.atol, T = atol, len(labels)
        self.ax = ax = fig.subplots()
        fig.subplots_adjust(left=0.1, right=0.98, bottom=0.25, top=0.88)
        self.bars = ax.bar(range(T), [atol / 10] * T)
        self.zeros = [
            ax.text(t, atol / 5, "0", ha="center", va="bottom", color="tab:grey") for t in range(T)
        ]
        self.marker = ax.axvline(
            0, color="black", linestyle="--", linewidth=1, label="the changed token"
        )
        ax.axhline(atol, color="grey", linestyle=":", linewidth=1, label=f"tolerance {atol:zg}")
        ax.set_yscale("log")
        ax.set_ylim(atol / 10, 10.0)
        ax.set_xticks(range(T), [f"{t}\n{c}" for t, c in enumerate(char_labels(labels))])
        ax.tick_params(axis="x", labelsize=8)
        ax.set_xlabel("position (token)")
        ax.set_ylabel("max |Δ logit|")
        ax.legend(fontsize=8, loc="upper left")

    def update(self, result: Perturbation) -> None:
        """Show `result` (from `causality.perturb`, as long as the labels)."""
        if len(result.change) != len(self.bars):
            raise ValueError(
                f"this view shows {len(self.bars)} positions, the result has {len(result.change)}"
            )
        for bar, zero, c in zip(self.bars, self.zeros, result.change.tolist(), strict=True):
            moved = c > self.atol
            bar.set_height(max(c, self.atol / 10))
            bar.set_color("tab:red" if moved else "tab:grey")
            zero.set_visible(not moved)
        self.marker.set_xdata([result.position, result.position])
        mask = "with" if result.causal else "without"
        self.ax.set_title(
            f"{mask} the mask, token {result.position} changed: "
            f"{len(result.changed)} positions moved (red)"
        )
        describe(
            self.ax,
            f"Bars on a log scale of how far the logits at each of the {len(self.bars)} positions "
            f"moved (the largest change) after token {result.position} changed, {mask} the "
            f"causal mask, the changed token dashed: positions {spans(result.changed)} moved "
            f"(red){'; the others did not (a grey 0)' if result.unchanged else ''}.",
        )


def plot_output_changes(
    changes: dict[bool, torch.Tensor], labels: Sequence[str], atol: float = 1e-5
) -> Figure:
    """The change matrices [T, T] of one sequence with the mask (`changes[True]`) and without it
    (`changes[False]`) side by side: row p is the token changed, column t the position whose
    logits moved, coloured by log10 of the change; entries at most `atol` are grey."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 5), constrained_layout=True)
    cmap = plt.get_cmap("magma").with_extremes(bad="lightgrey")
    shown = {k: c.detach().double() for k, c in changes.items()}
    top = max(float(c.max()) for c in shown.values())
    image = None
    for ax, causal in zip(axes, (True, False), strict=True):
        change = shown[causal]
        logged = change.clamp_min(atol).log10().masked_fill(change <= atol, float("nan"))
        image = ax.imshow(
            logged.numpy(),
            cmap=cmap,
            vmin=float(torch.tensor(atol).log10()),
            vmax=float(torch.tensor(max(top, 10 * atol)).log10()),
        )
        moved = int((change > atol).sum())
        T = change.shape[0]
        ax.set_title(f"{'with' if causal else 'without'} the mask: {moved} of {T * T} moved")
        ax.set_xticks(range(T), char_labels(labels), fontsize=8)
        ax.set_yticks(range(T), char_labels(labels), fontsize=8)
        ax.set_xlabel("position t whose logits moved")
        ax.set_ylabel("token p that changed")
    fig.colorbar(image, ax=axes, label="log10 max |Δ logit| (grey: did not move)", shrink=0.8)
    moved = {causal: int((c > atol).sum()) for causal, c in shown.items()}
    earlier = "none" if bool((shown[True].tril(-1) <= atol).all()) else "some"
    describe(
        fig,
        f"Two {T} × {T} maps of the positions a change of one token reaches in "
        f"“{''.join(labels)}”, with the causal mask (left) and without it (right): "
        "the token p that changed down, the position t whose logits moved across, coloured by "
        f"log10 of the largest logit change, grey where nothing moved. With the mask "
        f"{moved[True]} of {T * T} entries moved, {earlier} of them left of the diagonal (at a "
        f"position before the changed token); without it {moved[False]} moved.",
    )
    return fig


def plot_mask_ablation(masked: AblationRun, unmasked: AblationRun, floor: float) -> Figure:
    """Training loss of both runs against the entropy floor, and their held-out losses."""
    fig, (ax_l, ax_b) = plt.subplots(
        1, 2, figsize=(11, 4), constrained_layout=True, gridspec_kw={"width_ratios": [3, 2]}
    )
    runs = ((masked, "tab:blue", "with mask"), (unmasked, "tab:red", "without mask"))
    for run, color, label in runs:
        ax_l.plot(run.losses, color=color, label=label)
    ax_l.axhline(floor, color="black", linestyle="--", label=f"entropy floor {floor:z.3f}")
    ax_l.set_yscale("log")
    ax_l.set_xlabel("step")
    ax_l.set_ylabel("training loss (nats per character)")
    ax_l.legend()
    ax_l.set_title("training loss")
    names = ("whole window\nvisible", "prefix only\n(as in generation)")
    x = torch.arange(2, dtype=torch.float32)
    for offset, (run, color, label) in zip((-0.2, 0.2), runs, strict=True):
        heights = [run.val_loss, run.prefix_loss]
        ax_b.bar((x + offset).tolist(), heights, width=0.4, color=color, label=label)
    ax_b.axhline(floor, color="black", linestyle="--", label="entropy floor")
    ax_b.set_xticks(x.tolist(), names)
    ax_b.set_ylabel("held-out loss (nats per character)")
    ax_b.set_title("held-out loss")
    ax_b.legend(fontsize=8)
    describe(
        fig,
        "Left: the training loss per step (log scale, nats per character) of the model trained "
        "with the causal mask (blue) and without it (red), the entropy floor dashed. Right: their "
        "held-out losses as bars, with the whole window visible and with only the prefix visible "
        "(as in generation), against the same floor.",
    )
    return fig
