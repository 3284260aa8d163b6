"""Training runs too long for a notebook, stored as numbers (notebook 08).

`scripts/nb08_runs.py` makes them with the reference training loop, the one notebook 08's
student writes, and writes `gptlib/data/nb08_runs.json`: the chapter's GPT on Tiny Shakespeare
for thousands of steps (`chapter`), the leave-one-out table (`ablation`, read by
`ablation.Ablation`) and the two-lookups models on three seeds (`lookups`). The notebook trains
the first steps of the same runs with the student's loop and finds them on the stored curves.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import torch

RUNS = Path(__file__).resolve().parents[3] / "data" / "nb08_runs.json"
EVAL_SEED = 1234  # the fixed batches every run is estimated on


@dataclass(frozen=True)
class Curves:
    """A run's numbers: the loss of each step's batch (may be empty) and, at `eval_steps`, the
    mean loss over the fixed batches of each split."""

    eval_steps: tuple[int, ...]
    train: tuple[float, ...]
    val: tuple[float, ...]
    losses: tuple[float, ...] = ()

    @classmethod
    def of(cls, out: tuple) -> Curves:
        """From what a training loop returns: (losses, eval_steps, train_estimates,
        val_estimates), numbers or 0-d tensors."""
        losses, steps, train, val = out
        return cls(
            tuple(int(s) for s in steps),
            tuple(float(v) for v in train),
            tuple(float(v) for v in val),
            tuple(float(v) for v in losses),
        )

    @classmethod
    def from_dict(cls, data: dict) -> Curves:
        return cls(
            tuple(data["eval_steps"]),
            tuple(data["train"]),
            tuple(data["val"]),
            tuple(data.get("losses", ())),
        )

    def to_dict(self, digits: int = 4) -> dict:
        """The numbers rounded to `digits` decimals, for the JSON file."""
        return {
            "eval_steps": list(self.eval_steps),
            "train": [round(v, digits) for v in self.train],
            "val": [round(v, digits) for v in self.val],
            "losses": [round(v, digits) for v in self.losses],
        }

    def val_at(self, step: int) -> float:
        """The held-out estimate at `step` (one of `eval_steps`)."""
        if step not in self.eval_steps:
            raise ValueError(f"no estimate at step {step}; estimates at {self.eval_steps}")
        return self.val[self.eval_steps.index(step)]

    def gap(self) -> float:
        """Held-out minus training estimate at the last step."""
        return self.val[-1] - self.train[-1]


def fixed_batches(
    get_batch: Callable[..., tuple[torch.Tensor, torch.Tensor]],
    train_ids: torch.Tensor,
    val_ids: torch.Tensor,
    n: int,
    batch_size: int,
    block_size: int,
) -> dict[str, list[tuple[torch.Tensor, torch.Tensor]]]:
    """{"train": [...], "val": [...]}: n batches of each split, x, y [batch_size, block_size],
    drawn by get_batch(ids, batch_size, block_size, generator) from one generator seeded with
    `EVAL_SEED`, so every run is estimated on the same text."""
    generator = torch.Generator().manual_seed(EVAL_SEED)
    return {
        split: [get_batch(ids, batch_size, block_size, generator) for _ in range(n)]
        for split, ids in (("train", train_ids), ("val", val_ids))
    }


@cache
def long_runs() -> dict:
    """The stored runs (`gptlib/data/nb08_runs.json`), as the script wrote them."""
    return json.loads(RUNS.read_text())


def chapter_run() -> tuple[dict, Curves]:
    """The chapter's GPT trained long: its settings, and its curves."""
    data = long_runs()["chapter"]
    return data["settings"], Curves.from_dict(data)
