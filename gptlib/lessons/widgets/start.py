"""Notebook 00's environment check widget: the chapter's GPT size as the vocabulary changes."""

from __future__ import annotations

import ipywidgets as widgets
from IPython.display import display

from gptlib.model import GPT, GPTConfig


def chapter_model_size(vocab_size: int) -> dict[str, int]:
    """Parameter counts of the chapter's GPT (d=128, h=4, L=4, max_len=256) for a vocabulary."""
    model = GPT(GPTConfig(vocab_size=vocab_size))
    embeddings = model.tok_emb.weight.numel() + model.pos_emb.table.weight.numel()
    blocks = sum(p.numel() for p in model.blocks.parameters())
    return {
        "embeddings": embeddings,
        "blocks": blocks,
        "final norm and unembedding": model.num_parameters() - embeddings - blocks,
        "total": model.num_parameters(),
    }


def format_model_size(sizes: dict[str, int]) -> str:
    """One `name = value` line per entry, numbers with thousands separators."""
    return "\n".join(f"{name} = {value:,}" for name, value in sizes.items())


def model_size_explorer(vocab_size: int = 65) -> widgets.Widget:
    """A vocabulary-size slider above the live parameter table; returns the widget (displayed)."""
    slider = widgets.IntSlider(
        value=vocab_size,
        min=2,
        max=512,
        description="vocab size",
        style={"description_width": "initial"},
    )
    out = widgets.Output()

    def redraw(change: dict | None = None) -> None:
        with out:
            out.clear_output(wait=True)
            print(format_model_size(chapter_model_size(slider.value)))

    slider.observe(redraw, names="value")
    redraw()
    box = widgets.VBox([slider, out])
    display(box)
    return box
