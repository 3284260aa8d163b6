"""The ladder's curves and bars and the heads figure show the numbers
they are given, with labelled reference lines and units."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from gptlib.lessons.nb08.experiments.ablation import LADDER, Ladder  # noqa: E402
from gptlib.lessons.nb08.experiments.long_runs import Curves  # noqa: E402
from gptlib.lessons.nb08.experiments.two_lookups import HeadsRun  # noqa: E402
from gptlib.lessons.nb08.plots.ablation import plot_heads, plot_ladder  # noqa: E402

ENDS = {r.name: 2.5 - 0.1 * i for i, r in enumerate(LADDER)}  # bigram 2.5 … full 2.0


def _ladder() -> Ladder:
    runs = {}
    for name, end in ENDS.items():
        for seed, shift in ((1, -0.02), (2, 0.02)):
            runs[name, seed] = Curves((0, 5, 10), (4, 3, end), (4, 3, end + shift))
    return Ladder(runs, 3e-3, (1, 2), steps=10)


def test_ladder_curves_bars_and_the_counted_bigram():
    fig = plot_ladder(_ladder(), vocab_size=65, counted_bigram=2.48)
    left, right = fig.axes
    curves = {line.get_label(): line for line in left.get_lines()}
    assert list(curves["bigram"].get_xdata()) == [5, 10]  # from the first estimate on
    assert list(curves["+ LayerNorm (full)"].get_ydata()) == pytest.approx([3.0, 2.0])
    assert curves["counted bigram"].get_ydata()[0] == pytest.approx(2.48)
    assert [p.get_width() for p in right.patches] == pytest.approx(list(ENDS.values()))
    assert [t.get_text() for t in right.get_yticklabels()] == [r.name for r in LADDER]
    assert right.get_xlabel() == "held-out loss (nats per character)"
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
