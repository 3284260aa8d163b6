"""A task that needs two attention patterns at once: one head against several (notebook 08).

The input is a stream of letters, digits and filler dots, such as `a3..b...1..c.`; at every
position the answer is the pair (latest letter, latest digit) seen so far, e.g. `c1`. A position
holding a dot must find both in the past, at distances that change from sequence to sequence:
one lookup that favours letters and recent positions, another that favours digits. A head has
one softmax, so it can only share one pattern of weights between the two; h heads at the same
width d have h patterns. `train_heads` trains one-layer GPTs with 1, 2 or 4 heads on it with a
training loop passed in (notebook 08's student's).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from gptlib.lessons.nb08.experiments.long_runs import long_runs
from gptlib.lessons.shared.experiments.attention_maps import attention_maps
from gptlib.lessons.shared.experiments.variants import Variant, build_gpt, positions_of
from gptlib.model import GPT, GPTConfig

IGNORE = -1  # the target GPT leaves out of its loss (nanoGPT's convention): no answer yet


@dataclass(frozen=True)
class TwoLookups:
    """The task: `n_symbols` letters and as many digits, each appearing with probability
    `p_each` at a position (filler dots otherwise), in sequences of `length` tokens.

    Input ids: letters 0..n−1, digits n..2n−1, the dot 2n. Answer ids: n·letter + digit.
    The first two tokens are a letter and a digit, so every later position has an answer.
    """

    n_symbols: int = 4
    length: int = 24
    p_each: float = 0.15

    def __post_init__(self) -> None:
        if not 1 <= self.n_symbols <= 10:
            raise ValueError(f"n_symbols must be in 1..10 (digits 0-9), got {self.n_symbols}")
        if self.length < 3:
            raise ValueError(f"length must be at least 3, got {self.length}")
        if not 0 < self.p_each <= 0.5:
            raise ValueError(f"p_each must be in (0, 0.5], got {self.p_each}")

    @property
    def chars(self) -> str:
        """The input alphabet, in id order: letters, digits, the dot."""
        n = self.n_symbols
        return "abcdefghij"[:n] + "0123456789"[:n] + "."

    @property
    def vocab_size(self) -> int:
        """Room for the 2n + 1 input ids and the n² answers."""
        return max(2 * self.n_symbols + 1, self.n_symbols**2)

    def answer_text(self, answer: int) -> str:
        """Answer id → its pair of characters, e.g. 9 → 'c1' for n = 4."""
        n = self.n_symbols
        return self.chars[answer // n] + self.chars[n + answer % n]

    def sample(self, batch_size: int, generator: torch.Generator) -> TaskBatch:
        """`batch_size` random sequences with their answers and where the answers come from."""
        n, B, T = self.n_symbols, batch_size, self.length
        draw = torch.rand(B, T, generator=generator)
        kind = torch.full((B, T), 2)  # 0: letter, 1: digit, 2: dot
        kind[draw < 2 * self.p_each] = 1
        kind[draw < self.p_each] = 0
        kind[:, 0], kind[:, 1] = 0, 1
        symbol = torch.randint(n, (B, T), generator=generator)
        x = torch.where(kind == 2, 2 * n, symbol + n * kind)
        positions = torch.arange(T).expand(B, T)
        latest = [
            torch.cummax(torch.where(kind == k, positions, -1), dim=1).values for k in (0, 1)
        ]  # [B, T] each: position of the latest letter / digit at or before t (-1: none yet)
        letter, digit = (symbol.gather(1, p.clamp(min=0)) for p in latest)
        y = torch.where((latest[0] >= 0) & (latest[1] >= 0), n * letter + digit, IGNORE)
        return TaskBatch(x, y, latest[0], latest[1])


@dataclass(frozen=True)
class TaskBatch:
    """Inputs x [B, T], answers y [B, T] (IGNORE where there is none), and the positions
    [B, T] of the latest letter and the latest digit at or before each position."""

    x: torch.Tensor
    y: torch.Tensor
    letter_at: torch.Tensor
    digit_at: torch.Tensor


@dataclass(frozen=True)
class HeadsRun:
    """One trained model scored on held-out sequences: the loss and the accuracy over every
    position that has an answer, and how much attention goes to the two things to look up.

    letter_weight / digit_weight: at positions holding a dot (where both must be looked up),
    the mean weight on the latest letter / latest digit, taking for each the head that puts
    the most on it. With one head both come from the same softmax, so they sum to at most 1.
    """

    n_heads: int
    positions: str
    loss: float
    accuracy: float
    letter_weight: float
    digit_weight: float

    @property
    def name(self) -> str:
        heads = f"{self.n_heads} head" + ("s" if self.n_heads > 1 else "")
        return heads if self.positions == "learned" else f"{heads}, no positions"

    def lines(self) -> list[str]:
        """The run's numbers as `name = value` lines."""
        return [
            f"{self.name}: accuracy = {self.accuracy:z.3f}",
            f"{self.name}: loss = {self.loss:z.3f}",
            f"{self.name}: weight on the latest letter = {self.letter_weight:z.3f}",
            f"{self.name}: weight on the latest digit = {self.digit_weight:z.3f}",
        ]


