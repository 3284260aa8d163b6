"""Widget of notebook 06: per-block gradient norms at initialisation, by depth and norm placement.

A depth slider and a Pre-LN / Post-LN / both toggle redraw the profiles computed by the pure,
unit-tested `gptlib.lessons.experiments.norm_placement.init_gradient_profile`. Each (norm, depth) is
computed once and cached, so returning to a setting is instant.
"""

from __future__ import annotations

from functools import lru_cache

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure

from gptlib.lessons.experiments.norm_placement import init_gradient_profile, toy_data
from gptlib.lessons.viz.norm_placement import NORM_STYLE, draw_gradient_profile

# One model and one batch (the main experiment averages 3 × 2), so a new depth draws fast.
WIDGET_MODELS, WIDGET_BATCHES = 1, 1
NORM_CHOICES = {"Pre-LN": ("pre",), "Post-LN": ("post",), "both": ("pre", "post")}


@lru_cache(maxsize=1)
def _data():
    return toy_data()


@lru_cache(maxsize=128)
def cached_profile(norm: str, depth: int) -> torch.Tensor:
    """`init_gradient_profile` at the widget's sample sizes, memoised per (norm, depth)."""
    return init_gradient_profile(
        norm, depth, _data(), n_models=WIDGET_MODELS, n_batches=WIDGET_BATCHES
    )


def profile_summary(profiles: dict[str, torch.Tensor]) -> list[str]:
    """Key numbers of per-block profiles {"pre"|"post": [L]} as `name = value` lines."""
    if not profiles:
        raise ValueError("profile_summary needs at least one profile ('pre' or 'post')")
    depth = len(next(iter(profiles.values())))
    lines = [f"depth = {depth}"]
    for norm, profile in profiles.items():
        label = NORM_STYLE[norm][1]
        lines += [
            f"{label} first block = {profile[0]:.3f}",
            f"{label} last block = {profile[-1]:.3f}",
            f"{label} max / min = {profile.max() / profile.min():.2f}",
        ]
    if {"pre", "post"} <= profiles.keys():
        ratio = profiles["post"][-1] / profiles["pre"][-1]
        lines.append(f"Post-LN / Pre-LN at the last block = {ratio:.2f}")
    return lines


def render_profiles(depth: int, choice: str = "both") -> tuple[Figure, list[str]]:
    """Figure and summary lines for `depth` blocks and a `NORM_CHOICES` key."""
    if choice not in NORM_CHOICES:
        raise ValueError(f"choice must be one of {list(NORM_CHOICES)}, got {choice!r}")
    profiles = {norm: cached_profile(norm, depth) for norm in NORM_CHOICES[choice]}
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for norm, profile in profiles.items():
        draw_gradient_profile(ax, profile, norm)
    ax.set(
        title=f"gradient norm per block at initialisation ({depth} blocks)",
        xlabel="block (1 = next to the input)",
        ylabel="gradient norm",
        ylim=(0, None),
    )
    ax.legend()
    fig.tight_layout()
    return fig, profile_summary(profiles)


def show_profiles(depth: int = 12, choice: str = "both") -> None:
    """Static rendering: draw the figure and print its key numbers (what the widget shows)."""
    fig, lines = render_profiles(depth, choice)
    plt.show()
    plt.close(fig)
    print("\n".join(lines))


def gradient_norm_explorer(depth: int = 12, choice: str = "both") -> widgets.VBox:
    """Depth slider (2–24 blocks) and norm toggle over `render_profiles`."""
    slider = widgets.IntSlider(
        value=depth, min=2, max=24, step=2, description="depth", continuous_update=False
    )
    toggle = widgets.ToggleButtons(options=list(NORM_CHOICES), value=choice, description="norm")
    out = widgets.Output()

    def redraw(_change=None) -> None:
        with out:
            out.clear_output(wait=True)
            show_profiles(slider.value, toggle.value)

    slider.observe(redraw, names="value")
    toggle.observe(redraw, names="value")
    redraw()
    return widgets.VBox([widgets.HBox([slider, toggle]), out])
