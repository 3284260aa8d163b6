"""What a trained model would write next: the next-character distribution after a prompt, under
a temperature and a top-k cut-off, and a seeded sample (notebook 08's sampling explorer); text
sampled with any rule given as a function (the student's top-p)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from gptlib.data.tokenizer import CharTokenizer
from gptlib.hooks import evaluating
from gptlib.model import GPT, next_token_probs


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
    def top_char(self) -> str:
        return self.chars[int(self.probs.argmax())]

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
        """The numbers as `name = value` lines (what the explorer prints); characters are
        shown as Python writes them, so a newline reads '\\n'."""
        return [
            f"top probability = {self.top_probability:z.3f} ({self.top_char!r})",
            f"characters with p > 0 = {self.candidates} of {len(self.chars)}",
            f"entropy = {self.entropy:z.3f} nats (uniform: {math.log(len(self.chars)):z.3f})",
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
    """The next-character distribution after `prompt` and a seeded sample of `n_sample` chars.

    The model reads the prompt's last max_len characters; probs [V] come from the logits at the
    last position (`gptlib.next_token_probs`); the sample is `model.generate`'s.
    """
    device = next(model.parameters()).device
    idx = tokenizer.encode(prompt)[None].to(device)  # [1, T]
    with evaluating(model), torch.no_grad():
        logits, _ = model(idx[:, -model.config.max_len :])
        last = logits[:, -1]  # [1, V]
        probs = next_token_probs(last, temperature=temperature, top_k=top_k)[0].cpu()  # [V]
        generator = torch.Generator(device=device).manual_seed(seed)
        out = model.generate(
            idx, n_sample, temperature=temperature, top_k=top_k, generator=generator
        )
    return NextCharReport(tokenizer.chars, probs, tokenizer.decode(out[0, idx.shape[1] :]))


@dataclass(frozen=True)
class Sampled:
    """Text drawn one character at a time, and how many characters had a probability above
    zero at each draw."""

    text: str
    kept: tuple[int, ...]


def sample_with(
    model: GPT,
    tokenizer: CharTokenizer,
    prompt: str,
    n: int,
    probabilities: Callable[[torch.Tensor], torch.Tensor],
    seed: int = 0,
) -> Sampled:
    """`n` characters after `prompt`, each drawn from probabilities(logits) [1, V] of the
    model's logits [1, V] at the last position (the model reads the last max_len characters),
    with a generator seeded with `seed`: sampling with any rule written as a function, such as
    a student's top-p."""
    device = next(model.parameters()).device
    idx = tokenizer.encode(prompt)[None].to(device)  # [1, T]
    start, generator, kept = idx.shape[1], torch.Generator(device=device).manual_seed(seed), []
    with evaluating(model), torch.no_grad():
        for _ in range(n):
            logits = model(idx[:, -model.config.max_len :])[0][:, -1]  # [1, V]
            probs = torch.as_tensor(probabilities(logits), dtype=torch.float32)  # [1, V]
            kept.append(int((probs > 0).sum()))
            next_id = torch.multinomial(probs, 1, generator=generator)  # [1, 1]
            idx = torch.cat([idx, next_id.to(device)], dim=1)
    return Sampled(tokenizer.decode(idx[0, start:]), tuple(kept))
