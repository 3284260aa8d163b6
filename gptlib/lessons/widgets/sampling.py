"""Notebook 07's sampling explorer: temperature and top-k sliders over a trained model.

`next_char_report` is the pure function (tested on its own); `SamplingExplorer` puts sliders
on it and redraws the next-character distribution, its numbers and a sample.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import ipywidgets as widgets
import torch

from gptlib.data.tokenizer import CharTokenizer
from gptlib.lessons.viz.labels import char_labels
from gptlib.lessons.viz.sampling import NextCharView
from gptlib.lessons.widgets.explorer import Explorer
from gptlib.model import GPT
from gptlib.sampling import next_token_probs


@dataclass(frozen=True)
class NextCharReport:
    """What the model would write after a prompt: probs [V] over `chars`, and one sample."""

    chars: str
    probs: torch.Tensor
    sample: str

    @property
    def top_probability(self) -> float:
        return self.probs.max().item()

    @property
    def candidates(self) -> int:
        """Characters with a probability above zero."""
        return int((self.probs > 0).sum())

    @property
    def entropy(self) -> float:
        """Entropy in nats: ln V for a uniform choice, 0 for a certain one."""
        p = self.probs[self.probs > 0]
        return max(0.0, -(p * p.log()).sum().item())

    def lines(self) -> list[str]:
        """The numbers as `name = value` lines (what the explorer prints)."""
        (top,) = char_labels(self.chars[int(self.probs.argmax())])
        return [
            f"top probability = {self.top_probability:.3f} ({top!r})",
            f"characters with p > 0 = {self.candidates} of {len(self.chars)}",
            f"entropy = {self.entropy:.3f} nats (uniform: {math.log(len(self.chars)):.3f})",
            f"sample = {self.sample!r}",
        ]


def next_char_report(
    model: GPT,
    tokenizer: CharTokenizer,
    prompt: str,
    temperature: float = 1.0,
    top_k: int | None = None,
    n_sample: int = 100,
    seed: int = 0,
) -> NextCharReport:
    """The next-character distribution after `prompt` and a seeded sample of `n_sample` chars."""
    device = next(model.parameters()).device
    idx = tokenizer.encode(prompt)[None].to(device)  # [1, T]
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            logits, _ = model(idx[:, -model.config.max_len :])
        probs = next_token_probs(logits[:, -1], temperature, top_k)[0].cpu()  # [V]
        generator = torch.Generator(device=device).manual_seed(seed)
        out = model.generate(idx, n_sample, temperature, top_k, generator=generator)
    finally:
        model.train(was_training)
    return NextCharReport(tokenizer.chars, probs, tokenizer.decode(out[0, idx.shape[1] :]))


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
