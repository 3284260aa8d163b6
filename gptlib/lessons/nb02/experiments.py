"""Why attention divides by √d_k (notebook 02): the student's softmax measurement (and their
softmax, for the weights the explorer shows) swept over head sizes, and a retrieval head
trained with and without the division.

Queries and keys have independent N(0, 1) components, as the chapter assumes at
initialisation, so an unscaled score q·k has variance d_k.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import torch
import torch.nn.functional as F
from torch import nn

from gptlib.validation import check_positive_int

WIDEST_DRAW = 1024  # components drawn once per seed; d_k <= this uses a prefix of them
# Notebook 02's measure_softmax: (q [N, d_k], k [N, n_keys, d_k], upstream [N, n_keys], scaled)
# -> (score std, mean max weight, mean entropy in nats, mean gradient norm).
Measure = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, bool], Sequence[float]]
# Notebook 02's softmax_rows: scores [..., n] -> weights over the last axis, [..., n].
Softmax = Callable[[torch.Tensor], torch.Tensor]


def _torch_softmax(scores: torch.Tensor) -> torch.Tensor:
    return torch.softmax(scores, dim=-1)


@dataclass(frozen=True)
class Saturation:
    """One (d_k, scaled) setting: `measure`'s four numbers, and for the plots the scores
    [n_queries, n_keys] entering the softmax and the first query's weights [n_keys]."""

    d_k: int
    scaled: bool
    scores: torch.Tensor
    weights: torch.Tensor
    score_std: float
    max_weight: float
    entropy: float
    grad_norm: float

    def lines(self) -> list[str]:
        """The numbers as `name = value` lines (the explorer prints these; tests read them)."""
        return [
            f"d_k = {self.d_k}",
            f"scaled = {self.scaled}",
            f"score std = {self.score_std:z.3f}",
            f"sqrt(d_k) = {math.sqrt(self.d_k):z.3f}",
            f"max weight = {self.max_weight:z.3f}",
            f"entropy = {self.entropy:z.3f}",
            f"grad norm = {self.grad_norm:z.3f}",
        ]


