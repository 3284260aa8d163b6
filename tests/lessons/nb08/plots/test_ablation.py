"""The leave-one-out curves and bars and the heads figure show the numbers they are given, with
labelled reference lines and units."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from gptlib.lessons.nb08.experiments.ablation import ROWS, Ablation  # noqa: E402
from gptlib.lessons.nb08.experiments.long_runs import Curves  # noqa: E402
from gptlib.lessons.nb08.experiments.two_lookups import HeadsRun  # noqa: E402
from gptlib.lessons.nb08.plots.ablation import plot_ablation, plot_heads  # noqa: E402

ENDS = {r.name: 2.0 + 0.1 * i for i, r in enumerate(ROWS)}  # full 2.0 … no attention 2.7


def _ablation() -> Ablation:
    runs, held_out = {}, {}
    for name, end in ENDS.items():
        for seed, shift in ((1, -0.02), (2, 0.02)):
            runs[name, seed] = Curves((0, 5, 10), (4, 3, end), (4, 3, end + shift))
            held_out[name, seed] = end + 0.01 + shift
    other = {name: end + 0.3 for name, end in ENDS.items()}
    return Ablation(runs, held_out, 3e-3, (1, 2), 10, 1e-3, other)


def test_ablation_curves_bars_other_rate_and_the_counted_bigram():
    fig = plot_ablation(_ablation(), vocab_size=65, counted_bigram=2.48)
    left, right = fig.axes
    curves = {line.get_label(): line for line in left.get_lines()}
    assert list(curves["full"].get_xdata()) == [5, 10]  # from the first estimate on
    assert list(curves["no MLP"].get_ydata()) == pytest.approx([3.0, 2.3])
    assert curves["counted bigram"].get_ydata()[0] == pytest.approx(2.48)
    assert [p.get_width() for p in right.patches] == pytest.approx(
        [e + 0.01 for e in ENDS.values()]
    )
    crosses = {line.get_label(): line for line in right.get_lines()}
    assert list(crosses["seed 0 at learning rate 0.001"].get_xdata()) == pytest.approx(
        [e + 0.3 for e in ENDS.values()]
    )
    assert [t.get_text() for t in right.get_yticklabels()] == [r.name for r in ROWS]
    assert right.get_xlabel() == "loss on every held-out character (nats)"
    assert right.get_xlim()[1] == pytest.approx(math.log(65))
    assert "after 10 steps" in right.get_title()
    plt.close(fig)


def test_heads_figure_shows_accuracy_and_the_two_weights():
    runs = [
        HeadsRun(1, "learned", 0.4, 0.88, 0.34, 0.33),
        HeadsRun(2, "learned", 0.1, 0.97, 0.95, 0.93),
    ]
    fig = plot_heads(runs)
    left, right = fig.axes
    assert [p.get_height() for p in left.patches] == pytest.approx([0.88, 0.97])
    assert [t.get_text() for t in left.get_xticklabels()] == ["1 head", "2 heads"]
    assert [p.get_height() for p in right.patches] == pytest.approx([0.34, 0.95, 0.33, 0.93])
    labels = [t.get_text() for t in right.get_legend().get_texts()]
    assert labels == ["half of one softmax", "latest letter", "latest digit"]
    plt.close(fig)
