"""The ladder's bars and the heads figure show the numbers they are given, with labelled
reference lines and units."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from gptlib.lessons.experiments.ablation import LADDER, LadderResult, RungResult  # noqa: E402
from gptlib.lessons.experiments.two_lookups import HeadsRun  # noqa: E402
from gptlib.lessons.viz.ablation import plot_heads, plot_ladder  # noqa: E402

LOSSES = (2.5, 3.0, 2.9, 3.1, 2.3, 2.4, 2.45)


def _ladder() -> LadderResult:
    rungs = tuple(RungResult(r.name, 10, v, v, 0.1) for r, v in zip(LADDER, LOSSES, strict=True))
    return LadderResult(rungs, steps=250, tokens_per_step=768)


def test_ladder_bars_losses_gains_and_reference_lines():
    fig = plot_ladder(_ladder(), vocab_size=65, counted_bigram=2.48)
    left, right = fig.axes
    assert [p.get_width() for p in left.patches] == pytest.approx(list(LOSSES))
    assert [t.get_text() for t in left.get_yticklabels()] == [r.name for r in LADDER]
    lines = {line.get_label(): line.get_xdata()[0] for line in left.get_lines()}
    assert lines["uniform guess, ln 65"] == pytest.approx(math.log(65))
    assert lines["counted bigram"] == pytest.approx(2.48)
    assert left.get_xlabel() == "held-out loss (nats per character)"
    gains = [p.get_width() for p in right.patches]
    assert gains == pytest.approx([-0.5, 0.1, -0.2, 0.8, -0.1, -0.05])
    assert "nats per character" in right.get_xlabel()
    assert "250 steps" in fig._suptitle.get_text()
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
