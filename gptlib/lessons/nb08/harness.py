"""Lesson 08's inputs and adapters that a graded release ships: what a student's batches show
(not the draws themselves), and the training loop run on small seeded models with a record of
how the model ran on each kind of batch."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from gptlib.data.batches import BatchSampler
from gptlib.lessons.engine.checks.compare import describe
from gptlib.lessons.engine.checks.core import CheckError
from gptlib.model import GPT, GPTConfig

BATCH_SUMMARY = (
    "x's rows",
    "y's rows",
    "the smallest start drawn",
    "the largest start drawn",
    "how many different starts were drawn",
    "drawing with the same generator state twice",
    "drawing with another seed",
)
WINDOWS = ("windows of the text", "not all windows of the text")
TARGETS = ("x's windows one token later", "not all x's windows one token later")
SAME = ("the same batch twice", "two different batches")
OTHER = ("another batch", "the same batch")


def summarise_batches(get_batch: Callable[..., Any]) -> Callable[..., tuple]:
    """`adapt`: call get_batch(ids, B, T, generator) `draws` times on a text of `n` distinct
    tokens in random order; return what the batches show (`BATCH_SUMMARY`), not the draws
    themselves, so that any way of drawing uniform starts passes."""

    def run(n: int, batch_size: int, block_size: int, draws: int, seed: int) -> tuple:
        ids = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
        where = torch.empty(n, dtype=torch.long)
        where[ids] = torch.arange(n)  # token → its position in the text
        generator = torch.Generator().manual_seed(seed + 1)
        windows = targets = True
        starts: list[int] = []
        for _ in range(draws):
            x, y = _batch_pair(get_batch(ids, batch_size, block_size, generator))
            _check_batch_shape(x, y, batch_size, block_size)
            for row_x, row_y in zip(x, y, strict=True):
                s = int(where[row_x[0]])
                windows &= s + block_size <= n and torch.equal(row_x, ids[s : s + block_size])
                targets &= s + block_size < n and torch.equal(
                    row_y, ids[s + 1 : s + block_size + 1]
                )
                starts.append(s)
        same = [_batch_pair(get_batch(ids, batch_size, block_size, _seeded(seed))) for _ in "ab"]
        other = _batch_pair(get_batch(ids, batch_size, block_size, _seeded(seed + 7)))
        return (
            WINDOWS[not windows],
            TARGETS[not targets],
            min(starts),
            max(starts),
            len(set(starts)),
            SAME[not torch.equal(same[0][0], same[1][0])],
            OTHER[torch.equal(same[0][0], other[0])],
        )

    return run


def _seeded(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _batch_pair(out: object) -> tuple[torch.Tensor, torch.Tensor]:
    if not (isinstance(out, tuple | list) and len(out) == 2):
        raise CheckError(
            "get-batch",
            f"get_batch should return two tensors, x and y; it returned {describe(out)}",
        )
    x, y = out
    for name, t in (("x", x), ("y", y)):
        if not isinstance(t, torch.Tensor) or t.dtype != torch.long:
            what = f"a {t.dtype} tensor" if isinstance(t, torch.Tensor) else describe(t)
            raise CheckError(
                "get-batch",
                f"{name} should be a tensor of token ids (torch.long, like ids); got {what}",
            )
    return x, y


def _check_batch_shape(x: torch.Tensor, y: torch.Tensor, batch_size: int, block_size: int) -> None:
    expected = [batch_size, block_size]
    for name, t in (("x", x), ("y", y)):
        if list(t.shape) != expected:
            raise CheckError(
                "get-batch",
                f"{name} has shape {list(t.shape)}; a batch is [batch_size, block_size] = "
                f"{expected}: one window of block_size tokens per row",
            )


@dataclass(frozen=True)
class LoopCase:
    """One input of the `train` check: which small model, and the loop's settings."""

    model: str  # "gpt": a one-layer GPT with dropout 0.2; "bigram": a table of logits
    steps: int
    lr: float
    eval_every: int


LOOP_RETURNS = (
    "the loss of each step's batch",
    "the steps of the estimates",
    "the training estimates",
    "the held-out estimates",
    "how the model ran",
)
TRAINING = "training batches"
FIXED = "fixed batches"
GRAPHS_KEPT = "returned tensors that keep their graphs"


class _Bigram(nn.Module):
    """The smallest language model: a table of next-token logits. idx [B, T] → (logits
    [B, T, V], mean cross-entropy or None)."""

    def __init__(self, vocab_size: int) -> None:
        super().__init__()
        self.table = nn.Embedding(vocab_size, vocab_size)

    def forward(self, idx, targets=None):
        logits = self.table(idx)
        loss = None if targets is None else F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        return logits, loss


def loop_model(kind: str, vocab_size: int) -> nn.Module:
    if kind == "bigram":
        return _Bigram(vocab_size)
    config = GPTConfig(
        vocab_size=vocab_size, d_model=16, n_heads=2, n_layers=1, max_len=8, dropout=0.2
    )
    return GPT(config, init="pytorch")


