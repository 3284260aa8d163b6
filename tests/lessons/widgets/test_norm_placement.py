"""Notebook 06's widget: its summary lines, rendering and controls."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from gptlib.lessons.widgets import norm_placement as widget  # noqa: E402


@pytest.fixture
def fake_profiles(monkeypatch):
    """Replace the (tested elsewhere) gradient computation by fixed profiles."""

    def fake(norm, depth):
        scale = 3.0 if norm == "post" else 1.0
        return scale * torch.linspace(1.0, 2.0, depth, dtype=torch.float64)

    monkeypatch.setattr(widget, "cached_profile", fake)


def test_summary_lines():
    lines = widget.profile_summary(
        {"pre": torch.tensor([1.0, 0.5]), "post": torch.tensor([1.0, 2.0])}
    )
    assert lines == [
        "depth = 2",
        "Pre-LN first block = 1.000",
        "Pre-LN last block = 0.500",
        "Pre-LN max / min = 2.00",
        "Post-LN first block = 1.000",
        "Post-LN last block = 2.000",
        "Post-LN max / min = 2.00",
        "Post-LN / Pre-LN at the last block = 4.00",
    ]


def test_summary_needs_a_profile():
    with pytest.raises(ValueError, match="at least one"):
        widget.profile_summary({})


@pytest.mark.parametrize(("choice", "n_lines"), [("Pre-LN", 1), ("Post-LN", 1), ("both", 2)])
def test_render_draws_the_chosen_placements(fake_profiles, choice, n_lines):
    fig, lines = widget.render_profiles(6, choice)
    assert len(fig.axes[0].get_lines()) == n_lines
    assert lines[0] == "depth = 6"
    plt.close(fig)


def test_render_rejects_unknown_choice(fake_profiles):
    with pytest.raises(ValueError, match="choice"):
        widget.render_profiles(6, "mid")


def test_controls_redraw(fake_profiles, capsys):
    box = widget.gradient_norm_explorer(depth=4, choice="both")
    slider, toggle = box.children[0].children
    assert "depth = 4" in capsys.readouterr().out
    slider.value = 10
    out = capsys.readouterr().out
    assert "depth = 10" in out and "Post-LN / Pre-LN at the last block = 3.00" in out
    toggle.value = "Pre-LN"
    out = capsys.readouterr().out
    assert "Pre-LN last block = 2.000" in out and "Post-LN" not in out
    plt.close("all")


def test_cached_profile_is_the_experiment_at_widget_sizes():
    from gptlib.lessons.experiments.norm_placement import init_gradient_profile, toy_data

    expected = init_gradient_profile(
        "post", 2, toy_data(), n_models=widget.WIDGET_MODELS, n_batches=widget.WIDGET_BATCHES
    )
    torch.testing.assert_close(widget.cached_profile("post", 2), expected)
