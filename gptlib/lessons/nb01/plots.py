"""Plots of position vectors (notebook 01): heatmaps, similarity matrices, the explorer's view."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
from matplotlib.figure import Figure

from gptlib.lessons.engine.figures import describe
from gptlib.lessons.nb01.experiments import PositionSummary, cosine_similarity_matrix


def plot_position_tables(tables: Mapping[str, torch.Tensor], fig: Figure) -> Figure:
    """One row per table [T, d]: the vectors as a heatmap, then their [T, T] cosine similarity."""
    axes = fig.subplots(len(tables), 2, squeeze=False)
    for (name, table), (vec_ax, sim_ax) in zip(tables.items(), axes, strict=True):
        table = table.detach()
        # symmetric limits put white at 0, so the colour's sign is the value's sign
        limit = table.abs().max().item() or 1.0
        image = vec_ax.imshow(
            table.numpy(),
            aspect="auto",
            cmap="RdBu_r",
            vmin=-limit,
            vmax=limit,
            interpolation="nearest",
        )
        fig.colorbar(image, ax=vec_ax)
        vec_ax.set(title=f"{name}: P [{table.shape[0]}, {table.shape[1]}]", xlabel="column")
        vec_ax.set_ylabel("position")
        similarity = cosine_similarity_matrix(table).numpy()
        image = sim_ax.imshow(similarity, cmap="viridis", vmin=-1, vmax=1, interpolation="nearest")
        fig.colorbar(image, ax=sim_ax)
        sim_ax.set(title=f"{name}: cosine(P_i, P_j)", xlabel="position j", ylabel="position i")
    fig.tight_layout()
    shapes = ", ".join(f"{name} [{t.shape[0]}, {t.shape[1]}]" for name, t in tables.items())
    describe(
        fig,
        f"One row per table of position vectors ({shapes}): on the left the table as a heatmap "
        "(position down, column across; red positive, blue negative, white at 0), on the right the "
        "cosine "
        "similarity of every pair of positions (viridis, -1 to 1), 1 along its diagonal where a "
        "position meets itself.",
    )
    return fig


class PositionView:
    """The explorer's figure, built once and updated in place: the sinusoidal table [T, d], its
    [T, T] cosine similarities, and cosine(P_0, P_t) with the neighbour's level (dashed) and the
    first rival offset (red x) when there is one."""

    FIGSIZE = (11.0, 3.6)

    def __init__(self, fig: Figure) -> None:
        self.fig = fig
        self.vec_ax, self.sim_ax, self.line_ax = fig.subplots(1, 3)
        fig.subplots_adjust(left=0.05, right=0.98, bottom=0.15, top=0.8, wspace=0.35)
        self.table = self.vec_ax.imshow(
            np.zeros((2, 2)), aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest"
        )
        fig.colorbar(self.table, ax=self.vec_ax, fraction=0.08, pad=0.03)
        self.vec_ax.set(xlabel="column", ylabel="position")
        self.similarity = self.sim_ax.imshow(
            np.zeros((2, 2)), cmap="viridis", vmin=-1, vmax=1, interpolation="nearest"
        )
        fig.colorbar(self.similarity, ax=self.sim_ax, fraction=0.08, pad=0.03)
        self.sim_ax.set(title="cosine(P_i, P_j)", xlabel="position j", ylabel="position i")
        (self.line,) = self.line_ax.plot([], [], color="tab:blue", label="cosine(P_0, P_t)")
        self.neighbour = self.line_ax.axhline(
            0, color="gray", linestyle="--", linewidth=1, label="level of P_1 (neighbour)"
        )
        (self.rival,) = self.line_ax.plot(
            [], [], "x", color="red", markersize=9, mew=2, label="first rival"
        )
        self.line_ax.set(title="cosine(P_0, P_t)", xlabel="position t", ylim=(-1.05, 1.05))
        self._legend(rival=False)
        self.title = fig.suptitle("", fontsize=11)

    def _legend(self, rival: bool) -> None:
        """The legend names the red x only when a rival is drawn."""
        handles = [self.line, self.neighbour] + ([self.rival] if rival else [])
        self.line_ax.legend(handles=handles, fontsize=8, loc="lower left")

    def update(self, summary: PositionSummary) -> None:
        """Show `summary`: images resized to its [T, d] and [T, T], titles and marks redrawn."""
        T, d = summary.T, summary.d
        self.table.set_data(summary.table.numpy())
        self.table.set_extent((-0.5, d - 0.5, T - 0.5, -0.5))
        self.vec_ax.set(xlim=(-0.5, d - 0.5), ylim=(T - 0.5, -0.5), title=f"P [{T}, {d}]")
        self.similarity.set_data(summary.similarity.numpy())
        self.similarity.set_extent((-0.5, T - 0.5, T - 0.5, -0.5))
        self.sim_ax.set(xlim=(-0.5, T - 0.5), ylim=(T - 0.5, -0.5))
        self.line.set_data(np.arange(T), summary.similarity[0].numpy())
        self.line_ax.set_xlim(0, T - 1)
        self.neighbour.set_ydata([summary.neighbour_similarity] * 2)
        rival = summary.first_rival
        self.rival.set_data(
            [rival] if rival else [], [summary.similarity[0, rival]] if rival else []
        )
        self._legend(rival=rival is not None)
        verdict = f"position {rival} looks as close to 0 as 1 does" if rival else "no rival"
        marked = (
            f"position {rival}, the first as close to P_0 as P_1 is, marked with a red x"
            if rival
            else "no other position as close to P_0 as P_1"
        )
        describe(
            self.fig,
            f"The sinusoidal position table for d_model = {d}, {T} positions and base "
            f"{summary.base:zg}, in three panels: the table as a heatmap (position down, column "
            "across), the cosine similarity of every pair of positions, and cosine(P_0, P_t) "
            f"against position t with the level of P_1 (the neighbour) dashed; {marked}.",
        )
        self.title.set_text(
            f"d_model = {d}, length = {T}, base = {summary.base:zg}: "
            f"cosine(P_0, P_1) = {summary.neighbour_similarity:z.3f}, {verdict}"
        )
