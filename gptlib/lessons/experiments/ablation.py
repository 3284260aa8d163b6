"""What each piece of the GPT buys: an ablation ladder and its leave-one-out twin (notebook 08).

Every configuration is gptlib's GPT (`variants`) with pieces taken out, trained by a loop that
is passed in (notebook 08's student's `train`, or the reference in `scripts/nb08_runs.py`):

    ladder: bigram → + attention, 1 head → + several heads → + MLP → + residuals → + LayerNorm
    leave one out: the full model without attention, heads, the MLP, residuals, or positions

The ladder adds pieces in one order, so what a piece seems to buy may depend on what came
before it; the full model minus each piece measures it added last. Long runs of both (several
seeds, each configuration at the learning rate it trains best at) are stored in
`gptlib/data/nb08_runs.json` (`long_runs`); a notebook trains a few steps of them live.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from gptlib.lessons.experiments.attention_maps import attention_maps
from gptlib.lessons.experiments.long_runs import Curves, fixed_batches, long_runs
from gptlib.lessons.experiments.variants import Variant, build_gpt
from gptlib.model import GPT, GPTConfig

# The small GPT every configuration is cut from, and how it is fed.
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
FULL = LADDER[-1].name
# Each piece, and the configuration that is the full model without it.
LEFT_OUT: dict[str, Rung] = {
    "attention": Rung("full, no attention", attention=False),
    "several heads": Rung("full, 1 head", several_heads=False),
    "MLP": Rung("full, no MLP", mlp=False),
    "residuals": Rung("full, no residuals", residual=False),
    "LayerNorm": LADDER[4],
    "positions": Rung("full, no positions", positions=False),
}
# The piece each ladder rung adds (the first adds positions with attention).
ADDS = dict(zip(LEFT_OUT, (r.name for r in LADDER[1:]), strict=False))
CONFIGS: dict[str, Rung] = {r.name: r for r in (*LADDER, *LEFT_OUT.values())}


def build_rung(
    rung: Rung,
    vocab_size: int,
    *,
    d_model: int = 64,
    n_layers: int = 2,
    n_heads: int = 4,
    max_len: int = BLOCK,
    init: str = "pytorch",
) -> GPT:
    """The GPT of one configuration: ids [B, T] → (logits [B, T, V], loss). init="pytorch" is
    every module's own default (the chapter's); "gpt2" is GPT-2's, with the output projections
    scaled by 1/√(2L) for a residual stream (embeddings N(0, 1) either way)."""
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
    model = build_gpt(config, variant, embedding_std=1.0, init=init)
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
    init: str = "pytorch",
    n_eval: int = 20,
    trained: Callable[[GPT, dict], None] | None = None,
) -> Curves:
    """One run as the long runs were made: weights from `seed`, training batches
    get_batch(train_ids, 12, 64, generator seeded with `seed`), the same `n_eval` fixed batches
    of each split for every run (`fixed_batches`), then train(model, ...)'s estimates.
    `trained(model, fixed batches)`, if given, looks at the trained model."""
    torch.manual_seed(seed)
    model = build_rung(rung, vocab_size, init=init, **SHAPE)
    generator = torch.Generator().manual_seed(seed)
    batches = fixed_batches(get_batch, train_ids, val_ids, n_eval, BATCH, BLOCK)
    out = train(
        model, lambda: get_batch(train_ids, BATCH, BLOCK, generator), batches, steps, lr, eval_every
    )
    if trained is not None:
        trained(model, batches)
    return Curves.of(out)


def self_weights(model: GPT, idx: torch.Tensor) -> list[list[float]]:
    """Per layer and head, the mean attention weight a position puts on itself, over idx
    [B, T]: how much of the current token a head passes on."""
    maps = attention_maps(model, idx)  # [L, B, h, T, T]
    return maps.diagonal(dim1=-2, dim2=-1).mean(dim=(1, 3)).tolist()


def signal_at_init(rung: Rung, vocab_size: int, ids: torch.Tensor, init: str) -> float:
    """Std of the last hidden states [B, T, d] an untrained configuration (seed 0) computes for
    ids [B, T]: how much of the embeddings, std ≈ 1.4, reaches the unembedding."""
    torch.manual_seed(0)
    with torch.no_grad():
        return build_rung(rung, vocab_size, init=init, **SHAPE).hidden_states(ids).std().item()


@dataclass(frozen=True)
class Ladder:
    """The long runs: the held-out curves of every configuration and seed, each configuration
    at its own learning rate (the best of its runs on `selection_seed` with PyTorch's
    initialisation); the rungs without residual connections also with GPT-2's, at that rate."""

    runs: dict[tuple[str, str, float, int], Curves]  # (config, init, lr, seed) → curves
    lrs: tuple[float, ...]
    seeds: tuple[int, ...]
    selection_seed: int
    steps: int
    # (config, init, lr, seed) → the trained model's `self_weights`, [L][h]
    weights: dict[tuple[str, str, float, int], list[list[float]]] = field(default_factory=dict)

    @classmethod
    def load(cls) -> Ladder:
        data = long_runs()["ladder"]
        key = lambda r: (r["config"], r["init"], r["lr"], r["seed"])  # noqa: E731
        runs = {key(r): Curves.from_dict(r) for r in data["runs"]}
        weights = {key(r): r["self_weights"] for r in data["runs"] if "self_weights" in r}
        return cls(
            runs,
            tuple(data["lrs"]),
            tuple(data["seeds"]),
            data["selection_seed"],
            data["steps"],
            weights,
        )

    def self_weights(self, config: str, init: str = "pytorch") -> list[list[list[float]]]:
        """The reported seeds' trained `config`: each head's mean weight on its own position,
        [seed][layer][head]."""
        lr = self.best_lr(config)
        return [self.weights[config, init, lr, s] for s in self.seeds]

    def best_lr(self, config: str) -> float:
        """The learning rate whose run of `config` with PyTorch's initialisation on the
        selection seed ended lowest (NaN counts as ∞)."""
        s = self.selection_seed
        ends = {lr: self.runs[config, "pytorch", lr, s].val[-1] for lr in self.lrs}
        return min(ends, key=lambda lr: ends[lr] if math.isfinite(ends[lr]) else math.inf)

    def curves(self, config: str, init: str = "pytorch") -> list[Curves]:
        """The reported seeds' runs of `config` at its best learning rate (with either
        initialisation: the rate chosen with PyTorch's)."""
        lr = self.best_lr(config)
        return [self.runs[config, init, lr, s] for s in self.seeds]

    def loss(self, config: str, init: str = "pytorch", step: int | None = None) -> list[float]:
        """Held-out loss of each reported seed at `step` (default: the end)."""
        return [c.val_at(self.steps if step is None else step) for c in self.curves(config, init)]

    def mean(self, config: str, init: str = "pytorch", step: int | None = None) -> float:
        return statistics.mean(self.loss(config, init, step))

    def ladder_gains(self, step: int | None = None) -> dict[str, list[float]]:
        """Per rung, seed by seed: how much lower its held-out loss is than the rung before."""
        names = [r.name for r in LADDER]
        losses = {name: self.loss(name, step=step) for name in names}
        return {
            new: [a - b for a, b in zip(losses[old], losses[new], strict=True)]
            for old, new in zip(names, names[1:], strict=False)
        }

    def added_last(self, step: int | None = None) -> dict[str, list[float]]:
        """Per piece, seed by seed: how much lower the full model's loss is than its loss
        without that piece (the piece added last)."""
        full = self.loss(FULL, step=step)
        return {
            piece: [a - b for a, b in zip(self.loss(rung.name, step=step), full, strict=True)]
            for piece, rung in LEFT_OUT.items()
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
