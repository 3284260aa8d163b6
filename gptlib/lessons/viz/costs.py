"""Notebook 08's cost-calculator figure: where the parameters and the per-token FLOPs go."""

from __future__ import annotations

from matplotlib.figure import Figure

from gptlib.lessons.experiments.costs import CostReport

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
        for (bars, texts), shares in zip(
            self.panels, (parameter_shares(report), flop_shares(report)), strict=True
        ):
            for bar, text, share in zip(bars, texts, shares.values(), strict=True):
                bar.set_width(share)
                text.set_position((share + 1, bar.get_y() + bar.get_height() / 2))
                text.set_text(f"{share:.1f}%")
