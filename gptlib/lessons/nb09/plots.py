"""Notebook 09's figures: the cost calculator's (where the parameters and the per-token FLOPs
go) and the attention term against 2N as the context grows."""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, LogLocator, NullFormatter, NullLocator

from gptlib.lessons.engine.figures import describe
from gptlib.lessons.nb09.experiments.costs import AttentionShare, CostReport

PARAMETER_GROUPS = ("attention (all layers)", "FFN (all layers)", "embeddings", "norms")
FLOP_TERMS = ("weights: 2N", "attention: 4·L·T·d")


def parameter_shares(report: CostReport) -> dict[str, float]:
    """Percent of the N parameters in each of `PARAMETER_GROUPS`."""
    p = report.params
    counts = (
        p.n_layers * p.attention_per_layer,
        p.n_layers * p.ffn_per_layer,
        p.embeddings + p.positions,
        p.norms,
    )
    return {name: 100 * c / p.total for name, c in zip(PARAMETER_GROUPS, counts, strict=True)}


def flop_shares(report: CostReport) -> dict[str, float]:
    """Percent of the forward FLOPs per token in each of `FLOP_TERMS`."""
    terms = (report.forward_flops_per_token, report.attention_flops_per_token)
    return {name: 100 * t / sum(terms) for name, t in zip(FLOP_TERMS, terms, strict=True)}


class CostView:
    """Two panels of percentage bars, built once and updated in place: the parameters by group,
    and a token's forward FLOPs split between the weight matmuls (2N) and attention (4·L·T·d)."""

    FIGSIZE = (10.0, 2.6)

    def __init__(self, fig: Figure) -> None:
        self.params_ax, self.flops_ax = fig.subplots(1, 2)
        fig.subplots_adjust(left=0.17, right=0.97, bottom=0.22, top=0.85, wspace=0.75)
        self.panels = []
        for ax, names, title in (
            (self.params_ax, PARAMETER_GROUPS, "where the N parameters are"),
            (self.flops_ax, FLOP_TERMS, "forward FLOPs of one token"),
        ):
            bars = ax.barh(range(len(names)), [0] * len(names), color="tab:green")
            texts = [ax.text(0, y, "", va="center", fontsize=9) for y in range(len(names))]
            ax.set_yticks(range(len(names)), names)
            ax.invert_yaxis()
            ax.set(xlim=(0, 118), xlabel="% of the total", title=title)
            self.panels.append((bars, texts))

    def update(self, report: CostReport) -> None:
        parts = (parameter_shares(report), flop_shares(report))
        for (bars, texts), shares in zip(self.panels, parts, strict=True):
            for bar, text, share in zip(bars, texts, shares.values(), strict=True):
                bar.set_width(share)
                text.set_position((share + 1, bar.get_y() + bar.get_height() / 2))
                text.set_text(f"{share:z.1f}%")
        said = ["; ".join(f"{name} {share:z.1f}%" for name, share in p.items()) for p in parts]
        describe(
            self.params_ax,
            f"Two panels of percentage bars for {report.architecture.name}: where the N "
            f"parameters are ({said[0]}), and how one token's forward FLOPs split at "
            f"T = {report.architecture.context:,} ({said[1]}).",
        )


def context_label(tokens: int) -> str:
    """A context length as a tick label: 512 → '512', 4096 → '4K', 131072 → '128K'."""
    return f"{tokens // 1024}K" if tokens >= 1024 and tokens % 1024 == 0 else f"{tokens:,}"


def plot_attention_share(ax: Axes, shares: Sequence[AttentionShare]) -> None:
    """One line per model of 4·L·T·d / 2N against the context T (log-log), a labelled line
    where the attention term equals the weights' 2N, and each model's crossing marked on it.

    x ticks at the computed contexts (powers of two, labelled 512 … 128K); y ticks at round
    decades.
    """
    if not shares:
        raise ValueError("give at least one AttentionShare to plot")
    for share in shares:
        (line,) = ax.plot(share.contexts, share.ratios, marker="o", ms=3, label=share.name)
        ax.plot(share.crossing, 1.0, marker="x", ms=8, mew=2, color=line.get_color())
    ax.axhline(1.0, color="grey", lw=1, ls="--", label="attention term = 2N (x: crossing)")
    contexts = sorted({t for share in shares for t in share.contexts})
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="context length T (tokens)",
        ylabel="attention FLOPs / 2N",
        title="The attention term against the weights' FLOPs, per token",
    )
    ax.xaxis.set_major_locator(FixedLocator(contexts))
    ax.xaxis.set_major_formatter(lambda t, _: context_label(int(round(t))))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_locator(LogLocator(base=10))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    crossings = "; ".join(f"{s.name} at T ≈ {s.crossing:z,.0f}" for s in shares)
    describe(
        ax,
        "The attention term against the weights' FLOPs per token, log-log: 4·L·T·d / 2N against "
        f"the context length T from {context_label(contexts[0])} to "
        f"{context_label(contexts[-1])} tokens, one line per model; a dashed line at 1 where the "
        f"two are equal, each model's crossing marked x on it ({crossings}).",
    )
