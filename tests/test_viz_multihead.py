"""Notebook 04's plots: one panel per head, one grid per split method."""

import matplotlib
import pytest
import torch

from gptlib.viz.multihead import plot_head_patterns, plot_head_slots

matplotlib.use("Agg")


@pytest.mark.parametrize(("h", "panels"), [(1, 1), (4, 4), (8, 8), (6, 8)])
def test_one_panel_per_head_four_per_row(h, panels):
    fig = plot_head_patterns(torch.full((h, 3, 3), 1 / 3), "ab\n", title="x")
    assert len(fig.axes) == panels
    shown = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in shown] == [f"head {i}" for i in range(h)]
    assert [t.get_text() for t in shown[0].get_yticklabels()] == ["a", "b", "⏎"]
    assert all(not ax.get_xticks().size for ax in shown[1:])  # labels on the first panel only


def test_slot_grids_show_the_booleans():
    right = torch.zeros(2, 4, dtype=torch.bool)
    right[:, 1] = True
    fig = plot_head_slots({"right": right, "wrong": right.T.reshape(2, 4)}, token=1)
    assert len(fig.axes) == 2
    assert fig.axes[0].get_title() == "right: token 1 lands in"
    assert (fig.axes[0].images[0].get_array() == right.float().numpy()).all()
