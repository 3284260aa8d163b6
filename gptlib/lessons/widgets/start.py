"""Notebook 00's environment check: the chapter's GPT size as the vocabulary changes.

`chapter_model_size` is the pure function (it builds the model and counts); the explorer puts a
vocabulary slider on it. If its slider moves the bars, interactive widgets work.
"""

from __future__ import annotations

from dataclasses import dataclass

import ipywidgets as widgets

from gptlib.lessons.viz.model_size import ModelSizeView
from gptlib.lessons.widgets.explorer import Explorer
from gptlib.model import GPT, GPTConfig

PARTS = ("embeddings", "blocks", "final norm and unembedding")


@dataclass(frozen=True)
class ModelSize:
    """Parameter counts of the chapter's GPT for one vocabulary size, by group (`PARTS`)."""

    vocab_size: int
    parts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.parts.values())

    def lines(self) -> list[str]:
        """One `name = value` line per group and the total, with thousands separators."""
        counts = {**self.parts, "total": self.total}
        return [f"{name} = {value:,}" for name, value in counts.items()]


def chapter_model_size(vocab_size: int) -> ModelSize:
    """Parameter counts of the chapter's GPT (d=128, h=4, L=4, max_len=256) for a vocabulary."""
    model = GPT(GPTConfig(vocab_size=vocab_size))
    embeddings = model.tok_emb.weight.numel() + model.pos_emb.table.weight.numel()
    blocks = sum(p.numel() for p in model.blocks.parameters())
    rest = model.num_parameters() - embeddings - blocks
    return ModelSize(vocab_size, dict(zip(PARTS, (embeddings, blocks, rest), strict=True)))


class ModelSizeExplorer(Explorer):
    """A vocabulary-size slider (2..512) above the parameter counts and their bars."""

    def __init__(self, vocab_size: int = 65) -> None:
        self.vocab_size = widgets.IntSlider(
            value=vocab_size,
            min=2,
            max=512,
            description="vocab size",
            style={"description_width": "initial"},
        )
        super().__init__([self.vocab_size], figsize=ModelSizeView.FIGSIZE)
        self.view = ModelSizeView(self.figure, PARTS)
        self.redraw()

    def compute(self) -> ModelSize:
        return chapter_model_size(self.vocab_size.value)

    def draw(self, result: ModelSize) -> None:
        self.view.update(result.parts, result.vocab_size)
