"""Notebook 08's loss curves: every series, a live run's markers, and ln V as a labelled
reference line."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from gptlib.lessons.nb08.experiments.long_runs import Curves  # noqa: E402
from gptlib.lessons.nb08.plots.training import plot_loss_curves  # noqa: E402


def test_loss_curves_plot_every_series():
    stored = Curves((0, 2), (4.1, 2.4), (4.2, 2.6), losses=(4.0, 3.0, 2.5))
    live = Curves((0, 1), (4.1, 3.1), (4.2, 3.2))
    ax = plot_loss_curves(stored, vocab_size=65, live=live)
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines["held-out (estimate)"].get_ydata()) == [4.2, 2.6]
    assert list(lines["train (estimate)"].get_ydata()) == [4.1, 2.4]
    assert list(lines["training batch"].get_xdata()) == [0, 1, 2]
    assert list(lines["your run, held-out"].get_ydata()) == [4.2, 3.2]
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
