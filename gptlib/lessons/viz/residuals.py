"""Plots of notebook 05: activations, gradient flow with and without skips, stream writes."""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure

from gptlib.lessons.experiments.residuals import GradientFlow, StreamWrites


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
    return fig


def plot_gradient_flow(flows: dict[str, GradientFlow], title: str) -> Figure:
    """Per-block gradient norms (log scale), one line per labelled run."""
    fig, ax = plt.subplots(figsize=(7, 3.8))
    for label, flow in flows.items():
        layers = range(1, len(flow.grad_norms) + 1)
        ax.semilogy(layers, flow.grad_norms.tolist(), marker="o", ms=3, label=label)
    ax.set(title=title, xlabel="block (1 = next to the input)", ylabel="gradient norm")
    ax.legend()
    fig.tight_layout()
    return fig


def plot_token_similarity(flows: dict[str, GradientFlow]) -> Figure:
    """Mean cosine similarity between positions after each block, one line per run."""
    fig, ax = plt.subplots(figsize=(7, 3.4))
    for label, flow in flows.items():
        layers = range(1, len(flow.token_similarity) + 1)
        ax.plot(layers, flow.token_similarity.tolist(), marker="o", ms=3, label=label)
    ax.set(
        title="how alike the positions' vectors become",
        xlabel="block",
        ylabel="mean cosine similarity",
        ylim=(-0.05, 1.05),
    )
    ax.legend()
    fig.tight_layout()
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
    ax.set(title="how much each sublayer writes into the stream", ylabel="|update| / |stream|")
    ax.legend()
    fig.tight_layout()
    return fig
