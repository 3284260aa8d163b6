"""Notebook 03's plots: what they draw matches the numbers they are given."""

import matplotlib
import torch
from matplotlib.colors import to_rgba

from gptlib import causal_mask
from gptlib.experiments.mask_ablation import AblationRun
from gptlib.viz.causal_mask import plot_mask_ablation, plot_masked_attention, plot_output_change

matplotlib.use("Agg")


def test_masked_attention_annotates_minus_infinity_and_exact_zeros():
    scores = torch.randn(3, 3)
    masked = scores.masked_fill(~causal_mask(3), float("-inf"))
    weights = torch.softmax(masked, dim=-1)
    fig = plot_masked_attention(masked, weights, "ab ")
    ax_s, ax_w = fig.axes
    assert sum(t.get_text() == "−∞" for t in ax_s.texts) == 3
    assert sum(t.get_text() == "0" for t in ax_w.texts) == 3
    assert [t.get_text() for t in ax_s.get_xticklabels()] == ["a", "b", "␣"]


def test_output_change_colours_the_moved_positions():
    change = torch.tensor([0.0, 0.0, 0.5, 1e-3])
    ax = plot_output_change(change, 2, "abcd", title="t")
    colours = [bar.get_facecolor() for bar in ax.patches]
    assert colours[2] == colours[3] == to_rgba("tab:red")
    assert colours[0] == colours[1] == to_rgba("tab:grey")
    assert [t.get_text() for t in ax.texts] == ["0", "0"]
    assert ax.get_title() == "t"


def _run(causal: bool, loss: float) -> AblationRun:
    return AblationRun(causal, None, [3.0, loss], loss, 2 * loss, "", 0.5, 0.0)


def test_mask_ablation_plots_both_runs_and_the_floor():
    fig = plot_mask_ablation(_run(True, 0.5), _run(False, 0.05), floor=0.3)
    ax_l, ax_b = fig.axes
    assert [line.get_label() for line in ax_l.lines] == [
        "with mask",
        "without mask",
        "entropy floor 0.300",
    ]
    heights = sorted(round(bar.get_height(), 6) for bar in ax_b.patches)
    assert heights == [0.05, 0.1, 0.5, 1.0]
