"""The training loop: AdamW, warmup + cosine decay, clipping, held-out loss, time budget.

Introduced in notebook 08 (notebook 07 writes the chapter's bare loop). One step: a batch
x, y [B, T] → loss → gradients → clip → AdamW.
The `Trainer` keeps everything a checkpoint needs to resume bit-identically (model, optimizer,
step, the batch generator and torch's global generator, the history).
"""

from __future__ import annotations

import contextlib
import math
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import torch
from torch import nn

from gptlib.data.batches import BatchSampler
from gptlib.distributed import World
from gptlib.hooks import evaluating
from gptlib.model import CausalSelfAttention
from gptlib.validation import check_positive_int

PRECISIONS = ("float32", "bfloat16")


@dataclass(frozen=True)
class TrainConfig:
    """How to train. The defaults suit the chapter's GPT on Tiny Shakespeare on a laptop CPU."""

    steps: int = 2000
    batch_size: int = 12
    block_size: int = 64
    lr: float = 3e-3  # peak learning rate, reached after warmup
    min_lr: float = 3e-4  # where the cosine decay ends
    warmup_steps: int = 50
    weight_decay: float = 0.1  # on matrices and embeddings only, not on biases or norms
    beta1: float = 0.9
    beta2: float = 0.99
    grad_clip: float = 1.0  # max global gradient norm; 0 turns clipping off
    eval_interval: int = 100  # steps between held-out estimates; 0: only at the start and end
    eval_batches: int = 20  # batches averaged per estimate
    time_budget_s: float | None = None  # stop after this many seconds of training steps
    seed: int = 0  # drives batch sampling
    precision: str = "float32"  # of the training step's matrix products: "float32" or "bfloat16"
    compile: bool = False  # torch.compile forward and backward (its fused kernels round otherwise)

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "block_size", "eval_batches"):
            check_positive_int(name, getattr(self, name))
        for name in ("warmup_steps", "eval_interval"):
            check_positive_int(name, getattr(self, name), minimum=0)
        if not 0 < self.lr < 1 or not 0 <= self.min_lr <= self.lr:
            raise ValueError(
                f"need 0 < lr < 1 and 0 <= min_lr <= lr, got lr={self.lr}, min_lr={self.min_lr}"
            )
        if self.weight_decay < 0 or self.grad_clip < 0:
            raise ValueError(
                f"weight_decay and grad_clip must be >= 0, got {self.weight_decay}, "
                f"{self.grad_clip}"
            )
        if not (0 <= self.beta1 < 1 and 0 <= self.beta2 < 1):
            raise ValueError(f"betas must be in [0, 1), got {self.beta1}, {self.beta2}")
        if self.time_budget_s is not None and not self.time_budget_s > 0:
            raise ValueError(f"time_budget_s must be > 0 or None, got {self.time_budget_s}")
        if self.precision not in PRECISIONS:
            raise ValueError(
                f"precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}"
            )

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> TrainConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown TrainConfig fields {unknown}; known: {sorted(known)}")
        return cls(**data)


def learning_rate(step: int, progress: float, config: TrainConfig) -> float:
    """Linear warmup over `warmup_steps`, times a cosine from lr down to min_lr.

    `progress` in [0, 1] is the fraction of the run done (steps, or seconds with a time budget),
    so the decay ends where the run ends whichever budget runs out first.
    """
    progress = min(max(progress, 0.0), 1.0)
    cosine = config.min_lr + 0.5 * (config.lr - config.min_lr) * (1 + math.cos(math.pi * progress))
    warmup = min(1.0, (step + 1) / config.warmup_steps) if config.warmup_steps else 1.0
    return cosine * warmup


