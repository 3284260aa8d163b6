"""Plots of notebook 05: activations, gradient flow with and without skips, stream writes."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure

from gptlib.lessons.engine.figures import describe
from gptlib.lessons.nb05.experiments import GradientFlow, StreamWrites


def plot_activations(
    x: torch.Tensor, curves: dict[str, tuple[torch.Tensor, torch.Tensor]]
) -> Figure:
    """Left: φ(x) for each activation; right: its slope φ'(x), the factor the gradient gets."""
    fig, (ax_value, ax_slope) = plt.subplots(1, 2, figsize=(10, 3.6))
    for name, (y, slope) in curves.items():
        ax_value.plot(x.tolist(), y.tolist(), label=name)
        ax_slope.plot(x.tolist(), slope.tolist(), label=name)
    ax_value.set(title="activation φ(x)", xlabel="x")
    ax_slope.set(title="slope φ'(x) (what backprop multiplies by)", xlabel="x")
    for ax in (ax_value, ax_slope):
        ax.axhline(0, color="grey", lw=0.5)
        ax.axvline(0, color="grey", lw=0.5)
        ax.legend()
    fig.tight_layout()
    describe(
        fig,
        f"Two panels over x from {x.min().item():zg} to {x.max().item():zg}, one line per "
        f"activation ({'; '.join(curves)}): on the left the activation φ(x), on the right its "
        "slope φ'(x), the factor backpropagation multiplies the gradient by.",
    )
    return fig


# float32's smallest positive numbers: below the first, precision is lost; below the second,
# a value is exactly 0.
FLOAT32_LIMITS = {
    "float32's smallest normal number (1.2e-38)": torch.finfo(torch.float32).tiny,
    "float32's smallest positive number (1.4e-45)": 2.0**-149,
}


def decade_ticks(low: float, high: float, max_ticks: int = 8) -> list[float]:
    """Powers of ten spanning [low, high], every 1, 2, 5, 10, 20, 50 ... decades: round ticks.

    The step is the smallest of those that keeps the count at or under `max_ticks`.
    """
    if not 0 < low <= high:
        raise ValueError(f"need 0 < low <= high, got {low}, {high}")
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    step = next(
        m * 10**k
        for k in range(6)
        for m in (1, 2, 5)
        if (last - first) / (m * 10**k) + 1 <= max_ticks
    )
    first, last = step * math.floor(first / step), step * math.ceil(last / step)
    return [10.0**e for e in range(first, last + 1, step)]


def plot_gradient_flow(
    flows: dict[str, GradientFlow], title: str, weights_of: tuple[str, ...] = ()
) -> Figure:
    """Per-block gradient norms (log scale, round-decade ticks), one line per labelled run,
    with float32's smallest normal and smallest positive number marked when in range. For each
    run named in `weights_of`, its weight matrices' gradient alone, dashed in the run's colour."""
    unknown = [label for label in weights_of if label not in flows]
    if unknown:
        raise ValueError(f"weights_of names runs not in flows: {unknown}; runs: {list(flows)}")
    fig, ax = plt.subplots(figsize=(8, 4.4))
    for label, flow in flows.items():
        layers = range(1, len(flow.grad_norms) + 1)
        (line,) = ax.semilogy(layers, flow.grad_norms.tolist(), marker="o", ms=3, label=label)
        if label in weights_of:
            ax.semilogy(
                layers,
                flow.weight_grads.tolist(),
                ls="--",
                marker="o",
                ms=3,
                color=line.get_color(),
                label=f"{label}: weights only",
            )
    values = torch.cat(
        [flow.grad_norms for flow in flows.values()]
        + [flows[label].weight_grads for label in weights_of]
    )
    low, high = float(values.min()), float(values.max())
    for (label, limit), style in zip(FLOAT32_LIMITS.items(), ("--", ":"), strict=True):
        if low < limit:
            ax.axhline(limit, color="black", ls=style, lw=1, label=label)
    ticks = decade_ticks(low, high)
    ax.set_yticks(ticks, [f"$10^{{{round(math.log10(t))}}}$" for t in ticks])
    ax.set_yticks([], minor=True)
    ax.set_ylim(ticks[0], ticks[-1])
    ax.set(title=title, xlabel="block (1 = next to the input)", ylabel="gradient norm")
    ax.legend(fontsize=8, loc="center left")  # clear of the lines near both ends
    fig.tight_layout()
    marks = [
        f"; a {style} line marks {label}"
        for (label, limit), style in zip(FLOAT32_LIMITS.items(), ("dashed", "dotted"), strict=True)
        if low < limit
    ]
    describe(
        fig,
        f"{title}: the gradient norm reaching each block (block 1 next to the input; log scale), "
        f"one line per run ({'; '.join(flows)})"
        + "".join(
            f"; dashed in its colour, the gradient of {label}'s weight matrices alone"
            for label in weights_of
        )
        + f"{''.join(marks)}.",
    )
    return fig


def plot_token_similarity(similarities: dict[str, torch.Tensor]) -> Figure:
    """Mean cosine similarity between positions after each block [L], one line per run."""
    fig, ax = plt.subplots(figsize=(7, 3.4))
    for label, similarity in similarities.items():
        layers = range(1, len(similarity) + 1)
        ax.plot(layers, similarity.tolist(), marker="o", ms=3, label=label)
    ax.axhline(1.0, color="grey", ls="--", lw=1, label="every position points the same way")
    ax.set(
        title="how alike the positions' vectors become",
        xlabel="block (1 = next to the input)",
        ylabel="mean cosine similarity",
        ylim=(-0.05, 1.05),
    )
    ax.legend(fontsize=8)
    fig.tight_layout()
    describe(
        fig,
        "The mean cosine similarity between the positions' vectors after each block (block 1 "
        f"next to the input), one line per run ({'; '.join(similarities)}); a dashed line at 1 "
        "marks every position pointing the same way.",
    )
    return fig


def plot_stream_writes(writes: dict[str, StreamWrites]) -> Figure:
    """Grouped bars: |update| / |stream| for every sublayer, one colour per labelled model."""
    fig, ax = plt.subplots(figsize=(8, 3.6))
    width = 0.8 / len(writes)
    for k, (label, w) in enumerate(writes.items()):
        positions = [i + (k - (len(writes) - 1) / 2) * width for i in range(len(w.names))]
        ax.bar(positions, w.relative.tolist(), width=width, label=label)
    names = next(iter(writes.values())).names
    ax.set_xticks(range(len(names)), names)
    ax.set_yscale("log")
    ax.axhline(1.0, color="grey", ls="--", lw=1, label="update as large as the stream")
    ax.set(title="how much each sublayer writes into the stream", ylabel="|update| / |stream|")
    ax.legend()
    fig.tight_layout()
    describe(
        fig,
        "Grouped bars on a log scale: how large each sublayer's update is next to the residual "
        f"stream it is added to (|update| / |stream|), for the {len(names)} sublayers from "
        f"{names[0]} to {names[-1]}, one colour per model ({'; '.join(writes)}); a dashed line "
        "at 1 marks an update as large as the stream.",
    )
    return fig
