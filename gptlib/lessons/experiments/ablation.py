"""What each piece of the GPT buys: an ablation ladder on a character corpus (notebook 08).

Every rung is a `gptlib.GPT` with pieces taken out, trained with the same seed, data and step
budget, and scored by its held-out loss on the same fixed batches:

    bigram → + attention, one head → + several heads → + MLP → + residuals → + LayerNorm (the
    full model) → the full model without position embeddings.

The full rung is gptlib's model untouched. The others are its lesson variants
(`gptlib.lessons.experiments.variants`): the same modules, and so the same initialisation, with
blocks rewired without the MLP, the residual connections or the LayerNorms; the bigram rung has
no blocks at all, so its logits at position t depend on token t alone.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from dataclasses import dataclass

import torch
from torch import nn

from gptlib.lessons.experiments.variants import Variant, build_gpt
from gptlib.model import GPT, GPTConfig
from gptlib.train import TrainConfig, Trainer


@dataclass(frozen=True)
class Rung:
    """Which pieces a rung of the ladder keeps. `several_heads=False` means one head of width d."""

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
    Rung("full, no positions", positions=False),
)


def build_rung(
    rung: Rung,
    vocab_size: int,
    *,
    d_model: int = 64,
    n_layers: int = 2,
    n_heads: int = 4,
    max_len: int = 64,
    embedding_std: float = 0.02,
) -> GPT:
    """The GPT of one rung: gptlib's model with the pieces `rung` leaves out removed."""
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
    )
    model = build_gpt(config, variant, embedding_std=embedding_std)
    if not rung.attention:
        model.blocks = nn.ModuleList()
    return model


@dataclass(frozen=True)
class RungResult:
    """One trained rung: its parameter count, losses on the fixed batches, training seconds."""

    name: str
    parameters: int
    val_loss: float
    train_loss: float
    seconds: float


@dataclass(frozen=True)
class LadderResult:
    """Every rung after the same training budget (`steps` steps of `batch_size` × `block_size`)."""

    rungs: tuple[RungResult, ...]
    steps: int
    tokens_per_step: int

    def __getitem__(self, name: str) -> RungResult:
        for r in self.rungs:
            if r.name == name:
                return r
        raise KeyError(f"no rung {name!r}; rungs: {[r.name for r in self.rungs]}")

    def gains(self) -> dict[str, float]:
        """How much each rung lowers the held-out loss of the one before it (the ladder's
        order; negative: it made things worse). The last rung is compared with the full model."""
        gains, previous = {}, None
        for r in self.rungs:
            if previous is not None:
                base = self["+ LayerNorm (full)"] if r.name == "full, no positions" else previous
                gains[r.name] = base.val_loss - r.val_loss
            previous = r
        return gains

    def lines(self) -> list[str]:
        """One `name = value` line per rung: held-out loss and parameters."""
        return [
            f"{r.name} = {r.val_loss:z.3f} nats held out ({r.parameters:,} parameters)"
            for r in self.rungs
        ]


def train_ladder(
    train_ids: torch.Tensor,
    val_ids: torch.Tensor,
    vocab_size: int,
    config: TrainConfig,
    rungs: tuple[Rung, ...] = LADDER,
    *,
    d_model: int = 64,
    n_layers: int = 2,
    n_heads: int = 4,
    embedding_std: float = 0.02,
    seed: int = 0,
) -> LadderResult:
    """Train every rung on train_ids [N] with one seed and one `config`; score it on val_ids.

    Held-out loss is the mean over `config.eval_batches` fixed batches of val_ids, the same
    batches for every rung (the Trainer draws them from `config.seed`).
    """
    results = []
    for rung in rungs:
        torch.manual_seed(seed)
        model = build_rung(
            rung,
            vocab_size,
            d_model=d_model,
            n_layers=n_layers,
            n_heads=n_heads,
            max_len=config.block_size,
            embedding_std=embedding_std,
        )
        start = time.perf_counter()
        history = Trainer(model, train_ids, val_ids, config).run(progress=False)
        results.append(
            RungResult(
                rung.name,
                model.num_parameters(),
                history.eval_val_loss[-1],
                history.eval_train_loss[-1],
                time.perf_counter() - start,
            )
        )
    return LadderResult(tuple(results), config.steps, config.batch_size * config.block_size)


@dataclass(frozen=True)
class LadderSeeds:
    """The same ladder trained once per seed (each seed draws its own initialisation, batches
    and held-out batches): `ladders[i]` was trained with `seeds[i]`."""

    seeds: tuple[int, ...]
    ladders: tuple[LadderResult, ...]

    def losses(self, name: str) -> list[float]:
        """Rung `name`'s held-out loss for each seed, in the order of `seeds`."""
        return [ladder[name].val_loss for ladder in self.ladders]

    def lines(self) -> list[str]:
        """One line per rung: the mean held-out loss and its range over the seeds."""
        seeds = ", ".join(str(s) for s in self.seeds)
        lines = []
        for rung in self.ladders[0].rungs:
            losses = self.losses(rung.name)
            lines.append(
                f"{rung.name:20s} {statistics.mean(losses):z.3f} nats held out on average, "
                f"from {min(losses):z.3f} to {max(losses):z.3f} over seeds {seeds}"
            )
        return lines


def train_ladder_seeds(
    train_ids: torch.Tensor,
    val_ids: torch.Tensor,
    vocab_size: int,
    config: TrainConfig,
    seeds: tuple[int, ...] = (0, 1, 2),
    **ladder_options: object,
) -> LadderSeeds:
    """`train_ladder` once per seed: the seed sets the initialisation (`seed`) and the batches
    (`config.seed`); `ladder_options` are `train_ladder`'s keywords (`d_model`, ...)."""
    if not seeds:
        raise ValueError("seeds is empty: give at least one seed, e.g. seeds=(0, 1, 2)")
    ladders = tuple(
        train_ladder(
            train_ids,
            val_ids,
            vocab_size,
            dataclasses.replace(config, seed=seed),
            seed=seed,
            **ladder_options,  # type: ignore[arg-type]
        )
        for seed in seeds
    )
    return LadderSeeds(tuple(seeds), ladders)


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