def make_optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.AdamW:
    """AdamW with weight decay on matrices and embeddings (dim >= 2), none on biases and norms.

    Uses the fused kernel (one pass over all parameters) where this torch has one for the
    parameters' device, else the multi-tensor `foreach` path. The two round differently in the
    last bits, so training numbers differ slightly.
    """
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]

    def adamw(**kernel: bool) -> torch.optim.AdamW:
        # New group dicts for each try: the optimizer writes its settings into them.
        groups = [
            {"params": decay, "weight_decay": config.weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ]
        return torch.optim.AdamW(groups, lr=config.lr, betas=(config.beta1, config.beta2), **kernel)

    try:
        return adamw(fused=True)
    except RuntimeError:  # "`fused=True` requires ... Tensors of supported devices: [...]"
        return adamw(foreach=True)


class NonFiniteLossError(RuntimeError):
    """Training produced a NaN or infinite loss or gradient; the message says what to try."""


@dataclass
class History:
    """What happened during training, for plots: per-step losses and periodic estimates."""

    step: list[int] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)  # of each step's batch
    lr: list[float] = field(default_factory=list)
    eval_step: list[int] = field(default_factory=list)
    eval_train_loss: list[float] = field(default_factory=list)  # averaged over fixed batches
    eval_val_loss: list[float] = field(default_factory=list)
    eval_seconds: list[float] = field(default_factory=list)  # training seconds so far

    def to_dict(self) -> dict[str, list]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> History:
        return cls(**{f.name: list(data[f.name]) for f in fields(cls)})


