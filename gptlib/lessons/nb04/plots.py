"""Notebook 04's plots: the (head, position) slots a token reaches after a head split, and the
held-out loss at each position of the reshape-bug model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from gptlib.lessons.engine.figures import describe, spans


def plot_head_slots(grids: dict[str, torch.Tensor], token: int) -> Figure:
    """Grids [h, T] of token indices, one per split method: the token whose features fill each
    (head, slot), written in its cell; the slots of `token` in red."""
    fig, axes = plt.subplots(
        1, len(grids), figsize=(4.5 * len(grids), 2.8), squeeze=False, constrained_layout=True
    )
    for ax, (name, grid) in zip(axes.flat, grids.items(), strict=True):
        h, T = grid.shape
        ax.imshow((grid == token).float().numpy(), cmap="Reds", vmin=0, vmax=1.4)
        for i in range(h):
            for t in range(T):
                ax.text(t, i, str(int(grid[i, t])), ha="center", va="center", fontsize=9)
        ax.set_xticks(range(T))
        ax.set_yticks(range(h), [f"head {i}" for i in range(h)])
        ax.set_xlabel("slot (the position axis attention runs over)")
        ax.set_title(f"{name}\nwhich token fills each slot (token {token} red)", fontsize=10)
    found = []
    for name, grid in grids.items():
        heads, slots = (grid == token).nonzero().T.tolist()
        if len(set(slots)) == 1 and len(heads) == grid.shape[0] == len(set(heads)):
            found.append(f"{name}: token {token} fills slot {slots[0]} of every head")
        else:
            which = f"head{'s' if len(set(heads)) > 1 else ''} {spans(heads)}"
            found.append(f"{name}: token {token} fills slots {spans(slots)} of {which}")
    h, T = next(iter(grids.values())).shape
    describe(
        fig,
        f"For each way of splitting into heads, a grid of {h} heads (rows) by {T} slots "
        "(columns, the position axis attention runs over), each cell written with the token "
        f"whose features fill it, token {token}'s cells in red. {'; '.join(found)}.",
    )
    return fig


def plot_position_loss(
    position_loss: Sequence[float],
    groups: Mapping[str, Sequence[int]],
    floors: Sequence[float],
    title: str,
) -> Figure:
    """Held-out loss at each window position [T] (notebook 04), one bar colour per group of
    positions (`groups`: label -> positions, in the order of the legend; the first group, the
    positions that copy, also gets a shaded column, which keeps a near-zero bar visible), and
    the floor at each position [T], what a model that reads only the past can reach there."""
    colours = ["tab:red", "tab:orange", "tab:grey", "tab:blue"]
    if len(groups) > len(colours):
        raise ValueError(f"at most {len(colours)} groups, got {len(groups)}")
    T = len(position_loss)
    if len(floors) != T:
        raise ValueError(f"one floor per position: got {len(floors)} floors for {T} positions")
    fig, ax = plt.subplots(figsize=(9, 3.4), constrained_layout=True)
    colour_of = {t: colours[g] for g, members in enumerate(groups.values()) for t in members}
    for t in next(iter(groups.values()), []):
        ax.axvspan(t - 0.5, t + 0.5, color="mistyrose", linewidth=0)
    ax.bar(range(T), position_loss, color=[colour_of.get(t, "white") for t in range(T)])
    (floor_line,) = ax.step(range(T), floors, where="mid", color="black", linestyle="--")
    handles = [Patch(facecolor=colours[g]) for g in range(len(groups))] + [floor_line]
    label = f"floor: what the past allows ({floors[0]:z.2f} at t = 0 to {floors[-1]:z.3f})"
    ax.legend(handles, [*groups, label], fontsize=8, loc="upper center")
    ax.set_xlim(-0.5, T - 0.5)
    ax.set_xticks(range(0, T, 2))
    ax.set_xlabel("position t in the window")
    ax.set_ylabel("held-out loss\n(nats per character)")
    ax.set_title(title)
    kinds = "; ".join(f"{label}: {spans(members)}" for label, members in groups.items())
    describe(
        fig,
        f"{title}. Bars of the held-out loss (nats per character) at each of the {T} positions "
        f"of the window, coloured by group ({kinds}), the first group's columns shaded; a dashed "
        "step line marks the floor at each position, the lowest loss a model that reads only "
        "the past can reach there.",
    )
    return fig