def run_loop(train: Callable[..., Any]) -> Callable[[LoopCase], tuple]:
    """`adapt`: build the case's model (seeded), a batch source and fixed batches of two token
    streams, run `train` with the dropout seeded, and return its curves as numbers with how the
    model ran on each kind of batch (gradients, training or evaluation mode)."""

    def run(case: LoopCase) -> tuple:
        V, B, T = 11, 4, 8
        data = torch.Generator().manual_seed(1)
        text = (torch.arange(500) * 3 + torch.randint(2, (500,), generator=data)) % V  # learnable
        train_ids, val_ids = text[:350], text[350:]
        eval_batches = {
            split: [tuple(t.contiguous() for t in sampler.sample()) for _ in range(3)]
            for split, sampler in (
                ("train", BatchSampler(train_ids, B, T, seed=2)),
                ("val", BatchSampler(val_ids, B, T, seed=3)),
            )
        }
        fixed = {x.data_ptr() for batches in eval_batches.values() for x, _ in batches}
        handed: set[int] = set()
        sampler = BatchSampler(train_ids, B, T, seed=4)

        def get_batch() -> tuple[torch.Tensor, torch.Tensor]:
            x, y = (t.contiguous() for t in sampler.sample())
            handed.add(x.data_ptr())
            return x, y

        ran: set[str] = set()

        def note(module: nn.Module, args: tuple) -> None:
            ptr = args[0].data_ptr() if args and isinstance(args[0], torch.Tensor) else None
            kind = FIXED if ptr in fixed else TRAINING if ptr in handed else "other inputs"
            grad = "on" if torch.is_grad_enabled() else "off"
            mode = "training" if module.training else "evaluation"
            ran.add(f"{kind}: gradients {grad}, {mode} mode")

        with torch.random.fork_rng(devices=[]):  # the notebook's own draws stay as they were
            torch.manual_seed(0)
            model = loop_model(case.model, V)
            handle = model.register_forward_pre_hook(note)
            torch.manual_seed(5)  # dropout's draws
            try:
                out = train(model, get_batch, eval_batches, case.steps, case.lr, case.eval_every)
            finally:
                handle.remove()
        curves = _four_curves(out)
        kept = any(isinstance(v, torch.Tensor) and v.requires_grad for c in curves for v in c)
        how = tuple(sorted(ran)) + ((GRAPHS_KEPT,) if kept else ())
        losses, steps, train_est, val_est = (
            _numbers(name, c) for name, c in zip(LOOP_RETURNS, curves, strict=False)
        )
        return losses, [int(s) for s in steps], train_est, val_est, how

    return run


def _four_curves(out: object) -> tuple[Sequence, Sequence, Sequence, Sequence]:
    if not (isinstance(out, tuple | list) and len(out) == 4):
        raise CheckError(
            "train",
            "train should return four lists, (losses, eval_steps, train_estimates, "
            f"val_estimates); it returned {describe(out)}",
        )
    for name, curve in zip(LOOP_RETURNS, out, strict=False):
        if not isinstance(curve, Sequence) or isinstance(curve, str):
            raise CheckError("train", f"{name} should be a list of numbers; got {describe(curve)}")
    return tuple(out)


def _numbers(name: str, curve: Sequence) -> list[float]:
    try:
        return [float(v.detach() if isinstance(v, torch.Tensor) else v) for v in curve]
    except (TypeError, ValueError, RuntimeError):
        kinds = sorted({describe(v) for v in curve})[:2]
        raise CheckError(
            "train",
            f"{name} should be a list of numbers, one per step or estimate; it holds {kinds}",
        ) from None


RAN_WELL = {
    TRAINING: f"{TRAINING}: gradients on, training mode",
    FIXED: f"{FIXED}: gradients off, evaluation mode",
}


# --- properties: conditions any right answer meets (no reference needed) ---


def windows_of_the_text(out: tuple, *_: object) -> str | None:
    if out[0] != WINDOWS[0]:
        return (
            "a row of x is not a stretch of consecutive tokens of ids: each row must be one "
            "window, ids[s], ids[s + 1], …, in the text's order"
        )
    return None


def targets_one_later(out: tuple, *_: object) -> str | None:
    if out[0] == WINDOWS[0] and out[1] != TARGETS[0]:
        return (
            "a row of y is not its row of x one token later: y[b, t] must be the token that "
            "follows x[b, t] in the text"
        )
    return None


def estimates_without_dropout_or_gradients(out: tuple, *_: object) -> str | None:
    wrong = [line for line in out[4] if line.startswith(FIXED) and line != RAN_WELL[FIXED]]
    if wrong:
        return (
            f"the estimates ran with {wrong[0].split(': ')[1]}: they measure the model as it "
            "will be used, without dropout, and nothing is learned from them, so no gradients"
        )
    return None


def training_with_gradients(out: tuple, *_: object) -> str | None:
    wrong = [line for line in out[4] if line.startswith(TRAINING) and line != RAN_WELL[TRAINING]]
    if wrong:
        return (
            f"the training batches ran with {wrong[0].split(': ')[1]}: a training step runs in "
            "training mode (dropout on) with gradients on"
        )
    return None


def plain_numbers(out: tuple, *_: object) -> str | None:
    if GRAPHS_KEPT in out[4]:
        return (
            "your lists hold the loss tensors themselves; each keeps its whole computation "
            "graph alive, so memory grows with every step. Keep plain Python numbers"
        )
    return None


def between_one_and_v(out: object, logits: torch.Tensor, temperature: float) -> str | None:
    if not isinstance(out, torch.Tensor) or out.shape != logits.shape[:1]:
        shape = list(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        return f"expected one number per row, [B] = {list(logits.shape[:1])}, got {shape}"
    V = logits.shape[-1]
    if (out < 1 - 1e-4).any() or (out > V + 1e-3).any():
        return f"the count of choices lies between 1 (a certain choice) and V = {V} (uniform)"
    return None


def a_kept_distribution(out: object, logits: torch.Tensor, p: float) -> str | None:
    if not isinstance(out, torch.Tensor) or out.shape != logits.shape:
        shape = list(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        return f"expected probabilities of the logits' shape {list(logits.shape)}, got {shape}"
    if (out.gt(0).sum(dim=-1) == 0).any():
        return "a row keeps no token at all: the most likely token always stays in the nucleus"
    return None
