"""A synthetic character corpus and a bare training loop for the experiments of notebooks 05–06.

The corpus is generated, not downloaded, so these experiments run offline and in seconds.
Sentences follow one template with words drawn at random ("the quiet cat finds a ship."):
a model can learn the spelling and the template, while the word choices stay unpredictable.
Notebook 07 trains on real text with gptlib's full training loop instead.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import torch

from gptlib.model import GPT

DETERMINERS = ("the", "a", "every", "one")
ADJECTIVES = ("small", "red", "quiet", "old", "bright", "lazy", "happy", "cold")
NOUNS = ("cat", "dog", "bird", "king", "river", "tree", "child", "ship")
VERBS = ("sees", "likes", "follows", "finds", "hears", "helps")


def toy_corpus(n_sentences: int = 2000, seed: int = 0) -> str:
    """`n_sentences` sentences "det adj noun verb det noun." joined by spaces, seeded."""
    if n_sentences < 1:
        raise ValueError(f"n_sentences must be at least 1, got {n_sentences}")
    rng = random.Random(seed)
    sentences = [
        f"{rng.choice(DETERMINERS)} {rng.choice(ADJECTIVES)} {rng.choice(NOUNS)} "
        f"{rng.choice(VERBS)} {rng.choice(DETERMINERS)} {rng.choice(NOUNS)}."
        for _ in range(n_sentences)
    ]
    return " ".join(sentences) + " "


@dataclass(frozen=True)
class CharData:
    """A text encoded as character ids: `ids` [N] and the sorted alphabet `chars`."""

    ids: torch.Tensor
    chars: str

    @classmethod
    def from_text(cls, text: str) -> CharData:
        chars = "".join(sorted(set(text)))
        index = {c: i for i, c in enumerate(chars)}
        return cls(torch.tensor([index[c] for c in text], dtype=torch.long), chars)

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def batch(
        self, batch_size: int, seq_len: int, generator: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Random windows: inputs [B, T] and targets [B, T] (the inputs shifted by one)."""
        if seq_len + 1 > len(self.ids):
            raise ValueError(f"seq_len={seq_len} needs a text longer than {len(self.ids)} chars")
        starts = torch.randint(0, len(self.ids) - seq_len, (batch_size,), generator=generator)
        offsets = torch.arange(seq_len + 1)
        windows = self.ids[starts[:, None] + offsets]  # [B, T + 1]
        return windows[:, :-1], windows[:, 1:]


def warmup_factor(step: int, warmup_steps: int) -> float:
    """Learning-rate multiplier at `step` (0-based): a linear ramp over `warmup_steps`, then 1."""
    if warmup_steps <= 0:
        return 1.0
    return min(1.0, (step + 1) / warmup_steps)


def train_losses(
    model: GPT,
    data: CharData,
    steps: int,
    lr: float,
    warmup_steps: int = 0,
    batch_size: int = 16,
    seq_len: int = 32,
    seed: int = 0,
) -> torch.Tensor:
    """Train `model` in place with Adam for `steps` steps; return the training losses [steps].

    The learning rate ramps linearly from lr / warmup_steps to lr over the first
    `warmup_steps` steps (none when 0). A loss that turns NaN or infinite stops the run and
    the remaining entries are NaN, so a diverged run is visible, not an exception.
    """
    if steps < 1 or lr <= 0:
        raise ValueError(f"need steps >= 1 and lr > 0, got steps={steps}, lr={lr}")
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = torch.full((steps,), math.nan)
    model.train()
    for step in range(steps):
        for group in optimizer.param_groups:
            group["lr"] = lr * warmup_factor(step, warmup_steps)
        inputs, targets = data.batch(batch_size, seq_len, generator)
        _, loss = model(inputs, targets)
        if not torch.isfinite(loss):
            break
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses[step] = loss.item()
    return losses
