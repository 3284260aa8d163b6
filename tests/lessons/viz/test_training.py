"""Notebook 08's loss curves: every series, and ln V as a labelled reference line."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

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
    assert ax.get_ylabel() == "cross-entropy (nats per character)"
    plt.close("all")
