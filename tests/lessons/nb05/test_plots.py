"""Notebook 05's plots draw what they are given."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from gptlib.lessons.engine.figures import description  # noqa: E402
from gptlib.lessons.nb05 import plots as viz  # noqa: E402
from gptlib.lessons.nb05.experiments import GradientFlow, StreamWrites  # noqa: E402


def _flow(values):
    t = torch.tensor(values, dtype=torch.float64)
    return GradientFlow(
        grad_norms=t,
        stream_norms=t,
        outputs=torch.zeros(len(values), 1, 2, 3),
        errors=t,
        weight_grads=t,
        bias_grads=t,
        final_norm_gain=1.0,
    )


def test_activation_plot_has_a_value_and_a_slope_line_per_activation():
    x = torch.linspace(-1, 1, 5)
    fig = viz.plot_activations(x, {"A": (x, x), "B": (x, x)})
    assert [len(ax.get_lines()) for ax in fig.axes] == [2 + 2, 2 + 2]  # two curves + axis lines
    plt.close(fig)


def test_gradient_flow_plot_is_log_scaled_with_one_line_per_run():
    fig = viz.plot_gradient_flow({"a": _flow([1.0, 2.0]), "b": _flow([1e-30, 1.0])}, "t")
    (ax,) = fig.axes
    assert ax.get_yscale() == "log" and len(ax.get_lines()) == 2  # above float32's limits
    assert list(ax.get_lines()[1].get_ydata()) == [1e-30, 1.0]
    ticks = [t for t in ax.get_yticks() if ax.get_ylim()[0] <= t <= ax.get_ylim()[1]]
    assert ticks == [10.0**e for e in range(-30, 6, 5)]  # round decades
    plt.close(fig)


def test_gradient_flow_plot_marks_where_float32_underflows():
    fig = viz.plot_gradient_flow({"a": _flow([1e-112, 1e-40, 1.0])}, "t")
    (ax,) = fig.axes
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == [
        "a",
        "float32's smallest normal number (1.2e-38)",
        "float32's smallest positive number (1.4e-45)",
    ]
    assert ax.get_lines()[2].get_ydata()[0] == 2.0**-149
    assert [t.get_text() for t in ax.get_yticklabels()][:2] == ["$10^{-120}$", "$10^{-100}$"]
    plt.close(fig)


def test_decade_ticks_are_round_and_few():
    assert viz.decade_ticks(6e-112, 30.0) == [10.0**e for e in range(-120, 21, 20)]
    assert viz.decade_ticks(0.5, 0.7) == [0.1, 1.0]
    assert len(viz.decade_ticks(1e-300, 1e300, max_ticks=8)) <= 8


def test_similarity_plot():
    fig = viz.plot_token_similarity({"a": torch.tensor([0.25, 0.5, 1.0])})
    lines = fig.axes[0].get_lines()
    assert list(lines[0].get_ydata()) == [0.25, 0.5, 1.0]
    assert lines[1].get_label() == "every position points the same way"
    plt.close(fig)


def test_stream_writes_plot_has_one_bar_per_sublayer_and_model():
    w = StreamWrites(
        embedding=torch.zeros(1),
        updates=torch.zeros(1),
        final=torch.zeros(1),
        relative=torch.tensor([0.1, 0.2]),
        names=("attn 1", "mlp 1"),
    )
    fig = viz.plot_stream_writes({"x": w, "y": w})
    assert len(fig.axes[0].patches) == 4
    plt.close(fig)


def test_gradient_flow_plot_draws_the_weights_alone_dashed_for_the_runs_named():
    flow = GradientFlow(
        grad_norms=torch.tensor([1e-10, 1.0], dtype=torch.float64),
        stream_norms=torch.ones(2, dtype=torch.float64),
        outputs=torch.zeros(2, 1, 2, 3),
        errors=torch.ones(2, dtype=torch.float64),
        weight_grads=torch.tensor([1e-50, 2e-50], dtype=torch.float64),
        bias_grads=torch.ones(2, dtype=torch.float64),
        final_norm_gain=1.0,
    )
    fig = viz.plot_gradient_flow({"a": flow}, "t", weights_of=("a",))
    (ax,) = fig.axes
    total, weights = ax.get_lines()[:2]
    assert weights.get_label() == "a: weights only" and weights.get_linestyle() == "--"
    assert list(weights.get_ydata()) == [1e-50, 2e-50]
    assert weights.get_color() == total.get_color()
    assert ax.get_ylim()[0] <= 1e-50  # the axis reaches the weights' line
    assert "the gradient of a's weight matrices alone" in description(fig)
    plt.close(fig)
    with pytest.raises(ValueError, match="not in flows"):
        viz.plot_gradient_flow({"a": flow}, "t", weights_of=("b",))
