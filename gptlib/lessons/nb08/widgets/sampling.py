"""Notebook 08's sampling explorer: temperature and top-k sliders over a trained model.

`gptlib.lessons.nb08.experiments.sampling.next_char_report` is the pure function (tested on its
own); `SamplingExplorer` puts sliders on it and redraws the next-character distribution, its
numbers and a sample.
"""

from __future__ import annotations

import ipywidgets as widgets

from gptlib.data.tokenizer import CharTokenizer
from gptlib.lessons.engine.explorer import Explorer
from gptlib.lessons.nb08.experiments.sampling import NextCharReport, next_char_report
from gptlib.lessons.nb08.plots.sampling import NextCharView
from gptlib.model import GPT


class SamplingExplorer(Explorer):
    """Temperature (0 = greedy) and top-k (0 = off) sliders over `next_char_report`."""

    def __init__(
        self, model: GPT, tokenizer: CharTokenizer, prompt: str, n_sample: int = 100
    ) -> None:
        self.model, self.tokenizer, self.prompt, self.n_sample = model, tokenizer, prompt, n_sample
        label = {"style": {"description_width": "initial"}}  # the whole name, not "temperat…"
        self.temperature = widgets.FloatSlider(
            value=1.0, min=0.0, max=2.0, step=0.05, description="temperature", **label
        )
        self.top_k = widgets.IntSlider(
            value=0, min=0, max=tokenizer.vocab_size, description="top-k (0: off)", **label
        )
        super().__init__([self.temperature, self.top_k], figsize=NextCharView.FIGSIZE)
        self.view = NextCharView(self.figure, tokenizer.vocab_size, prompt)
        self.redraw()

    def compute(self) -> NextCharReport:
        return next_char_report(
            self.model,
            self.tokenizer,
            self.prompt,
            self.temperature.value,
            self.top_k.value or None,
            self.n_sample,
        )

    def draw(self, result: NextCharReport) -> None:
        self.view.update(result.chars, result.probs)