class Trainer:
    """Trains a GPT on token streams (notebook 08): `run()`, `evaluate()`, `state_dict()`.

    train_ids, val_ids: [N] token ids. Batches are drawn by a generator seeded with
    `config.seed`; held-out estimates average the loss over `eval_batches` fixed batches of each
    split, the same batches every time. With a `world` of several ranks (`gptlib.distributed`)
    each rank computes its share of every batch and the gradients are averaged; `batch_size`
    stays the global batch, so the run is the single-process run spread over processes.
    """

    def __init__(
        self,
        model: nn.Module,
        train_ids: torch.Tensor,
        val_ids: torch.Tensor,
        config: TrainConfig | None = None,
        world: World | None = None,
    ) -> None:
        self.model = model
        self.config = c = config or TrainConfig()
        max_len = getattr(getattr(model, "config", None), "max_len", c.block_size)
        if c.block_size > max_len:
            raise ValueError(
                f"block_size={c.block_size} exceeds the model's max_len={max_len}; use "
                f"block_size <= {max_len} or build the model with max_len >= {c.block_size}"
            )
        self.world = world or World()
        self.rows = self.world.share(c.batch_size)
        if c.eval_batches < self.world.size:
            raise ValueError(
                f"eval_batches={c.eval_batches} leaves some of the {self.world.size} processes "
                f"without a held-out batch; use eval_batches >= {self.world.size}"
            )
        self.device = next(model.parameters()).device
        self.forward = model
        if self.world.size > 1:
            self.forward = torch.nn.parallel.DistributedDataParallel(model)
        if c.compile:
            self.forward = _Compiled(self.forward)
        self.optimizer = make_optimizer(model, c)
        self.sampler = BatchSampler(train_ids, c.batch_size, c.block_size, seed=c.seed)
        self.eval_sets = {
            split: _fixed_batches(ids, c, seed=c.seed + 1 + i)
            for i, (split, ids) in enumerate((("train", train_ids), ("val", val_ids)))
        }
        self.step = 0
        self.train_seconds = 0.0
        self.history = History()

    @property
    def tokens_per_step(self) -> int:
        return self.config.batch_size * self.config.block_size

    def progress(self) -> float:
        """Fraction of the run done: by steps, or by seconds when that budget is closer."""
        c = self.config
        done = self.step / c.steps
        if c.time_budget_s is not None:
            done = max(done, self.train_seconds / c.time_budget_s)
        return done

    def finished(self) -> bool:
        return self.progress() >= 1.0

    def train_step(self) -> float:
        """One optimisation step on a fresh batch; returns its loss."""
        c = self.config
        lr = learning_rate(self.step, self.progress(), c)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        x, y = (t[self.rows].to(self.device) for t in self.sampler.sample())
        self.model.train()
        with self.mixed_precision():
            _, loss = self.forward(x, y)
        (value,) = self.world.mean([loss.item()])
        if not math.isfinite(value):
            self._diverged(f"the loss became {value}", lr)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if c.grad_clip > 0:
            norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), c.grad_clip)
            if not math.isfinite(norm.item()):
                self._diverged(f"the gradient norm became {norm.item()}", lr)
        self.optimizer.step()
        self.history.step.append(self.step)
        self.history.train_loss.append(value)
        self.history.lr.append(lr)
        self.step += 1
        return value

    @contextlib.contextmanager
    def mixed_precision(self) -> Iterator[None]:
        """With precision "bfloat16": the step's matrix products in bfloat16 (weights, gradients,
        optimiser state and the loss stay float32); held-out estimates always run in float32.
        On the CPU the attention kernel stays in float32 (`_float32_attention`)."""
        if self.config.precision == "float32":
            yield
            return
        with (
            torch.autocast(self.device.type, dtype=torch.bfloat16),
            _float32_attention(self.model)
            if self.device.type == "cpu"
            else contextlib.nullcontext(),
        ):
            yield

    def _diverged(self, what: str, lr: float) -> None:
        raise NonFiniteLossError(
            f"{what} at step {self.step} (learning rate {lr:z.2e}); training stopped before the "
            f"weights were changed. Try a lower learning rate (e.g. lr={self.config.lr / 3:z.1e}), "
            "a longer warmup, or gradient clipping (grad_clip=1.0); resume from the last "
            "checkpoint if you saved one"
        )

    @torch.no_grad()
    def evaluate(self) -> dict[str, float]:
        """Mean loss over the fixed batches of each split: {"train": ..., "val": ...}."""
        means = {}
        with evaluating(self.model):
            for split, batches in self.eval_sets.items():
                mine = batches[self.world.rank :: self.world.size]  # each rank its own batches
                losses = [self.model(x.to(self.device), y.to(self.device))[1] for x, y in mine]
                means[split] = torch.stack(losses).mean().item()
        if self.world.size == 1:
            return means
        # Ranks hold different numbers of batches when size does not divide eval_batches.
        shares = [len(self.eval_sets[s][self.world.rank :: self.world.size]) for s in means]
        totals = self.world.mean([means[s] * n for s, n in zip(means, shares, strict=True)])
        return {
            s: total * self.world.size / len(self.eval_sets[s])
            for s, total in zip(means, totals, strict=True)
        }

    def _record_evaluation(self) -> dict[str, float]:
        losses = self.evaluate()
        h = self.history
        h.eval_step.append(self.step)
        h.eval_train_loss.append(losses["train"])
        h.eval_val_loss.append(losses["val"])
        h.eval_seconds.append(self.train_seconds)
        return losses

    def run(
        self,
        max_steps: int | None = None,
        progress: bool = True,
        on_evaluate: Callable[[Trainer], None] | None = None,
    ) -> History:
        """Train until the step or time budget is spent (or `max_steps` more steps are done).

        Evaluates at the start, every `eval_interval` steps and at the end, calling
        `on_evaluate(trainer)` after each (e.g. to save a checkpoint); shows a tqdm progress bar
        unless `progress=False` (or the environment sets TQDM_DISABLE=1), where tqdm is
        installed (the `lessons` extra has it; gptlib itself needs torch alone).
        """
        c = self.config
        stop_at = c.steps if max_steps is None else min(c.steps, self.step + max_steps)
        if not self.history.eval_step:
            self._record_evaluation()
            if on_evaluate is not None:
                on_evaluate(self)
        bar = _progress_bar(
            total=c.steps,
            initial=self.step,
            unit="step",
            desc="training",
            disable=not (progress and self.world.is_main),
        )
        try:
            while self.step < stop_at and not self.finished():
                start = time.perf_counter()
                loss = self.train_step()
                # Every rank must stop at the same step: the ranks agree on the time spent.
                (self.train_seconds,) = self.world.mean(
                    [self.train_seconds + time.perf_counter() - start]
                )
                bar.update(1)
                if c.eval_interval and self.step % c.eval_interval == 0:
                    val = self._record_evaluation()["val"]
                    bar.set_postfix(loss=f"{loss:z.3f}", val=f"{val:z.3f}", refresh=False)
                    if on_evaluate is not None:
                        on_evaluate(self)
                elif self.step % 10 == 0:
                    bar.set_postfix(loss=f"{loss:z.3f}", refresh=False)
        finally:
            bar.close()
        if self.history.eval_step[-1] != self.step:
            self._record_evaluation()
            if on_evaluate is not None:
                on_evaluate(self)
        return self.history

    def summary(self) -> dict[str, float | int]:
        """The run in numbers: steps, tokens, seconds, last estimates, tokens per second."""
        h = self.history
        tokens = self.step * self.tokens_per_step
        return {
            "steps": self.step,
            "tokens": tokens,
            "seconds": round(self.train_seconds, 3),
            "train_loss": round(h.eval_train_loss[-1], 4) if h.eval_train_loss else None,
            "val_loss": round(h.eval_val_loss[-1], 4) if h.eval_val_loss else None,
            "tokens_per_s": round(tokens / self.train_seconds, 1) if self.train_seconds else 0.0,
        }

    def state_dict(self) -> dict:
        """Everything besides the model needed to continue exactly where this run stopped."""
        return {
            "config": self.config.to_dict(),
            "step": self.step,
            "train_seconds": self.train_seconds,
            "optimizer": self.optimizer.state_dict(),
            "sampler_rng": self.sampler.generator.get_state(),
            "torch_rng": torch.get_rng_state(),
            "history": self.history.to_dict(),
        }

    def load_state_dict(self, state: dict) -> None:
        """Continue a run saved by `state_dict` (the model's weights are loaded separately)."""
        self.optimizer.load_state_dict(state["optimizer"])
        self.step = int(state["step"])
        self.train_seconds = float(state["train_seconds"])
        self.sampler.generator.set_state(state["sampler_rng"])
        torch.set_rng_state(state["torch_rng"])
        self.history = History.from_dict(state["history"])


