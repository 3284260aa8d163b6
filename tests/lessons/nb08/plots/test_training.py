"""Notebook 08's loss curves: every series on the run's own steps, a shaded span, and ln V as a
labelled reference line."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from gptlib.lessons.nb08.experiments.long_runs import Curves  # noqa: E402
from gptlib.lessons.nb08.plots.training import plot_loss_curves  # noqa: E402


def test_loss_curves_plot_every_series():
    stored = Curves((0, 2), (4.1, 2.4), (4.2, 2.6), losses=(4.0, 3.0, 2.5))
    ax = plot_loss_curves(stored, vocab_size=65, span=(1, "the steps trained here"))
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines["held-out (estimate)"].get_ydata()) == [4.2, 2.6]
    assert list(lines["train (estimate)"].get_ydata()) == [4.1, 2.4]
    assert list(lines["training batch"].get_xdata()) == [0, 1, 2]
    assert [p.get_label() for p in ax.patches] == ["the steps trained here"]
    span = ax.patches[0].get_bbox()  # in data units along x
    assert (span.x0, span.x1) == (0, 1)
    assert ax.get_xlim() == (0, 3)  # the run's own steps: three batches
    assert "ln V = ln 65" in lines
    assert ax.get_ylabel() == "cross-entropy (nats per character)"
    plt.close("all")


def test_a_run_without_batch_losses_draws_only_its_estimates():
    ax = plot_loss_curves(Curves((0, 5), (3.0, 2.0), (3.1, 2.2)))
    assert [line.get_label() for line in ax.get_lines()] == [
        "train (estimate)",
        "held-out (estimate)",
    ]
    plt.close("all")
