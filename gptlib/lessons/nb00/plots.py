"""Where the chapter's GPT keeps its parameters, as horizontal bars (notebook 00's explorer)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from matplotlib.figure import Figure
from matplotlib.ticker import StrMethodFormatter

from gptlib.lessons.engine.figures import describe


class ModelSizeView:
    """One bar per group of parameters (`names`, top to bottom), labelled with its count.

    Built once; `update(parts)` resizes the bars. The x axis ends 30% past the largest group.
    """

    FIGSIZE = (7.5, 2.2)

    def __init__(self, fig: Figure, names: Sequence[str]) -> None:
        self.names = list(names)
        self.ax = ax = fig.subplots()
        fig.subplots_adjust(left=0.3, right=0.97, bottom=0.25, top=0.85)
        positions = range(len(self.names))
        self.bars = ax.barh(positions, [0] * len(self.names), color="tab:blue")
        self.counts = [ax.text(0, y, "", va="center", fontsize=9) for y in positions]
        ax.set_yticks(positions, self.names)
        ax.invert_yaxis()
        ax.set_xlabel("parameters")
        ax.xaxis.set_major_formatter(StrMethodFormatter("{x:z,.0f}"))
        self.title = ax.set_title("")

    def update(self, parts: Mapping[str, int], vocab_size: int) -> None:
        """Show the count of every group in `names` (extra keys are ignored) for a vocabulary
        of `vocab_size` characters."""
        missing = [name for name in self.names if name not in parts]
        if missing:
            raise ValueError(f"no count for {missing}; got {sorted(parts)}")
        top = max(parts[name] for name in self.names)
        for bar, text, name in zip(self.bars, self.counts, self.names, strict=True):
            bar.set_width(parts[name])
            text.set_position((parts[name] + 0.01 * top, bar.get_y() + bar.get_height() / 2))
            text.set_text(f"{parts[name]:,}")
        self.ax.set_xlim(0, 1.3 * top)
        self.title.set_text(f"the chapter's GPT with a vocabulary of V = {vocab_size}")
        counts = "; ".join(f"{name} {parts[name]:,}" for name in self.names)
        describe(
            self.ax,
            f"Horizontal bars, one per group of parameters of the chapter's GPT with a "
            f"vocabulary of V = {vocab_size} characters, each labelled with its count: {counts}.",
        )