def draw_rows(
    d_k: int, seed: int = 0, n_queries: int = 256, n_keys: int = 16
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Seeded N(0, 1) q [n_queries, d_k], k [n_queries, n_keys, d_k], upstream [n_queries,
    n_keys]: q and k are the first d_k components of one wide draw, so a wider head adds
    components to the same vectors."""
    check_positive_int("d_k", d_k)
    if n_queries < 2 or n_keys < 2:
        raise ValueError(
            f"need n_queries >= 2 and n_keys >= 2 to measure a spread, got "
            f"n_queries={n_queries}, n_keys={n_keys}"
        )
    q, k, upstream = _draw(seed, n_queries, n_keys, max(d_k, WIDEST_DRAW))
    return q[:, :d_k], k[..., :d_k], upstream


@lru_cache(maxsize=4)
def _draw(
    seed: int, n_queries: int, n_keys: int, width: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Cached because drawing 4M normals dominates a sweep; callers only slice."""
    generator = torch.Generator().manual_seed(seed)
    upstream = torch.randn(n_queries, n_keys, generator=generator)
    q = torch.randn(n_queries, width, generator=generator)
    k = torch.randn(n_queries, n_keys, width, generator=generator)
    return q, k, upstream


def saturation(
    d_k: int,
    scaled: bool,
    measure: Measure,
    seed: int = 0,
    n_queries: int = 256,
    n_keys: int = 16,
    softmax: Softmax = _torch_softmax,
) -> Saturation:
    """`measure` on the seeded rows of width d_k (each query against its own n_keys keys), and
    `softmax` on the whole table of scores [n_queries, n_keys] for the weights the plots show.

    Raises ValueError when `softmax` returns anything but finite weights of the scores' shape.
    """
    q, k, upstream = draw_rows(d_k, seed, n_queries, n_keys)
    score_std, max_weight, entropy, grad_norm = (
        _number(x) for x in measure(q.clone(), k.clone(), upstream.clone(), scaled)
    )
    scores = torch.einsum("nd,nkd->nk", q, k) / (math.sqrt(d_k) if scaled else 1.0)
    weights = softmax(scores.clone())
    setting = f"d_k = {d_k}, {'scaled' if scaled else 'unscaled'}"
    if not isinstance(weights, torch.Tensor) or weights.shape != scores.shape:
        raise ValueError(
            f"softmax must return weights of the scores' shape {list(scores.shape)}, got "
            f"{_described(weights)} ({setting})"
        )
    weights = weights.detach().float()
    broken = (~torch.isfinite(weights)).any(dim=-1)
    if broken.any():
        raise ValueError(
            f"softmax gave NaN or infinite weights in {int(broken.sum())} of {n_queries} rows "
            f"({setting}; largest score {scores.max():z.1f}): exp overflows float32 above about "
            "88, so subtract each row's largest score before exponentiating"
        )
    return Saturation(d_k, scaled, scores, weights[0], score_std, max_weight, entropy, grad_norm)


def _number(value: object) -> float:
    """A measured number as a float: a float, a NumPy number, or a one-element tensor (detached,
    so that a tensor still attached to autograd converts without a warning)."""
    return float(value.detach()) if isinstance(value, torch.Tensor) else float(value)


def _described(value: object) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {list(value.shape)}"
    return type(value).__name__


def saturation_sweep(
    widths: Sequence[int],
    measure: Measure,
    softmax: Softmax = _torch_softmax,
    seed: int = 0,
    n_queries: int = 256,
    n_keys: int = 16,
) -> dict[bool, list[Saturation]]:
    """`saturation` at every width, unscaled (key False) and scaled (key True) (notebook 02:
    the student's `measure_softmax` and `softmax_rows`)."""
    return {
        scaled: [
            saturation(d_k, scaled, measure, seed, n_queries, n_keys, softmax) for d_k in widths
        ]
        for scaled in (False, True)
    }


# --- Training with and without 1/√d_k: a retrieval task for one attention head -------------


@dataclass(frozen=True)
class RetrievalTask:
    """Key-value recall: `n_pairs` (key, value) pairs, then one of their keys as the query; the
    answer is the value stored with it (notebook 02).

    Keys are distinct ids out of `n_keys`, values random ids out of `n_values`. The pairs are a
    set (no positions), so the only way to the answer is to attend to the pair whose key
    matches the query: attention must learn *which key to read*. Guessing scores ln(n_values).
    """

    n_pairs: int = 16
    n_keys: int = 32
    n_values: int = 16

    def __post_init__(self) -> None:
        if not 2 <= self.n_pairs <= self.n_keys or self.n_values < 2:
            raise ValueError(
                f"need 2 <= n_pairs <= n_keys and n_values >= 2, got n_pairs={self.n_pairs}, "
                f"n_keys={self.n_keys}, n_values={self.n_values}"
            )

    def batch(
        self, batch_size: int, generator: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """keys [B, n_pairs], values [B, n_pairs] and the queried pair's index [B]."""
        keys = torch.rand(batch_size, self.n_keys, generator=generator).argsort(-1)
        keys = keys[:, : self.n_pairs]  # distinct keys in every sequence
        values = torch.randint(0, self.n_values, (batch_size, self.n_pairs), generator=generator)
        queried = torch.randint(0, self.n_pairs, (batch_size,), generator=generator)
        return keys, values, queried


class RetrievalHead(nn.Module):
    """One attention head over the pairs, its query the queried key (notebook 02).

    A pair is the vector (E_key[k] + E_value[v]) / √2, [d_model]; the query vector is E_key of
    the queried key. q = W_Q·query [d_k], k_j = W_K·pair_j [d_k], v_j = W_V·pair_j [d_model];
    the attention output goes through a linear readout to logits over the values. At
    initialisation every component of q and k has mean 0 and variance 1, the chapter's
    assumption, so unscaled scores spread with std √d_k. `scaled` divides them by √d_k.

    `qk_gain` multiplies the initial W_Q and W_K, and so the initial scores by qk_gain²: with
    qk_gain = d_k^(-1/4) an unscaled head starts from the scaled head's scores, with d_k^(1/4) a
    scaled head starts from the unscaled head's (the controls of notebook 02's section 7).
    """

    def __init__(
        self,
        task: RetrievalTask,
        d_k: int,
        scaled: bool,
        d_model: int,
        generator: torch.Generator,
        qk_gain: float = 1.0,
    ) -> None:
        super().__init__()
        self.scaled, self.d_k = scaled, d_k
        self.key_emb = nn.Embedding(task.n_keys, d_model)
        self.value_emb = nn.Embedding(task.n_values, d_model)
        self.W_Q = nn.Linear(d_model, d_k, bias=False)
        self.W_K = nn.Linear(d_model, d_k, bias=False)
        self.W_V = nn.Linear(d_model, d_model, bias=False)
        self.readout = nn.Linear(d_model, task.n_values, bias=False)
        with torch.no_grad():  # unit-variance embeddings; W ~ N(0, 1/d_model) keeps variance 1
            for emb in (self.key_emb, self.value_emb):
                nn.init.normal_(emb.weight, std=1.0, generator=generator)
            for linear in (self.W_Q, self.W_K, self.W_V, self.readout):
                nn.init.normal_(linear.weight, std=d_model**-0.5, generator=generator)
            self.W_Q.weight.mul_(qk_gain)
            self.W_K.weight.mul_(qk_gain)

    def forward(
        self, keys: torch.Tensor, values: torch.Tensor, queried: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """keys, values [B, n_pairs], queried [B] → (logits [B, n_values], scores [B, n_pairs]).

        `scores` are what enters the softmax (divided by √d_k when `scaled`).
        """
        pairs = (self.key_emb(keys) + self.value_emb(values)) / math.sqrt(2)  # [B, n, d_model]
        query = self.key_emb(keys.gather(1, queried[:, None]))  # [B, 1, d_model]
        q, k, v = self.W_Q(query), self.W_K(pairs), self.W_V(pairs)  # [B,1,d_k], [B,n,d_k], ...
        scores = (q @ k.transpose(-2, -1))[:, 0]  # [B, n_pairs]
        if self.scaled:
            scores = scores / math.sqrt(self.d_k)
        out = torch.softmax(scores, dim=-1)[:, None] @ v  # [B, 1, d_model]
        return self.readout(out[:, 0]), scores


@dataclass(frozen=True)
class RetrievalRun:
    """One training run of a `RetrievalHead` (notebook 02): `optimizer` ("adam" or "sgd") at
    learning rate `lr`, batches of `batch_size`.

    losses [steps]: each step's cross-entropy in nats per answer (before the update);
    answer_weight [steps]: the mean attention weight on the queried pair (1/n_pairs when the
    head reads at random, 1 when it reads the right pair);
    query_grad [steps]: ‖∂L/∂W_Q‖ of each step's batch;
    top3_share [steps]: of the batch's gradients on the queried pair's score, |∂L_b/∂z_b,j*|, the
    share that its three largest examples carry.
    """

    d_k: int
    scaled: bool
    task: RetrievalTask
    optimizer: str
    lr: float
    batch_size: int
    losses: torch.Tensor
    answer_weight: torch.Tensor
    query_grad: torch.Tensor
    top3_share: torch.Tensor

    @property
    def chance_loss(self) -> float:
        """The loss of guessing a value uniformly: ln(n_values) nats."""
        return math.log(self.task.n_values)

    def mean_loss(self, start: int, stop: int) -> float:
        """The mean loss of steps start..stop-1 (one step's loss, one batch's, is noisy)."""
        if not 0 <= start < stop <= len(self.losses):
            raise ValueError(f"need 0 <= start < stop <= {len(self.losses)}, got {start}, {stop}")
        return self.losses[start:stop].mean().item()

    def steps_to_learn(self, threshold: float = 0.5, window: int = 25) -> int | None:
        """How many steps the run had trained when the mean loss of its last `window` steps
        first fell below `threshold` nats, or None when the run never gets there."""
        means = self.losses.unfold(0, window, 1).mean(-1)  # [steps - window + 1]
        below = torch.nonzero(means < threshold)
        return int(below[0]) + window if len(below) else None

    def examples_to_learn(self, threshold: float = 0.5, window: int = 25) -> int | None:
        """`steps_to_learn` in training examples seen: steps times the batch size."""
        steps = self.steps_to_learn(threshold, window)
        return None if steps is None else steps * self.batch_size


OPTIMIZERS = {"adam": torch.optim.Adam, "sgd": torch.optim.SGD}


def first_batch(
    d_k: int,
    scaled: bool,
    batch_size: int = 32,
    d_model: int = 32,
    task: RetrievalTask = RetrievalTask(),
    seed: int = 0,
    qk_gain: float = 1.0,
) -> tuple[RetrievalHead, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The head at initialisation and the first batch (keys, values, queried) of the run that
    `train_retrieval` with the same arguments trains (notebook 02).

    The head's weights come from `seed` and the batches from `seed + 1` alone, so a scaled and
    an unscaled head of the same d_k start from the same weights and see the same batches.
    """
    check_positive_int("d_k", d_k)
    check_positive_int("batch_size", batch_size)
    if not qk_gain > 0:
        raise ValueError(f"qk_gain must be positive, got {qk_gain}")
    head = RetrievalHead(task, d_k, scaled, d_model, torch.Generator().manual_seed(seed), qk_gain)
    return head, *task.batch(batch_size, torch.Generator().manual_seed(seed + 1))


def train_retrieval(
    d_k: int,
    scaled: bool,
    steps: int = 300,
    optimizer: str = "adam",
    lr: float = 3e-3,
    batch_size: int = 32,
    d_model: int = 32,
    task: RetrievalTask = RetrievalTask(),
    seed: int = 0,
    qk_gain: float = 1.0,
    until_learned: int | None = None,
) -> RetrievalRun:
    """Train a fresh `RetrievalHead` on `task` and record the run (notebook 02); its first step
    is `first_batch` with the same arguments.

    With `until_learned`, training goes on after `steps` until `steps_to_learn()` is reached
    or `until_learned` steps have run (an unlearned run then stops there).
    """
    if steps < 25:
        raise ValueError(f"steps must be at least 25 (losses are averaged over 25), got {steps}")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {sorted(OPTIMIZERS)}, got {optimizer!r}")
    if until_learned is not None and until_learned < steps:
        raise ValueError(f"until_learned must be at least steps ({steps}), got {until_learned}")
    model, *_ = first_batch(d_k, scaled, batch_size, d_model, task, seed, qk_gain)
    update = OPTIMIZERS[optimizer](model.parameters(), lr=lr)
    batches = torch.Generator().manual_seed(seed + 1)
    rows = torch.arange(batch_size)
    most = steps if until_learned is None else until_learned
    losses, answer_weight, query_grad, top3_share = (torch.empty(most) for _ in range(4))
    step = 0
    while step < most and (step < steps or _mean_of_last(losses[:step]) >= 0.5):
        keys, values, queried = task.batch(batch_size, batches)
        logits, scores = model(keys, values, queried)
        scores.retain_grad()
        loss = F.cross_entropy(logits, values[rows, queried])
        update.zero_grad()
        loss.backward()
        on_pair = scores.grad[rows, queried].abs()  # [B]; each example's loss / B: shares agree
        query_grad[step] = model.W_Q.weight.grad.norm()
        top3_share[step] = on_pair.topk(min(3, batch_size)).values.sum() / on_pair.sum()
        update.step()
        losses[step] = loss.item()
        weights = torch.softmax(scores.detach(), dim=-1)
        answer_weight[step] = weights[rows, queried].mean()
        step += 1
    return RetrievalRun(
        d_k,
        scaled,
        task,
        optimizer,
        lr,
        batch_size,
        losses[:step],
        answer_weight[:step],
        query_grad[:step],
        top3_share[:step],
    )


def _mean_of_last(losses: torch.Tensor, window: int = 25) -> float:
    """The mean of the last `window` losses (the window `steps_to_learn` reads)."""
    return losses[-window:].mean().item()


def scaling_runs(d_k: int, steps: int = 300, **kwargs) -> dict[bool, RetrievalRun]:
    """`train_retrieval` unscaled (key False) and scaled (key True), same start (notebook 02);
    `kwargs` go to both runs."""
    return {scaled: train_retrieval(d_k, scaled, steps, **kwargs) for scaled in (False, True)}
