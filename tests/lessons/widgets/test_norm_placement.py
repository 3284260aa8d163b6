"""Notebook 06's explorer: its lines, the profiles it draws and its controls."""

import pytest
import torch

from gptlib.lessons.widgets import norm_placement as widget
from gptlib.lessons.widgets.norm_placement import GradientNormExplorer


@pytest.fixture
def fake_profiles(monkeypatch):
    """Replace the (tested elsewhere) gradient computation by fixed profiles."""

    def fake(norm, depth):
        scale = 3.0 if norm == "post" else 1.0
        return scale * torch.linspace(1.0, 2.0, depth, dtype=torch.float64)

    monkeypatch.setattr(widget, "cached_profile", fake)


def test_profiles_need_a_known_choice(fake_profiles):
    with pytest.raises(ValueError, match="choice"):
        widget.gradient_profiles(6, "mid")


@pytest.mark.parametrize(("choice", "norms"), [("Pre-LN", ["pre"]), ("both", ["pre", "post"])])
def test_gradient_profiles_picks_the_placements(fake_profiles, choice, norms):
    result = widget.gradient_profiles(6, choice)
    assert list(result.profiles) == norms and result.depth == 6


def test_controls_redraw(fake_profiles):
    explorer = GradientNormExplorer(depth=4, choice="both")
    assert explorer.lines[0] == "depth = 4" and len(explorer.view.ax.get_lines()) == 2
    explorer.depth.value = 10
    assert "depth = 10" in explorer.lines
    assert "Post-LN / Pre-LN at the last block = 3.00" in explorer.lines
    explorer.choice.value = "Pre-LN"
    assert "Pre-LN last block = 2.000" in explorer.lines
    assert not any(line.startswith("Post-LN") for line in explorer.lines)
    assert len(explorer.view.ax.get_lines()) == 1
    with pytest.raises(ValueError, match="choice"):
        GradientNormExplorer(choice="mid")


def test_cached_profile_is_the_experiment_at_widget_sizes():
    from gptlib.lessons.experiments.norm_placement import init_gradient_profile, toy_data

    expected = init_gradient_profile(
        "post", 2, toy_data(), n_models=widget.WIDGET_MODELS, n_batches=widget.WIDGET_BATCHES
    )
    torch.testing.assert_close(widget.cached_profile("post", 2), expected)
