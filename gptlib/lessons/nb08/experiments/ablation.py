"""What each piece of the GPT buys: an ablation ladder (notebook 08).

Every rung is gptlib's GPT (`variants`) with pieces taken out, trained by a loop that is passed
in (notebook 08's student's `train`, or the reference in `scripts/nb08_runs.py`):

    bigram → + attention, 1 head → + several heads → + MLP → + residuals → + LayerNorm (full)

Long runs of every rung (several seeds, the chapter's learning rate) are stored in
`gptlib/data/nb08_runs.json` (`long_runs`); the notebook trains a few steps of them live.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from gptlib.lessons.nb08.experiments.long_runs import Curves, fixed_batches, long_runs
from gptlib.lessons.shared.experiments.variants import Variant, build_gpt
from gptlib.model import GPT, GPTConfig

# The small GPT every rung is cut from, and how it is fed.
SHAPE = {"d_model": 64, "n_layers": 2, "n_heads": 4}
BATCH, BLOCK = 12, 64


@dataclass(frozen=True)
class Rung:
    """Which pieces a configuration keeps. `several_heads=False` means one head of width d;
    without attention the blocks hold only what else they keep."""

    name: str
    attention: bool = True
    several_heads: bool = True
    mlp: bool = True
    residual: bool = True
    layer_norm: bool = True
    positions: bool = True


BARE = {"mlp": False, "residual": False, "layer_norm": False}
LADDER: tuple[Rung, ...] = (
    Rung("bigram", attention=False, several_heads=False, positions=False, **BARE),
    Rung("+ attention, 1 head", several_heads=False, **BARE),
    Rung("+ several heads", **BARE),
    Rung("+ MLP", residual=False, layer_norm=False),
    Rung("+ residuals", layer_norm=False),
    Rung("+ LayerNorm (full)"),
)
RUNGS: dict[str, Rung] = {r.name: r for r in LADDER}


def build_rung(
    rung: Rung,
    vocab_size: int,
    *,
    d_model: int = 64,
    n_layers: int = 2,
    n_heads: int = 4,
    max_len: int = BLOCK,
) -> GPT:
    """The GPT of one rung: ids [B, T] → (logits [B, T, V], loss), every module with PyTorch's
    default initialisation (the chapter's), the embeddings N(0, 1)."""
    config = GPTConfig(
        vocab_size=vocab_size,
        d_model=d_model,
        n_heads=n_heads if rung.several_heads else 1,
        n_layers=n_layers,
        max_len=max_len,
    )
    variant = Variant(
        positions="learned" if rung.positions else "none",
        residual=rung.residual,
        block_norms=rung.layer_norm,
        final_norm=rung.layer_norm,
        mlp=rung.mlp,
        attention="fused" if rung.attention else "none",
    )
    model = build_gpt(config, variant, embedding_std=1.0, init="pytorch")
    if not (rung.attention or rung.mlp):
        model.blocks = nn.ModuleList()  # nothing left in a block: the bigram
    return model


def train_rung(
    train: Callable[..., tuple],
    get_batch: Callable[..., tuple[torch.Tensor, torch.Tensor]],
    rung: Rung,
    train_ids: torch.Tensor,
    val_ids: torch.Tensor,
    vocab_size: int,
    *,
    lr: float,
    steps: int,
    eval_every: int,
    seed: int,
    n_eval: int = 20,
) -> Curves:
    """One run as the long runs were made: weights from `seed`, training batches
    get_batch(train_ids, 12, 64, generator seeded with `seed`), the same `n_eval` fixed batches
    of each split for every run (`fixed_batches`), then train(model, ...)'s estimates."""
    torch.manual_seed(seed)
    model = build_rung(rung, vocab_size, **SHAPE)
    generator = torch.Generator().manual_seed(seed)
    batches = fixed_batches(get_batch, train_ids, val_ids, n_eval, BATCH, BLOCK)
    out = train(
        model, lambda: get_batch(train_ids, BATCH, BLOCK, generator), batches, steps, lr, eval_every
    )
    return Curves.of(out)


@dataclass(frozen=True)
class Ladder:
    """The long runs: the held-out curves of every rung and seed, all at learning rate `lr`."""

    runs: dict[tuple[str, int], Curves]  # (rung, seed) → curves
    lr: float
    seeds: tuple[int, ...]
    steps: int

    @classmethod
    def load(cls) -> Ladder:
        data = long_runs()["ladder"]
        runs = {(r["config"], r["seed"]): Curves.from_dict(r) for r in data["runs"]}
        return cls(runs, data["lr"], tuple(data["seeds"]), data["steps"])

    def curves(self, config: str) -> list[Curves]:
        """The runs of `config`, one per seed."""
        return [self.runs[config, s] for s in self.seeds]

    def loss(self, config: str, step: int | None = None) -> list[float]:
        """Held-out loss of each seed at `step` (default: the end)."""
        return [c.val_at(self.steps if step is None else step) for c in self.curves(config)]

    def mean(self, config: str, step: int | None = None) -> float:
        return statistics.mean(self.loss(config, step))

    def ladder_gains(self, step: int | None = None) -> dict[str, list[float]]:
        """Per rung, seed by seed: how much lower its held-out loss is than the rung before."""
        names = [r.name for r in LADDER]
        losses = {name: self.loss(name, step=step) for name in names}
        return {
            new: [a - b for a, b in zip(losses[old], losses[new], strict=True)]
            for old, new in zip(names, names[1:], strict=False)
        }

    def order(self, configs: Sequence[str], step: int) -> list[str]:
        """`configs` sorted by their mean held-out loss at `step`, lowest first."""
        return sorted(configs, key=lambda c: self.mean(c, step=step))

    def last_reorder(self, configs: Sequence[str]) -> int:
        """The last estimate step at which the order of `configs` by mean held-out loss differed
        from the order at the end (0 if it never did after the start)."""
        steps = self.curves(configs[0])[0].eval_steps
        final = self.order(configs, self.steps)
        changed = [s for s in steps[1:] if self.order(configs, s) != final]
        return max(changed, default=0)


def bigram_cross_entropy(
    train_ids: torch.Tensor, val_ids: torch.Tensor, vocab_size: int, smoothing: float = 1.0
) -> float:
    """Held-out cross-entropy (nats per token) of counted bigrams: p(b | a) from the pair counts
    of train_ids [N] with add-`smoothing`, scored on every pair of val_ids [M].

    The best a model that sees only the current token can do, up to the smoothing.
    """
    if smoothing <= 0:
        raise ValueError(f"smoothing must be > 0 (unseen pairs need probability), got {smoothing}")
    counts = torch.full((vocab_size, vocab_size), float(smoothing))
    pairs = (train_ids[:-1], train_ids[1:])
    counts.index_put_(pairs, torch.ones(len(train_ids) - 1), accumulate=True)
    log_p = (counts / counts.sum(-1, keepdim=True)).log()
    return -log_p[val_ids[:-1], val_ids[1:]].mean().item()
