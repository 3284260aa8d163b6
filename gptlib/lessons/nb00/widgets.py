"""Notebook 00's environment check: the chapter's GPT size as the vocabulary changes.

The pure function, `gptlib.lessons.nb00.experiments.chapter_model_size`, builds the model
and counts; the explorer puts a vocabulary slider on it. If its slider moves the bars,
interactive widgets work.
"""

from __future__ import annotations

import ipywidgets as widgets

from gptlib.lessons.engine.explorer import Explorer
from gptlib.lessons.nb00.experiments import PARTS, ModelSize, chapter_model_size
from gptlib.lessons.nb00.plots import ModelSizeView


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