def train_heads(
    train: Callable[..., tuple],
    n_heads: int,
    task: TwoLookups = TwoLookups(),
    d_model: int = 16,
    steps: int = 500,
    lr: float = 3e-3,
    batch_size: int = 32,
    seed: int = 0,
    positions: str = "learned",
) -> GPT:
    """A one-layer GPT of width d_model with n_heads heads (and `positions` as in `Variant`),
    trained by train(model, get_batch, eval_batches, steps, lr, eval_every) (notebook 08's
    loop) on fresh batches of `task`; the positions with no answer yet carry no loss. Returned
    in evaluation mode."""
    torch.manual_seed(seed)
    config = GPTConfig(
        vocab_size=task.vocab_size,
        d_model=d_model,
        n_heads=n_heads,
        n_layers=1,
        max_len=task.length,
    )
    model = build_gpt(config, Variant(positions=positions))
    generator = torch.Generator().manual_seed(seed)

    def get_batch() -> tuple[torch.Tensor, torch.Tensor]:
        batch = task.sample(batch_size, generator)
        return batch.x, batch.y  # y is IGNORE, left out of GPT's loss, where unanswered

    check = task.sample(batch_size, torch.Generator().manual_seed(seed + 1))
    fixed = {"train": [(check.x, check.y)], "val": [(check.x, check.y)]}
    if steps:
        train(model, get_batch, fixed, steps, lr, steps)
    return model.eval()


@torch.no_grad()
def evaluate_heads(model: GPT, task: TwoLookups, batch: TaskBatch) -> HeadsRun:
    """Score a model trained on `task` on a held-out `batch` of it (see `HeadsRun`)."""
    logits, _ = model(batch.x)  # [B, T, V]
    loss = F.cross_entropy(logits.flatten(0, 1), batch.y.flatten(), ignore_index=IGNORE)
    has_answer = batch.y != IGNORE
    right = logits.argmax(-1) == batch.y
    maps = attention_maps(model, batch.x)[0]  # [B, h, T, T] (one layer)
    dots = has_answer & (batch.x == 2 * task.n_symbols)  # [B, T]: both must be looked up
    letter_w, digit_w = (_weight_on(maps, at)[dots] for at in (batch.letter_at, batch.digit_at))
    return HeadsRun(
        n_heads=model.config.n_heads,
        positions=positions_of(model),
        loss=loss.item(),
        accuracy=right[has_answer].float().mean().item(),
        letter_weight=letter_w.mean(0).max().item(),
        digit_weight=digit_w.mean(0).max().item(),
    )


def _weight_on(maps: torch.Tensor, at: torch.Tensor) -> torch.Tensor:
    """maps [B, h, T, T], key positions at [B, T] → each query's weight on its key, [B, T, h]."""
    index = at.clamp(min=0)[:, None, :, None].expand(-1, maps.shape[1], -1, 1)
    return maps.gather(-1, index)[..., 0].transpose(1, 2)


def stored_heads_runs() -> dict[int, list[HeadsRun]]:
    """The two-lookups models on seeds 0-2 as `scripts/nb08_runs.py lookups` stored them
    (reference loop, the notebook's settings and held-out sequences): seed → [1 head, 2 heads,
    4 heads, 4 heads without positions]."""
    by_seed: dict[int, list[HeadsRun]] = {}
    for r in long_runs()["lookups"]["runs"]:
        run = HeadsRun(r["n_heads"], r["positions"], r["loss"], r["accuracy"],
                       r["letter_weight"], r["digit_weight"])  # fmt: skip
        by_seed.setdefault(r["seed"], []).append(run)
    return by_seed
