"""Notebook 03's plots: what they draw matches the numbers they are given."""

import matplotlib
import pytest
import torch
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure

from gptlib import causal_mask
from gptlib.lessons.nb03.experiments import Perturbation
from gptlib.lessons.nb03.plots import (
    OutputChangeView,
    plot_mask_ablation,
    plot_masked_attention,
    plot_output_changes,
)
from gptlib.lessons.shared.experiments.mask_ablation import AblationRun

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


def test_output_change_view_colours_the_moved_positions():
    view = OutputChangeView(Figure(), "abcd")
    change = torch.tensor([0.0, 0.0, 0.5, 1e-3])
    view.update(Perturbation(True, 2, change, [2, 3], [0, 1]))
    colours = [bar.get_facecolor() for bar in view.bars]
    assert colours[2] == colours[3] == to_rgba("tab:red")
    assert colours[0] == colours[1] == to_rgba("tab:grey")
    assert [z.get_visible() for z in view.zeros] == [True, True, False, False]
    assert view.bars[2].get_height() == 0.5
    assert list(view.marker.get_xdata()) == [2, 2]
    assert view.ax.get_title() == "with the mask, token 2 changed: 2 positions moved (red)"
    labels = [text.get_text() for text in view.ax.get_legend().get_texts()]
    assert labels == ["the changed token", "tolerance 1e-05"]
    with pytest.raises(ValueError, match="4 positions"):
        view.update(Perturbation(True, 0, torch.zeros(3), [], [0, 1, 2]))


def _run(causal: bool, loss: float) -> AblationRun:
    return AblationRun(
        causal=causal,
        model=None,
        losses=[3.0, loss],
        val_loss=loss,
        prefix_loss=2 * loss,
        position_loss=[loss, loss],
        sample="",
        word_hit_rate=0.5,
    )


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
    assert [t.get_text() for t in ax_b.get_legend().get_texts()] == [
        "entropy floor",
        "with mask",
        "without mask",
    ]
    assert "nats per character" in ax_l.get_ylabel() and "nats per character" in ax_b.get_ylabel()


def test_output_changes_grey_out_what_did_not_move_and_count_what_did():
    moved = torch.tensor([[0.5, 1e-3, 2e-5], [0.0, 0.4, 1e-7], [0.0, 0.0, 0.3]])
    fig = plot_output_changes({True: moved, False: moved + 0.1}, "ab.")
    ax_on, ax_off, _colorbar = fig.axes
    assert ax_on.get_title() == "with the mask: 5 of 9 moved"
    assert ax_off.get_title() == "without the mask: 9 of 9 moved"
    shown = ax_on.images[0].get_array()
    assert shown.mask[1, 0] and shown.mask[1, 2] and not shown.mask[0, 2]  # grey: did not move
    assert shown[0, 0] == pytest.approx(torch.tensor(0.5).log10().item())
    assert [t.get_text() for t in ax_on.get_xticklabels()] == ["a", "b", "."]
