"""Notebook 09's figures: percentage shares computed independently of the report's sums, and
the attention-term plot drawing the ratios it is given."""

import pytest
from matplotlib.figure import Figure

from gptlib.lessons.nb09.experiments.costs import PRESETS, attention_share, cost_report
from gptlib.lessons.nb09.plots import (
    CostView,
    context_label,
    flop_shares,
    parameter_shares,
    plot_attention_share,
)

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
    assert texts[1].get_text() == f"{parameter_shares(report)['FFN (all layers)']:z.1f}%"
    assert [b.get_width() for b in flop_bars] == list(flop_shares(report).values())


def test_context_labels():
    assert [context_label(t) for t in (512, 1024, 4096, 131_072, 1000)] == [
        "512",
        "1K",
        "4K",
        "128K",
        "1,000",
    ]


def test_attention_share_plot_draws_each_ratio_and_the_reference_line():
    contexts = [512, 4096, 32_768]
    shares = [attention_share(PRESETS[n], contexts) for n in ("GPT-2 small", "Llama 2 7B")]
    ax = Figure().subplots()
    plot_attention_share(ax, shares)
    lines = {line.get_label(): line for line in ax.get_lines()}
    for share in shares:
        assert list(lines[share.name].get_ydata()) == list(share.ratios)
        assert list(lines[share.name].get_xdata()) == contexts
    reference = lines["attention term = 2N (x: crossing)"]
    assert list(reference.get_ydata()) == [1.0, 1.0]
    crosses = [line for line in ax.get_lines() if line.get_marker() == "x"]
    assert [c.get_xdata()[0] for c in crosses] == [s.crossing for s in shares]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["512", "4K", "32K"]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert "(tokens)" in ax.get_xlabel()
    with pytest.raises(ValueError, match="at least one"):
        plot_attention_share(ax, [])
