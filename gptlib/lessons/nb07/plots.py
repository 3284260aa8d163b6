"""The GPT as a block diagram: boxes and arrows, drawn with matplotlib (notebook 07).

token ids → tok_emb + pos_emb → L × [ln1 → attn → +, ln2 → mlp → +] → ln_f → lm_head → logits,
each box labelled with the name the module has in the model, the residual connections drawn as
arrows that go around their sublayer.
"""

from __future__ import annotations

from dataclasses import dataclass

from matplotlib.axes import Axes
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch

from gptlib.lessons.engine.figures import describe

CENTRE = 5.0
BOX_WIDTH, BOX_HEIGHT = 4.2, 0.8
COLOURS = {
    "data": "#eeeeee",
    "embedding": "#cfe2f3",
    "norm": "#fff2cc",
    "attention": "#f9cb9c",
    "mlp": "#b6d7a8",
    "head": "#d9d2e9",
}


@dataclass(frozen=True)
class Diagram:
    """What was drawn: each box's text by the module's name, the adders, and the arrows as
    (from, to) pairs of names (an adder is "add" + what it adds, a skip is "skip")."""

    boxes: dict[str, str]
    adders: tuple[str, ...]
    arrows: tuple[tuple[str, str], ...]


def draw_gpt_diagram(ax: Axes, n_layers: int) -> Diagram:
    """Draw the chapter's GPT with `n_layers` blocks onto `ax` (which it turns off)."""
    if n_layers < 1:
        raise ValueError(f"n_layers must be at least 1, got {n_layers}")
    ax.set_xlim(0, 10)
    ax.set_ylim(-0.1, 16.2)
    ax.axis("off")
    boxes: dict[str, str] = {}
    arrows: list[tuple[str, str]] = []
    at: dict[str, tuple[float, float]] = {}

    def box(name: str, text: str, x: float, y: float, kind: str, width: float = BOX_WIDTH):
        ax.add_patch(
            FancyBboxPatch(
                (x - width / 2, y - BOX_HEIGHT / 2),
                width,
                BOX_HEIGHT,
                boxstyle="round,pad=0.05,rounding_size=0.15",
                facecolor=COLOURS[kind],
                edgecolor="0.3",
            )
        )
        ax.text(x, y, text, ha="center", va="center", fontsize=9)
        boxes[name], at[name] = text, (x, y)

    def adder(name: str, x: float, y: float):
        ax.add_patch(Circle((x, y), 0.3, facecolor="white", edgecolor="0.3"))
        ax.text(x, y, "+", ha="center", va="center", fontsize=12)
        at[name] = (x, y)

    def arrow(start: str, end: str, via: list[tuple[float, float]] | None = None, side: float = 0):
        """From the bottom of `start` to the top of `end` (or to its side: -1 left, 1 right)."""
        (x0, y0), (x1, y1) = at[start], at[end]
        y0 -= 0.3 if start.startswith("add") else BOX_HEIGHT / 2 + 0.05
        if side:
            x1 += 0.32 * side
        else:
            y1 += 0.3 if end.startswith("add") else BOX_HEIGHT / 2 + 0.05
        points = [(x0, y0), *(via or []), (x1, y1)]
        for (a, b), (c, d) in zip(points[:-2], points[1:-1], strict=True):
            ax.plot([a, c], [b, d], color="0.3", lw=1.2)
        ax.add_patch(
            FancyArrowPatch(points[-2], points[-1], arrowstyle="-|>", mutation_scale=12,
                            color="0.3", lw=1.2)
        )  # fmt: skip
        arrows.append((start, end))

    box("ids", "token ids  idx  [B, T]", CENTRE, 15.6, "data")
    box("tok_emb", "tok_emb: E[idx]\n[B, T, d]", 3.0, 14.0, "embedding", 3.2)
    box("pos_emb", "pos_emb: P[0:T]\n[T, d]", 7.0, 14.0, "embedding", 3.2)
    adder("add embeddings", CENTRE, 12.6)
    ax.add_patch(
        FancyBboxPatch((0.4, 3.95), 9.2, 7.8, boxstyle="round,pad=0,rounding_size=0.3",
                       facecolor="none", edgecolor="0.5", ls="--")
    )  # fmt: skip
    ax.text(0.6, 11.4, f"block  × L = {n_layers}  (blocks[0] … blocks[{n_layers - 1}])",
            fontsize=9, color="0.3")  # fmt: skip
    box("ln1", "ln1: LayerNorm", CENTRE, 10.3, "norm")
    box("attn", "attn: causal self-attention\n(tokens read earlier tokens)", CENTRE, 9.0,
        "attention")  # fmt: skip
    adder("add attention", CENTRE, 7.75)
    box("ln2", "ln2: LayerNorm", CENTRE, 6.8, "norm")
    box("mlp", "mlp: d → 4d → d\n(each token on its own)", CENTRE, 5.6, "mlp")
    adder("add mlp", CENTRE, 4.45)
    box("ln_f", "ln_f: final LayerNorm", CENTRE, 2.95, "norm")
    box("lm_head", "lm_head: W_U, d → V", CENTRE, 1.7, "head")
    box("logits", "logits  [B, T, V]", CENTRE, 0.4, "data")

    arrow("ids", "tok_emb", via=[(CENTRE, 15.0), (3.0, 15.0)])
    arrow("tok_emb", "add embeddings", via=[(3.0, 12.6)], side=-1)
    arrow("pos_emb", "add embeddings", via=[(7.0, 12.6)], side=1)
    arrow("add embeddings", "ln1")
    arrow("ln1", "attn")
    arrow("attn", "add attention")
    arrow("add attention", "ln2")
    arrow("ln2", "mlp")
    arrow("mlp", "add mlp")
    arrow("add mlp", "ln_f")
    arrow("ln_f", "lm_head")
    arrow("lm_head", "logits")
    for top, bottom in ((11.0, 7.75), (7.3, 4.45)):  # the residual connections
        ax.plot([CENTRE, 7.8, 7.8], [top, top, bottom], color="tab:blue", lw=1.4)
        ax.add_patch(
            FancyArrowPatch((7.8, bottom), (CENTRE + 0.32, bottom), arrowstyle="-|>",
                            mutation_scale=12, color="tab:blue", lw=1.4)
        )  # fmt: skip
        ax.text(7.95, (top + bottom) / 2, "x: the\nresidual\nstream", fontsize=8,
                color="tab:blue", va="center")  # fmt: skip
    arrows += [("skip", "add attention"), ("skip", "add mlp")]
    ax.text(CENTRE + 0.45, 12.0, "x  [B, T, d]", fontsize=8, color="0.3")
    ax.text(CENTRE + 0.45, 3.55, "[B, T, d]", fontsize=8, color="0.3")
    adders = tuple(name for name in at if name.startswith("add"))
    describe(
        ax,
        "Block diagram of the chapter's GPT, top to bottom: token ids idx [B, T]; the token "
        "embedding tok_emb and the position embedding pos_emb, added; a block repeated "
        f"L = {n_layers} times, in which ln1 (LayerNorm) feeds causal self-attention attn, whose "
        "output is added back to the residual stream, then ln2 feeds the MLP mlp (d → 4d → d), "
        "added back too; the final LayerNorm ln_f; lm_head (W_U, d → V); logits [B, T, V]. Blue "
        "arrows carry the residual stream around each sublayer.",
    )
    return Diagram(boxes, adders, tuple(arrows))
