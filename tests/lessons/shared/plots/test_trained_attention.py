"""Notebook 08's attention maps: readable labels (>= 8 pt), query/key axes, a colorbar."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from gptlib.lessons.shared.plots.trained_attention import AttentionMapView, plot_attention_grid  # noqa: E402


def test_map_has_one_readable_label_per_character_and_a_colorbar():
    fig = Figure()
    view = AttentionMapView(fig, "ab c")
    weights = torch.tril(torch.ones(4, 4)) / torch.arange(1, 5)[:, None]
    view.update(weights, title="layer 1, head 2")
    assert (view.image.get_array() == weights.numpy()).all()
    labels = view.ax.get_yticklabels()
    assert [t.get_text() for t in labels] == ["a", "b", "␣", "c"]
    assert min(t.get_fontsize() for t in labels + view.ax.get_xticklabels()) >= 8
    assert view.ax.get_xlabel().startswith("key") and view.ax.get_ylabel().startswith("query")
    assert view.ax.get_title() == "layer 1, head 2"
    assert fig.axes[1].get_ylabel() == "attention weight"  # the colorbar


def test_map_refuses_weights_of_another_text():
    with pytest.raises(ValueError, match=r"\[3, 3\]"):
        AttentionMapView(Figure(), "abc").update(torch.eye(4))


def test_attention_grid_has_one_panel_per_layer_and_head():
    fig = plot_attention_grid(torch.rand(2, 3, 4, 4), "abcd")
    panels = fig.axes[:6]
    assert panels[3].get_ylabel() == "layer 1\nquery position"
    assert panels[2].get_title() == "head 2"
    assert panels[4].get_xlabel() == "key position"
    assert fig.axes[6].get_ylabel() == "attention weight"  # the colorbar
    assert fig._suptitle.get_text() == "attention of every layer and head on “abcd”"
    plt.close(fig)


def test_attention_grid_marks_every_tenth_position_on_the_outer_panels():
    text = "ROMEO:\nBut soft, what light through yonder"  # 41 characters, shown whole
    fig = plot_attention_grid(torch.rand(2, 2, 41, 41), text)
    bottom_left, top_right = fig.axes[2], fig.axes[1]
    labels = [t.get_text() for t in bottom_left.get_xticklabels()]
    assert labels == ["0", "10", "20", "30", "40"]
    assert [t.get_text() for t in bottom_left.get_yticklabels()] == labels
    assert all(t.get_text() == "" for t in top_right.get_xticklabels())
    assert min(t.get_fontsize() for t in bottom_left.get_xticklabels()) >= 8
    assert "yonder”" in fig._suptitle.get_text() and "…" not in fig._suptitle.get_text()
    plt.close(fig)
