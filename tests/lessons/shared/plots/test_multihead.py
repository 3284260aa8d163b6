"""The per-head attention panels (notebooks 03 and 04)."""

import matplotlib
import pytest
import torch
from matplotlib.figure import Figure

from gptlib.lessons.shared.plots.multihead import HeadPatternsView

matplotlib.use("Agg")


@pytest.mark.parametrize(("max_heads", "h", "rows"), [(1, 1, 1), (4, 3, 1), (8, 8, 2), (8, 2, 2)])
def test_view_shows_one_panel_per_head_four_per_row(max_heads, h, rows):
    view = HeadPatternsView(Figure(), "ab\n", max_heads=max_heads)
    assert (
        len(view.axes) == max_heads
        and len({round(ax.get_position().y0, 6) for ax in view.axes}) == rows
    )
    weights = torch.softmax(torch.randn(h, 3, 3), -1)
    view.update(weights, title="t")
    assert [ax.get_visible() for ax in view.axes] == [i < h for i in range(max_heads)]
    for i in range(h):
        assert (view.images[i].get_array() == weights[i].numpy()).all()
    assert view.title.get_text() == "t"
    assert [t.get_text() for t in view.axes[0].get_yticklabels()] == ["a", "b", "⏎"]
    assert all(not ax.get_xticks().size for ax in view.axes[1:])  # labels on the first only
    first = view.axes[0]
    assert min(t.get_fontsize() for t in first.get_xticklabels() + first.get_yticklabels()) >= 8
    assert (first.get_xlabel(), first.get_ylabel()) == ("key", "query")
    assert view.axes[-1].figure.axes[-1].get_ylabel() == "attention weight"  # the colorbar


def test_view_refuses_more_heads_than_panels():
    with pytest.raises(ValueError, match="4 panels"):
        HeadPatternsView(Figure(), "abc", max_heads=4).update(torch.zeros(8, 3, 3))


@pytest.mark.parametrize(("max_heads", "T", "cols"), [(8, 21, 4), (4, 32, 2), (1, 5, 4)])
def test_figsize_leaves_an_8pt_line_per_character(max_heads, T, cols):
    fig = Figure(figsize=HeadPatternsView.figsize(max_heads, T, cols))
    view = HeadPatternsView(fig, "x" * T, max_heads=max_heads, cols=cols)
    ax = view.axes[0]
    ax.apply_aspect()
    width, height = fig.get_size_inches()
    box = ax.get_position()
    points_per_row = box.height * height * 72 / T
    assert points_per_row >= 0.95 * HeadPatternsView.LABEL_PT
    assert box.width * width == pytest.approx(box.height * height)  # square cells
