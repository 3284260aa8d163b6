"""Notebook 07's plots draw what they are given (loss curves, bars, attention heatmap)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from gptlib.lessons.viz.sampling import plot_next_char_distribution, printable  # noqa: E402
from gptlib.lessons.viz.trained_attention import plot_attention_grid, plot_attention_map  # noqa: E402
from gptlib.lessons.viz.training import plot_loss_curves  # noqa: E402
from gptlib.train import History  # noqa: E402


def test_loss_curves_plot_every_series():
    h = History(step=[0, 1, 2], train_loss=[4.0, 3.0, 2.5], lr=[1, 1, 1],
                eval_step=[0, 2], eval_train_loss=[4.1, 2.4], eval_val_loss=[4.2, 2.6])  # fmt: skip
    ax = plot_loss_curves(h, vocab_size=65)
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines["held-out"].get_ydata()) == [4.2, 2.6]
    assert list(lines["training batch"].get_xdata()) == [0, 1, 2]
    assert "ln V = ln 65" in lines
    plt.close("all")


def test_bars_show_the_most_likely_characters_first():
    ax = plot_next_char_distribution("ab \n", torch.tensor([0.1, 0.2, 0.3, 0.4]), top=3)
    heights = [p.get_height() for p in ax.patches]
    assert heights == [0.4000000059604645, 0.30000001192092896, 0.20000000298023224]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["↵", "␣", "b"]
    assert printable("x") == "x"
    plt.close("all")


def test_attention_heatmap_has_one_label_per_character():
    ax = plot_attention_map(torch.eye(3), "abc")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b", "c"]
    assert ax.images[0].get_array().shape == (3, 3)
    plt.close("all")


def test_attention_grid_has_one_panel_per_layer_and_head():
    fig = plot_attention_grid(torch.rand(2, 3, 4, 4), "abcd")
    assert len(fig.axes) == 6
    assert fig.axes[3].get_ylabel() == "layer 1" and fig.axes[2].get_title() == "head 2"
    plt.close("all")
