"""What each piece of the GPT buys: leave-one-out from the full model (notebook 08).

Every row is gptlib's GPT (`variants`) at one small shape with exactly one piece taken out, so
each piece's cost is measured in a model that has all the others:

    full · no positions · one head · no MLP · no residuals · no block norms · no final norm ·
    no attention

trained by a loop that is passed in (notebook 08's student's `train`, or the reference in
`scripts/nb08_runs.py`). Long runs of every row (three seeds, the chapter's learning rate, and
one seed at a second rate) are stored in `gptlib/data/nb08_runs.json` (`long_runs`); every row
and the counted bigram are scored on the same text, every held-out character (`held_out_windows`).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from gptlib.lessons.nb08.experiments.long_runs import Curves, fixed_batches, long_runs
from gptlib.lessons.shared.experiments.variants import Variant, build_gpt
from gptlib.model import GPT, GPTConfig

# The small GPT every row is cut from, and how it is fed.
SHAPE = {"d_model": 64, "n_layers": 2, "n_heads": 4}
BATCH, BLOCK = 12, 64


@dataclass(frozen=True)
class Row:
    """Which pieces a model keeps. `several_heads=False` means one head of width d; without
    attention the blocks keep their MLP (with its norm and residual where kept)."""

    name: str
    attention: bool = True
    several_heads: bool = True
    mlp: bool = True
    residual: bool = True
    block_norms: bool = True
    final_norm: bool = True
    positions: bool = True


ROWS: tuple[Row, ...] = (
    Row("full"),
    Row("no positions", positions=False),
    Row("one head", several_heads=False),
    Row("no MLP", mlp=False),
    Row("no residuals", residual=False),
    Row("no block norms", block_norms=False),
    Row("no final norm", final_norm=False),
    Row("no attention", attention=False),
)
BY_NAME: dict[str, Row] = {r.name: r for r in ROWS}
FULL = ROWS[0].name
REMOVALS = tuple(r.name for r in ROWS[1:])


def build_row(
    row: Row,
    vocab_size: int,
    *,
    d_model: int = 64,
    n_layers: int = 2,
    n_heads: int = 4,
    max_len: int = BLOCK,
) -> GPT:
    """The GPT of one row: ids [B, T] → (logits [B, T, V], loss), every module with PyTorch's
    default initialisation (the chapter's), the embeddings N(0, 1)."""
    config = GPTConfig(
        vocab_size=vocab_size,
        d_model=d_model,
        n_heads=n_heads if row.several_heads else 1,
        n_layers=n_layers,
        max_len=max_len,
    )
    variant = Variant(
        positions="learned" if row.positions else "none",
        residual=row.residual,
        block_norms=row.block_norms,
        final_norm=row.final_norm,
        mlp=row.mlp,
        attention="fused" if row.attention else "none",
    )
    return build_gpt(config, variant, embedding_std=1.0, init="pytorch")


def train_row(
    train: Callable[..., tuple],
    get_batch: Callable[..., tuple[torch.Tensor, torch.Tensor]],
    row: Row,
    train_ids: torch.Tensor,
    val_ids: torch.Tensor,
    vocab_size: int,
    *,
    lr: float,
    steps: int,
    eval_every: int,
    seed: int,
    n_eval: int = 20,
) -> tuple[GPT, Curves]:
    """One run as the long runs were made: weights from `seed`, training batches
    get_batch(train_ids, 12, 64, generator seeded with `seed`), the same `n_eval` fixed batches
    of each split for every run (`fixed_batches`), then train(model, ...)'s estimates. Returns
    the trained model and its curves."""
    torch.manual_seed(seed)
    model = build_row(row, vocab_size, **SHAPE)
    generator = torch.Generator().manual_seed(seed)
    batches = fixed_batches(get_batch, train_ids, val_ids, n_eval, BATCH, BLOCK)
    out = train(
        model, lambda: get_batch(train_ids, BATCH, BLOCK, generator), batches, steps, lr, eval_every
    )
    return model, Curves.of(out)


def held_out_windows(val_ids: torch.Tensor, block_size: int = BLOCK) -> tuple[torch.Tensor, ...]:
    """val_ids [M] cut into consecutive windows: x, y [M // block_size, block_size] (the last
    window may lose a character), y one character after x. Every held-out character but the
    first is a target once, predicted from the ones before it in its window."""
    if block_size < 1 or len(val_ids) <= block_size:
        raise ValueError(f"need block_size ≥ 1 and more than {block_size} ids, got {len(val_ids)}")
    n = (len(val_ids) - 1) // block_size
    x = val_ids[: n * block_size].view(n, block_size)
    y = val_ids[1 : n * block_size + 1].view(n, block_size)
    return x, y


@torch.no_grad()
def held_out_loss(model: nn.Module, x: torch.Tensor, y: torch.Tensor, chunk: int = 256) -> float:
    """Mean cross-entropy (nats per character) of `model` over every target of x, y [N, T],
    in evaluation mode, `chunk` windows at a time."""
    was_training = model.training
    model.eval()
    total = sum(
        model(xs, ys)[1].item() * ys.numel()
        for xs, ys in zip(x.split(chunk), y.split(chunk), strict=True)
    )
    model.train(was_training)
    return total / y.numel()


def bigram_log_probs(
    train_ids: torch.Tensor, vocab_size: int, smoothing: float = 1.0
) -> torch.Tensor:
    """log p(b | a) [V, V] from the pair counts of train_ids [N] with add-`smoothing`."""
    if smoothing <= 0:
        raise ValueError(f"smoothing must be > 0 (unseen pairs need probability), got {smoothing}")
    counts = torch.full((vocab_size, vocab_size), float(smoothing))
    pairs = (train_ids[:-1], train_ids[1:])
    counts.index_put_(pairs, torch.ones(len(train_ids) - 1), accumulate=True)
    return (counts / counts.sum(-1, keepdim=True)).log()


def bigram_cross_entropy(
    train_ids: torch.Tensor, val_ids: torch.Tensor, vocab_size: int, smoothing: float = 1.0
) -> float:
    """Held-out cross-entropy (nats per token) of counted bigrams (`bigram_log_probs` of
    train_ids [N]), scored on every pair of val_ids [M].

    The best a model that sees only the current token can do, up to the smoothing.
    """
    log_p = bigram_log_probs(train_ids, vocab_size, smoothing)
    return -log_p[val_ids[:-1], val_ids[1:]].mean().item()


@dataclass(frozen=True)
class Ablation:
    """The stored runs: every row and seed at learning rate `lr` for `steps` steps (curves on
    20 fixed batches, and the loss on every held-out character at the end); every row on seed 0
    at `other_lr`; and some rows on seed 0 at `lr` for longer (`longer`, row → curves, and
    `longer_held_out`)."""

    runs: dict[tuple[str, int], Curves]  # (row, seed) → curves
    held_out: dict[tuple[str, int], float]  # (row, seed) → loss on every held-out character
    lr: float
    seeds: tuple[int, ...]
    steps: int
    other_lr: float
    other: dict[str, float]  # row → loss on every held-out character at other_lr (seed 0)
    longer: dict[str, Curves] = field(default_factory=dict)
    longer_held_out: dict[str, float] = field(default_factory=dict)

    @classmethod
    def load(cls) -> Ablation:
        data = long_runs()["ablation"]
        lr, steps = data["lr"], data["steps"]
        main = [r for r in data["runs"] if r["lr"] == lr and r["eval_steps"][-1] == steps]
        longer = [r for r in data["runs"] if r["lr"] == lr and r["eval_steps"][-1] > steps]
        return cls(
            {(r["config"], r["seed"]): Curves.from_dict(r) for r in main},
            {(r["config"], r["seed"]): r["held_out"] for r in main},
            lr,
            tuple(data["seeds"]),
            steps,
            data["other_lr"],
            {r["config"]: r["held_out"] for r in data["runs"] if r["lr"] == data["other_lr"]},
            {r["config"]: Curves.from_dict(r) for r in longer},
            {r["config"]: r["held_out"] for r in longer},
        )

    def curves(self, row: str) -> list[Curves]:
        """The runs of `row`, one per seed."""
        return [self.runs[row, s] for s in self.seeds]

    def loss(self, row: str) -> list[float]:
        """Each seed's loss on every held-out character at the end."""
        return [self.held_out[row, s] for s in self.seeds]

    def mean(self, row: str) -> float:
        return statistics.mean(self.loss(row))

    def estimate(self, row: str, step: int) -> float:
        """The seeds' mean estimate (20 fixed held-out batches) at `step`."""
        return statistics.mean(c.val_at(step) for c in self.curves(row))

    def costs(self) -> dict[str, list[float]]:
        """Per removal, seed by seed: how much higher its held-out loss is than the full
        model's of the same seed."""
        full = self.loss(FULL)
        return {row: [a - b for a, b in zip(self.loss(row), full, strict=True)] for row in REMOVALS}

    def order(self, rows: Sequence[str], step: int | None = None) -> list[str]:
        """`rows` sorted by mean held-out loss, lowest first: at the end on every held-out
        character, or at an estimate `step` on the fixed batches."""
        key = self.mean if step is None else (lambda r: self.estimate(r, step))
        return sorted(rows, key=key)

    def last_reorder(self, rows: Sequence[str]) -> int:
        """The last estimate step at which the order of `rows` by mean estimate differed from
        the order at the last estimate (0 if it never did after the start)."""
        steps = self.curves(rows[0])[0].eval_steps
        final = self.order(rows, steps[-1])
        return max((s for s in steps[1:] if self.order(rows, s) != final), default=0)
