"""Notebook 08's cost figure: percentage shares computed independently of the report's sums."""

import pytest
from matplotlib.figure import Figure

from gptlib.lessons.experiments.costs import PRESETS, cost_report
from gptlib.lessons.viz.costs import CostView, flop_shares, parameter_shares

LLAMA = PRESETS["Llama 2 7B"]  # 32 layers, d = 4096, d_ff = 11008, V = 32000, T = 4096, untied


def test_shares_of_llama_2_7b():
    report = cost_report(LLAMA, 2e12)
    n = 6_738_415_616
    shares = parameter_shares(report)
    assert shares["attention (all layers)"] == pytest.approx(100 * 32 * 4 * 4096**2 / n)
    assert shares["FFN (all layers)"] == pytest.approx(100 * 32 * 3 * 4096 * 11008 / n)
    assert shares["embeddings"] == pytest.approx(100 * 2 * 32000 * 4096 / n)
    assert sum(shares.values()) == pytest.approx(100)
    attention = 4 * 32 * 4096 * 4096
    assert flop_shares(report)["attention: 4·L·T·d"] == pytest.approx(
        100 * attention / (2 * n + attention)
    )


def test_view_draws_the_shares_with_labels():
    report = cost_report(LLAMA, 2e12)
    view = CostView(Figure())
    view.update(report)
    (bars, texts), (flop_bars, _) = view.panels
    assert [b.get_width() for b in bars] == list(parameter_shares(report).values())
    assert texts[1].get_text() == f"{parameter_shares(report)['FFN (all layers)']:.1f}%"
    assert [b.get_width() for b in flop_bars] == list(flop_shares(report).values())
