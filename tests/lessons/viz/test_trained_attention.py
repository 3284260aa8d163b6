"""Notebook 07's attention maps: readable labels (>= 8 pt), query/key axes, a colorbar."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from gptlib.lessons.viz.trained_attention import AttentionMapView, plot_attention_grid  # noqa: E402


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
    assert panels[3].get_ylabel() == "layer 1\nquery ↓" and panels[2].get_title() == "head 2"
    assert panels[4].get_xlabel() == "key →"
    assert fig.axes[6].get_ylabel() == "attention weight"  # the colorbar
    plt.close(fig)
