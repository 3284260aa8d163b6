"""Notebook 06's explorer: its lines, the profiles it draws and its controls."""

import pytest
import torch

from gptlib.lessons.nb06 import widgets as widget
from gptlib.lessons.nb06.experiments import mean_over_models, toy_data
from gptlib.lessons.nb06.widgets import GradientNormExplorer


def fake_measure(model, inputs, targets):
    """Fixed profiles: Post-LN three times Pre-LN, rising from 1 to 2 over the blocks."""
    scale = 1.0 if type(model.blocks[0]).__name__ == "Block" else 3.0
    return scale * torch.linspace(1.0, 2.0, len(model.blocks), dtype=torch.float64)


def test_profiles_need_a_known_choice():
    with pytest.raises(ValueError, match="choice"):
        widget.gradient_profiles(fake_measure, 6, "mid")


@pytest.mark.parametrize(("choice", "norms"), [("Pre-LN", ["pre"]), ("both", ["pre", "post"])])
def test_gradient_profiles_picks_the_placements(choice, norms):
    result = widget.gradient_profiles(fake_measure, 6, choice)
    assert list(result.profiles) == norms and result.depth == 6


def test_the_profiles_are_the_measurement_on_one_model_and_are_kept():
    calls = []

    def measure(model, inputs, targets):
        calls.append(len(model.blocks))
        return fake_measure(model, inputs, targets)

    cache = {}
    result = widget.gradient_profiles(measure, 2, "Post-LN", cache)
    expected = mean_over_models(fake_measure, "post", 2, toy_data(), widget.WIDGET_MODELS)
    torch.testing.assert_close(result.profiles["post"], expected)
    widget.gradient_profiles(measure, 2, "both", cache)
    assert calls == [2, 2] and set(cache) == {("post", 2), ("pre", 2)}  # post was not redone


def test_the_explorer_runs_the_block_forward_handed_in():
    seen = []

    def block_forward(x, ln1, attn, ln2, mlp, norm):
        seen.append(norm)
        x = x + attn(ln1(x)) if norm == "pre" else ln1(x + attn(x))
        return x + mlp(ln2(x)) if norm == "pre" else ln2(x + mlp(x))

    def measure(model, inputs, targets):
        model(inputs)
        return fake_measure(model, inputs, targets)

    GradientNormExplorer(measure, depth=2, choice="both", block_forward=block_forward)
    assert seen == ["pre", "pre", "post", "post"]  # one model of 2 blocks per placement


def test_controls_redraw():
    explorer = GradientNormExplorer(fake_measure, depth=4, choice="both")
    assert explorer.lines[0] == "depth = 4" and len(explorer.view.ax.get_lines()) == 2
    explorer.depth.value = 10
    assert "depth = 10" in explorer.lines
    assert "Post-LN / Pre-LN at the last block = 3.00" in explorer.lines
    explorer.choice.value = "Pre-LN"
    assert "Pre-LN last block = 2.000" in explorer.lines
    assert not any(line.startswith("Post-LN") for line in explorer.lines)
    assert len(explorer.view.ax.get_lines()) == 1
    with pytest.raises(ValueError, match="choice"):
        GradientNormExplorer(fake_measure, choice="mid")