def _fixed_batches(
    ids: torch.Tensor, config: TrainConfig, seed: int
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    sampler = BatchSampler(ids, config.batch_size, config.block_size, seed=seed)
    return [sampler.sample() for _ in range(config.eval_batches)]


class _NoBar:
    """What `run` calls on a progress bar, doing nothing (tqdm is not installed)."""

    def update(self, n: int) -> None:
        pass

    def set_postfix(self, **values: object) -> None:
        pass

    def close(self) -> None:
        pass


def _progress_bar(**settings: object) -> Any:
    """tqdm's progress bar where tqdm is installed, else one that shows nothing."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(**settings)


@contextlib.contextmanager
def _float32_attention(model: nn.Module) -> Iterator[None]:
    """Run each attention layer's kernel in float32 inside a bfloat16 step: on the CPU, torch's
    fused attention differentiates about 5x slower in bfloat16 than in float32 (torch 2.13),
    more than mixed precision saves in the matrix products around it. Speed only: the layer's
    own `attend` is put back afterwards."""
    layers = [m for m in model.modules() if isinstance(m, CausalSelfAttention)]
    for layer in layers:

        def attend(q, k, v, original=layer.attend):
            with torch.autocast("cpu", enabled=False):
                return original(q.float(), k.float(), v.float()).to(q.dtype)

        layer.attend = attend  # an instance attribute, in front of the class's method
    try:
        yield
    finally:
        for layer in layers:
            del layer.attend


class _Compiled:
    """`torch.compile(module)`, compiled at the first call; where that fails (no C++ compiler,
    an unsupported platform) it warns and runs the module as it is from then on."""

    def __init__(self, module: nn.Module) -> None:
        self.eager = module
        self.compiled = torch.compile(module, dynamic=False)
        self.works: bool | None = None  # unknown until the first call

    def __call__(self, *args: torch.Tensor) -> Any:
        if self.works is not None:
            return (self.compiled if self.works else self.eager)(*args)
        try:
            out = self.compiled(*args)
        except Exception as exc:  # errors of the model itself come again from the eager call
            self.works = False
            warnings.warn(
                f"torch.compile failed ({type(exc).__name__}: {str(exc)[:300]}); training goes "
                "on without it",
                RuntimeWarning,
                stacklevel=2,
            )
            return self.eager(*args)
        self.works = True
        return out
