"""viz.saturation: the explorer's view shows the numbers of the result it is given."""

import math

import numpy as np
import pytest
from matplotlib.figure import Figure

from gptlib.lessons.engine.checks import REGISTRY
from gptlib.lessons.nb02.experiments import (
    RetrievalTask,
    saturation,
    saturation_sweep,
    train_retrieval,
)
from gptlib.lessons.nb02.plots import SaturationView, plot_saturation_curves, plot_scaling_runs

MEASURE = REGISTRY["measure-softmax"].reference
CURVES = saturation_sweep([1, 16, 256], MEASURE, n_queries=32, n_keys=16)


def test_view_update_shows_the_result():
    view = SaturationView(Figure(), CURVES)
    result = saturation(256, False, MEASURE)
    view.update(result)
    heights = [bar.get_height() for bar in view.bars]
    np.testing.assert_allclose(heights, result.weights.numpy(), rtol=1e-6)
    counts = view.histogram.get_data().values
    assert counts.sum() == result.scores.numel()  # ±4 std holds every score drawn here
    assert view.marker.get_data()[0][0] == 256
    assert "max weight 0.9" in view.title.get_text()
    assert [line.get_xdata()[0] for line in view.std_lines] == pytest.approx(
        [-result.score_std, result.score_std]
    )


def test_view_follows_a_change_of_setting():
    view = SaturationView(Figure(), CURVES)
    view.update(saturation(256, False, MEASURE))
    scaled = saturation(256, True, MEASURE)
    view.update(scaled)
    half_width = 4 * max(1.0, scaled.score_std)  # four standard deviations each side
    assert view.hist_ax.get_xlim() == pytest.approx((-half_width, half_width))
    assert half_width < 4.2
    assert view.title.get_text().startswith("d_k = 256, scaled")


def test_reference_lines_are_labelled():
    view = SaturationView(Figure(), CURVES, n_keys=16)
    (uniform,) = view.weights_ax.get_lines()
    assert uniform.get_label() == "uniform 1/16" and uniform.get_ydata()[0] == 1 / 16
    curve_labels = [line.get_label() for line in view.marker.axes.get_lines()]
    assert {"one-hot", "uniform 1/16"} <= set(curve_labels)
    assert view.std_lines[0].get_label() == "± one std"


def test_view_refuses_a_result_with_another_number_of_keys():
    view = SaturationView(Figure(), CURVES, n_keys=16)
    with pytest.raises(ValueError, match="n_keys=8"):
        view.update(saturation(4, True, MEASURE, n_keys=8))


def test_curves_plot_one_line_per_mode_in_each_panel_and_labelled_levels():
    fig = plot_saturation_curves(CURVES, Figure())
    assert len(fig.axes) == 3
    for ax in fig.axes:
        curves = [line for line in ax.lines if line.get_marker() == "o"]
        assert len(curves) == 2
        assert list(curves[0].get_xdata()) == [1, 16, 256]
    np.testing.assert_allclose(
        fig.axes[2].lines[0].get_ydata(), [r.grad_norm for r in CURVES[False]]
    )
    levels = {
        line.get_label(): line.get_ydata()[0]
        for ax in fig.axes
        for line in ax.lines
        if line.get_marker() != "o"
    }
    assert levels == pytest.approx(
        {"one-hot: 1": 1, "uniform: 1/16": 1 / 16, "uniform: ln 16 = 2.77": math.log(16)}
    )


def test_scaling_runs_plot_losses_and_weights_with_labelled_levels():
    task = RetrievalTask(n_pairs=4, n_keys=8, n_values=4)
    runs = {
        d_k: {
            s: train_retrieval(d_k, s, 25, batch_size=4, d_model=4, task=task)
            for s in (False, True)
        }
        for d_k in (2, 8)
    }
    fig = plot_scaling_runs(runs, Figure())
    assert len(fig.axes) == 4
    loss_ax, weight_ax = fig.axes[0], fig.axes[2]  # d_k = 2: loss above, weight below
    np.testing.assert_allclose(loss_ax.lines[0].get_ydata(), runs[2][False].losses.numpy())
    np.testing.assert_allclose(weight_ax.lines[1].get_ydata(), runs[2][True].answer_weight)
    assert loss_ax.get_ylabel() == "loss (nats per answer token)"
    assert "guessing: ln 4 = 1.39" in [line.get_label() for line in loss_ax.lines]
    levels = {line.get_label(): line.get_ydata()[0] for line in weight_ax.lines[2:]}
    assert levels == {"reads it alone: 1": 1, "at random: 1/4": 0.25}
    assert fig.axes[1].get_title() == "d_k = 8: loss"
