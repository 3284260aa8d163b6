"""Notebook 06's plots draw what they are given."""

import matplotlib

matplotlib.use("Agg")

import math  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from gptlib.lessons.nb06 import plots as viz  # noqa: E402
from gptlib.lessons.nb06.experiments import ARMS, LearningRateGrid  # noqa: E402


def test_init_gradient_plot_has_one_panel_per_depth_and_shows_every_point():
    profiles = {
        ("pre", 2): torch.tensor([1.0, 1.0]),
        ("post", 2): torch.tensor([2.0, 3.0]),
        ("pre", 4): torch.tensor([1.0, 1.0, 1.0, 1.0]),
        ("post", 4): torch.tensor([2.0, 2.0, 2.0, 9.0]),
    }
    fig = viz.plot_init_gradients(profiles)
    assert [ax.get_title() for ax in fig.axes] == ["2 blocks", "4 blocks"]
    assert all(len(ax.get_lines()) == 2 for ax in fig.axes)
    assert fig.axes[0].get_ylim()[1] >= 9.0  # shared axis tall enough for the largest value
    plt.close(fig)


def test_training_plot_has_each_curve_and_the_floor():
    fig = viz.plot_training({"a": torch.tensor([3.0, 2.0]), "b": torch.tensor([3.0, 2.9])}, 2.8)
    lines = fig.axes[0].get_lines()
    assert len(lines) == 3 and list(lines[2].get_ydata()) == [2.8, 2.8]
    assert fig.axes[0].get_ylabel() == "training loss (nats per character)"
    plt.close(fig)


def test_profile_view_redraws_one_line_per_placement():
    view = viz.GradientProfileView(plt.figure())
    view.update({"pre": torch.tensor([1.0, 0.5, 0.25]), "post": torch.tensor([1.0, 2.0, 3.0])})
    lines = view.ax.get_lines()
    assert [line.get_label() for line in lines] == ["Pre-LN, L=3", "Post-LN, L=3"]
    assert list(lines[1].get_ydata()) == [1.0, 2.0, 3.0]
    assert view.ax.get_title() == "gradient norm per block at initialisation (3 blocks)"
    view.update({"pre": torch.tensor([1.0, 2.0])})
    assert len(view.ax.get_lines()) == 1 and "(2 blocks)" in view.ax.get_title()
    with pytest.raises(ValueError, match="at least one profile"):
        view.update({})
    plt.close("all")


def test_learning_rate_labels():
    assert [viz.lr_label(lr) for lr in (1e-3, 3e-3, 1e-2, 3e-2)] == ["1e-3", "3e-3", "1e-2", "3e-2"]


def test_grid_heatmaps_share_one_scale_and_label_every_cell():
    curves = torch.full((3, 2, 2, 2, 12), 1.5)
    curves[1, 1, 1] = 2.8  # stalled at the floor
    curves[2, 0, 0, 1, 5:] = math.nan  # one seed diverged
    grid = LearningRateGrid(tuple(ARMS), (2, 8), (1e-3, 3e-2), (0, 1), 12, 4, curves, 2.8)
    fig = viz.plot_learning_rate_grid(grid)
    panels = [ax for ax in fig.axes if ax.get_title() in ARMS]
    assert [ax.get_title() for ax in panels] == list(ARMS)
    assert len({ax.get_images()[0].get_clim() for ax in panels}) == 1  # one colour scale
    texts = [[t.get_text() for t in ax.texts] for ax in panels]
    assert texts[0] == ["1.50"] * 4
    assert "2.80\nstalled" in texts[1]
    assert "diverged" in texts[2]
    assert [t.get_text() for t in panels[0].get_xticklabels()] == ["1e-3", "3e-2"]
    colorbar = next(ax for ax in fig.axes if ax not in panels)
    assert "unigram entropy 2.80" in colorbar.get_ylabel()
    assert "nats per character" in colorbar.get_ylabel()
    plt.close(fig)
