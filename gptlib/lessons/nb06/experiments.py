"""Experiments of notebook 06: Pre-LN vs Post-LN, at initialisation and in training.

Models are gptlib GPTs initialised like the original Transformer (Xavier-uniform matrices,
unit-variance embeddings), the setting Xiong et al. (2020) analyse, and trained on the
toy grammar (`gptlib.data.grammar`). Shapes: B batch, T positions, L blocks.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import torch
from torch import nn

from gptlib.data.batches import BatchSampler
from gptlib.data.grammar import TOY_GRAMMAR
from gptlib.lessons.shared.experiments.text_entropy import context_entropy
from gptlib.lessons.shared.experiments.toy import plain_adam, toy_text_ids, train_losses
from gptlib.lessons.shared.experiments.variants import Variant, build_gpt
from gptlib.model import GPT, GPTConfig, KVCache

# One small model for every experiment of notebook 06; depth is the knob that matters.
D_MODEL, N_HEADS, BLOCK_SIZE, BATCH_SIZE = 32, 4, 32, 16
TOY_SENTENCES = 2000
VOCAB_SIZE = TOY_GRAMMAR.tokenizer().vocab_size
NORM_LABELS = {"pre": "Pre-LN", "post": "Post-LN"}
Measured = TypeVar("Measured", torch.Tensor, tuple[torch.Tensor, ...])
# Notebook 06's exercise `block_forward(x, ln1, attn, ln2, mlp, norm)`: one block, x [B, T, d].
BlockForward = Callable[..., torch.Tensor]


def transformer_init_(model: GPT) -> GPT:
    """Re-initialise `model` in place like the original Transformer; return it.

    Every weight matrix Xavier-uniform, every bias 0, LayerNorm γ = 1 and β = 0, and the
    token and position embeddings N(0, 1) (the original scales its embeddings by √d, which
    makes them unit-sized).
    """
    for module in model.modules():
        if isinstance(module, nn.Linear):
            nn.init.xavier_uniform_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=1.0)
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
    return model


def toy_data() -> torch.Tensor:
    """The toy-grammar text every experiment of notebook 06 uses, as ids [N]."""
    return toy_text_ids(TOY_SENTENCES, seed=0)[0]


class WiredBlock(nn.Module):
    """A block's own modules (`ln1`, `attn`, `ln2`, `mlp`, with their parameter names), wired by
    a function: `block_forward(x, ln1, attn, ln2, mlp, norm)`, x [B, T, d] → [B, T, d], as the
    student writes it in notebook 06. Initialised in the same order as the block it wraps."""

    def __init__(self, block: nn.Module, norm: str, block_forward: BlockForward) -> None:
        super().__init__()
        self.ln1, self.attn, self.ln2, self.mlp = block.ln1, block.attn, block.ln2, block.mlp
        self.norm = norm
        self.block_forward = block_forward

    def forward(self, x: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """x [B, T, d] → [B, T, d]; no KV cache (these models are trained, not sampled)."""
        if cache is not None:
            raise ValueError("a WiredBlock runs whole sequences: it takes no KV cache")
        return self.block_forward(x, self.ln1, self.attn, self.ln2, self.mlp, self.norm)


def build_model(
    norm: str, n_layers: int, seed: int = 0, block_forward: BlockForward | None = None
) -> GPT:
    """A GPT with `norm` placement ("pre" or "post") and the original Transformer's init.

    With `block_forward` (notebook 06's exercise), every block is a `WiredBlock` run by that
    function; the weights are the same as without it."""
    torch.manual_seed(seed)
    config = GPTConfig(
        vocab_size=VOCAB_SIZE,
        d_model=D_MODEL,
        n_heads=N_HEADS,
        n_layers=n_layers,
        max_len=BLOCK_SIZE,
    )
    model = build_gpt(config, Variant(norm=norm))
    if block_forward is not None:
        for i, block in enumerate(model.blocks):
            model.blocks[i] = WiredBlock(block, norm, block_forward)
    return transformer_init_(model)


def per_model(
    measure: Callable[..., Measured],
    norm: str,
    n_layers: int,
    ids: torch.Tensor,
    n_models: int = 4,
    block_forward: BlockForward | None = None,
) -> Measured:
    """`measure(model, inputs, targets)` of `n_models` models at initialisation, stacked.

    Models are `build_model(norm, n_layers, seed, block_forward)` for seeds 0..n_models-1 (a
    seed draws the same weights for both placements); each sees the same batch of ids [N],
    inputs and targets [BATCH_SIZE, BLOCK_SIZE]. `measure` returns a tensor or a tuple of
    tensors (as notebook 06's exercises do); the result is a tensor [n_models, ...] or a tuple
    of such, in float64.
    """
    if n_models < 1:
        raise ValueError(f"need n_models >= 1, got {n_models}")
    inputs, targets = BatchSampler(ids, BATCH_SIZE, BLOCK_SIZE, seed=1000).sample()
    runs = [
        measure(build_model(norm, n_layers, s, block_forward), inputs, targets)
        for s in range(n_models)
    ]
    if isinstance(runs[0], torch.Tensor):
        return _stack(runs)
    return tuple(_stack(part) for part in zip(*runs, strict=True))


def mean_over_models(
    measure: Callable[..., Measured],
    norm: str,
    n_layers: int,
    ids: torch.Tensor,
    n_models: int = 4,
    block_forward: BlockForward | None = None,
) -> Measured:
    """The mean over models of `per_model`, in the same form as one measurement: an estimate of
    the expected value, as Xiong et al. take it, rather than one draw."""
    runs = per_model(measure, norm, n_layers, ids, n_models, block_forward)
    return runs.mean(0) if isinstance(runs, torch.Tensor) else tuple(r.mean(0) for r in runs)


def _stack(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    return torch.stack([t.detach().double() for t in tensors])


@dataclass(frozen=True)
class GradientProfiles:
    """Per-block gradient norms at initialisation, {"pre"|"post": [L]}, for one depth L."""

    profiles: dict[str, torch.Tensor]

    def __post_init__(self) -> None:
        if not self.profiles:
            raise ValueError("GradientProfiles needs at least one profile ('pre' or 'post')")

    @property
    def depth(self) -> int:
        return len(next(iter(self.profiles.values())))

    def lines(self) -> list[str]:
        """The key numbers as `name = value` lines (what the explorer prints)."""
        lines = [f"depth = {self.depth}"]
        for norm, profile in self.profiles.items():
            label = NORM_LABELS[norm]
            lines += [
                f"{label} first block = {profile[0]:z.3f}",
                f"{label} last block = {profile[-1]:z.3f}",
                f"{label} max / min = {profile.max() / profile.min():z.2f}",
            ]
        if {"pre", "post"} <= self.profiles.keys():
            ratio = self.profiles["post"][-1] / self.profiles["pre"][-1]
            lines.append(f"Post-LN / Pre-LN at the last block = {ratio:z.2f}")
        return lines


# The three arms of the learning-rate grid: (norm placement, with warmup).
ARMS = {"Pre-LN": ("pre", False), "Post-LN": ("post", False), "Post-LN + warmup": ("post", True)}
STALL_MARGIN = 0.2  # nats: a run that ends this close to the unigram entropy learned ~no context


@dataclass(frozen=True)
class LearningRateGrid:
    """Training runs over depth × learning rate for each arm of `ARMS` (notebook 06).

    curves [A, D, R, S, steps]: every step's training loss (NaN after a divergence), for arm
    a, depth d, learning rate r and seed s. `floor` is the unigram entropy of the data, the
    loss of a model that ignores the context.
    """

    arms: tuple[str, ...]
    depths: tuple[int, ...]
    lrs: tuple[float, ...]
    seeds: tuple[int, ...]
    steps: int
    warmup_steps: int
    curves: torch.Tensor
    floor: float

    @property
    def final(self) -> torch.Tensor:
        """[A, D, R, S]: each run's mean loss over its last 10 steps (inf if it diverged)."""
        tail = self.curves[..., -10:].double()
        return tail.mean(-1).masked_fill(tail.isnan().any(-1), math.inf)

    @property
    def mean(self) -> torch.Tensor:
        """[A, D, R]: the final loss averaged over seeds (inf if any seed diverged)."""
        return self.final.mean(dim=-1)

    @property
    def spread(self) -> torch.Tensor:
        """[A, D, R]: largest minus smallest final loss over the seeds."""
        final = self.final
        return final.amax(dim=-1) - final.amin(dim=-1)

    @property
    def diverged(self) -> torch.Tensor:
        """[A, D, R] bool: some seed's loss became NaN or infinite."""
        return torch.isinf(self.final).any(dim=-1)

    @property
    def stalled(self) -> torch.Tensor:
        """[A, D, R] bool: no seed diverged, and the mean ended within `STALL_MARGIN` of the
        unigram entropy (or above it): the model learned nothing beyond letter frequencies."""
        return ~self.diverged & (self.mean > self.floor - STALL_MARGIN)

    def index(self, arm: str, depth: int, lr: float) -> tuple[int, int, int]:
        """Where a cell sits in the [A, D, R] tensors; ValueError for a cell not in the grid."""
        for name, value, known in (
            ("arm", arm, self.arms),
            ("depth", depth, self.depths),
            ("lr", lr, self.lrs),
        ):
            if value not in known:
                raise ValueError(f"{name} {value!r} is not in the grid; it has {known}")
        return self.arms.index(arm), self.depths.index(depth), self.lrs.index(lr)

    def loss(self, arm: str, depth: int, lr: float) -> float:
        """The seed-averaged final loss of one cell."""
        return float(self.mean[self.index(arm, depth, lr)])

    def is_stalled(self, arm: str, depth: int, lr: float) -> bool:
        """Whether one cell stalled at the unigram entropy (see `stalled`)."""
        return bool(self.stalled[self.index(arm, depth, lr)])

    def table(self) -> str:
        """The grid as text: one block of rows per arm, one column per learning rate; a
        stalled cell is starred, a diverged one says so."""
        head = f"{'':18}{'blocks':>7}" + "".join(f"{lr:>z10.0e}" for lr in self.lrs)
        rows = [head]
        for a, arm in enumerate(self.arms):
            for d, depth in enumerate(self.depths):
                cells = "".join(
                    f"{_cell(m, bool(s), bool(x)):>10}"
                    for m, s, x in zip(
                        self.mean[a, d], self.stalled[a, d], self.diverged[a, d], strict=True
                    )
                )
                rows.append(f"{arm if d == 0 else '':18}{depth:>7}{cells}")
        rows.append(
            f"* stalled: ended within {STALL_MARGIN} of the unigram entropy {self.floor:z.3f}"
        )
        return "\n".join(rows)


def _cell(loss: float, stalled: bool, diverged: bool) -> str:
    if diverged:
        return "diverged"
    return f"{loss:z.2f}" + ("*" if stalled else " ")


def learning_rate_grid(
    ids: torch.Tensor,
    depths: tuple[int, ...] = (2, 4, 8),
    lrs: tuple[float, ...] = (1e-3, 3e-3, 1e-2, 3e-2),
    steps: int = 50,
    warmup_steps: int = 15,
    seeds: tuple[int, ...] = (0, 1),
    batch_size: int = 8,
    block_forward: BlockForward | None = None,
) -> LearningRateGrid:
    """Train every arm × depth × learning rate × seed on ids [N]; return the losses.

    Each run is a `build_model` GPT (Xavier init; its blocks run by `block_forward` when one is
    given) trained by `train_losses` with plain Adam at a constant learning rate, after a linear
    warmup of `warmup_steps` in the warmup arm. A seed fixes both the initial weights and the
    batches, so the three arms of a seed start from the same weights (up to the norm
    placement) and see the same data.
    """
    if not depths or not lrs or not seeds:
        raise ValueError(f"need depths, lrs and seeds, got {depths}, {lrs}, {seeds}")
    if not 0 < warmup_steps < steps:
        raise ValueError(f"need 0 < warmup_steps < steps, got {warmup_steps} and {steps}")
    runs = []
    for (norm, warm), depth, lr, seed in itertools.product(ARMS.values(), depths, lrs, seeds):
        config = plain_adam(steps, lr, warmup_steps if warm else 0, batch_size, BLOCK_SIZE, seed)
        model = build_model(norm, depth, seed, block_forward)
        runs.append(train_losses(model, ids, config))
    curves = torch.stack(runs).view(len(ARMS), len(depths), len(lrs), len(seeds), steps)
    return LearningRateGrid(
        tuple(ARMS),
        tuple(depths),
        tuple(lrs),
        tuple(seeds),
        steps,
        warmup_steps,
        curves,
        context_entropy(ids),  # the loss of a model that ignores the context
    )


@dataclass(frozen=True)
class LastBlockGradient:
    """How the gradient of the last block's Linear layers is made up (notebook 06, section 3).

    Averages over models of:
    alike: the mean cosine between the streams of two different tokens leaving the last block;
    separate: what that gradient would be if its tokens' contributions were orthogonal,
        √(Σ_t |δ_t|² |a_t|²) summed over the layers, with a_t a layer's input (and a 1 for
        its bias) and δ_t the gradient at its output;
    total: that gradient as it is, |Σ_t δ_t a_tᵀ|, summed the same way.
    """

    alike: float
    separate: float
    total: float

    @property
    def agreement(self) -> float:
        """total / separate: how much the tokens' contributions add up rather than cancel."""
        return self.total / self.separate


def last_block_gradient(
    norm: str,
    n_layers: int,
    ids: torch.Tensor,
    n_models: int = 4,
    block_forward: BlockForward | None = None,
) -> LastBlockGradient:
    """`LastBlockGradient` of the models and batch `mean_over_models` uses, for ids [N]."""
    parts = mean_over_models(_last_block_parts, norm, n_layers, ids, n_models, block_forward)
    return LastBlockGradient(*(float(part) for part in parts))


def _last_block_parts(
    model: GPT, inputs: torch.Tensor, targets: torch.Tensor
) -> tuple[torch.Tensor, ...]:
    """(alike, separate, total) of `LastBlockGradient` for one model and batch [B, T]."""
    last = model.blocks[-1]
    layers = [m for m in last.modules() if isinstance(m, nn.Linear)]
    seen: dict[nn.Module, tuple[torch.Tensor, torch.Tensor]] = {}
    handles = [
        m.register_forward_hook(lambda m, args, out: seen.__setitem__(m, (args[0], out)))
        for m in layers + [last]
    ]
    try:
        _, loss = model(inputs, targets)
    finally:
        for handle in handles:
            handle.remove()
    grads = torch.autograd.grad(loss, [seen[m][1] for m in layers])
    total = separate = torch.zeros((), dtype=torch.float64)
    for layer, delta in zip(layers, grads, strict=True):
        a = seen[layer][0].detach().double().flatten(0, -2)  # [N, d_in]
        if layer.bias is not None:
            a = torch.cat([a, torch.ones(len(a), 1, dtype=a.dtype)], dim=1)
        delta = delta.double().flatten(0, -2)  # [N, d_out]
        total = total + ((delta @ delta.T) * (a @ a.T)).sum()
        separate = separate + (delta.pow(2).sum(-1) * a.pow(2).sum(-1)).sum()
    x = seen[last][1].detach().double().flatten(0, -2)  # the stream leaving the block [N, d]
    unit = x / x.norm(dim=-1, keepdim=True)
    n = len(unit)
    alike = (unit.sum(0).pow(2).sum() - n) / (n * (n - 1))
    return alike, separate.sqrt(), total.sqrt()


# The grid's stalled Post-LN cells, trained on to tell a stall from a slow start: made by
# `scripts/nb06_runs.py` (minutes, too slow for the notebook) and stored beside this module.
LONG_RUNS = Path(__file__).with_name("long_runs.json")
LONG_CELLS = ((4, 3e-2), (8, 1e-2), (8, 3e-2))
LONG_STEPS = 400


@dataclass(frozen=True)
class LongRuns:
    """Post-LN without warmup, trained `steps` steps from the grid's settings (the grid's 50
    steps are their start). curves {(depth, lr, seed): [steps]}: every step's training loss."""

    steps: int
    curves: dict[tuple[int, float, int], torch.Tensor]

    def at(self, depth: int, lr: float, seed: int, step: int) -> float:
        """The mean training loss of the 10 steps ending at `step` (1-based) of one run."""
        key = (depth, lr, seed)
        if key not in self.curves or not 10 <= step <= self.steps:
            raise ValueError(
                f"no stored run {key} up to step {step}; stored: {sorted(self.curves)}, "
                f"steps 10 to {self.steps}"
            )
        return float(self.curves[key][step - 10 : step].double().mean())

    def to_dict(self) -> dict:
        return {
            "steps": self.steps,
            "runs": [
                {"depth": d, "lr": lr, "seed": s, "losses": [round(float(v), 5) for v in c]}
                for (d, lr, s), c in self.curves.items()
            ],
        }


def long_runs(
    ids: torch.Tensor,
    cells: tuple[tuple[int, float], ...] = LONG_CELLS,
    seeds: tuple[int, ...] = (0, 1),
    steps: int = LONG_STEPS,
    batch_size: int = 8,
) -> LongRuns:
    """Train Post-LN (no warmup, the reference block) at each (depth, lr) of `cells` for each
    seed, as `learning_rate_grid` does but for `steps` steps, on ids [N]."""
    curves = {}
    for (depth, lr), seed in itertools.product(cells, seeds):
        config = plain_adam(steps, lr, 0, batch_size, BLOCK_SIZE, seed)
        curves[depth, lr, seed] = train_losses(build_model("post", depth, seed), ids, config)
    return LongRuns(steps, curves)


def stored_long_runs() -> LongRuns:
    """The runs `scripts/nb06_runs.py` stored in `LONG_RUNS`."""
    data = json.loads(LONG_RUNS.read_text(encoding="utf-8"))
    curves = {
        (r["depth"], r["lr"], r["seed"]): torch.tensor(r["losses"], dtype=torch.float64)
        for r in data["runs"]
    }
    return LongRuns(data["steps"], curves)
