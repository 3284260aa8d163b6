"""Notebook 04's plots: one grid per split method, the held-out loss at each position."""

import matplotlib
import pytest
import torch
from matplotlib.colors import to_rgba

from gptlib.lessons.nb04.plots import plot_head_slots, plot_position_loss

matplotlib.use("Agg")


def test_slot_grids_write_each_slots_token_and_mark_the_chosen_one():
    right = torch.arange(4).repeat(2, 1)  # [h=2, T=4]: slot t holds token t in every head
    wrong = torch.tensor([[0, 0, 1, 1], [2, 2, 3, 3]])
    fig = plot_head_slots({"right": right, "wrong": wrong}, token=1)
    assert len(fig.axes) == 2
    assert fig.axes[1].get_title() == "wrong\nwhich token fills each slot (token 1 red)"
    assert [t.get_text() for t in fig.axes[1].texts] == ["0", "0", "1", "1", "2", "2", "3", "3"]
    assert (fig.axes[1].images[0].get_array() == (wrong == 1).float().numpy()).all()


def test_position_loss_colours_each_group_of_positions():
    groups = {"one layer": [1], "only through the stack": [2, 3], "not at all": [0]}
    fig = plot_position_loss([1.0, 0.01, 0.5, 0.4], groups, [1.4, 0.6, 0.3, 0.3], title="bug")
    ax = fig.axes[0]
    bars = ax.containers[0]
    assert [round(b.get_height(), 6) for b in bars] == [1.0, 0.01, 0.5, 0.4]
    assert [b.get_facecolor() for b in bars] == [
        to_rgba("tab:grey"),
        to_rgba("tab:red"),
        to_rgba("tab:orange"),
        to_rgba("tab:orange"),
    ]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == [*groups, "floor: what the past allows (1.40 at t = 0 to 0.300)"]
    floor_line = ax.get_lines()[0]
    assert list(floor_line.get_ydata()) == [1.4, 0.6, 0.3, 0.3]
    shaded = [p for p in ax.patches if p not in bars]  # one column behind each copying position
    assert [(round(p.get_x(), 6), round(p.get_width(), 6)) for p in shaded] == [(0.5, 1.0)]
    assert "nats per character" in ax.get_ylabel()


def test_position_loss_refuses_more_groups_than_colours():
    with pytest.raises(ValueError, match="at most 4 groups"):
        plot_position_loss([0.0], {str(g): [] for g in range(5)}, [0.3], title="x")
    with pytest.raises(ValueError, match="one floor per position"):
        plot_position_loss([0.0, 1.0], {"a": [0]}, [0.3], title="x")
