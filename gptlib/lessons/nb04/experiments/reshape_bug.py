"""The reshape bug of notebook 04, trained: notebook 03's small model with `view(B, h, T, d_h)`
in every attention layer.

The scrambled split gives each head all the features of a block of T/h tokens instead of d_h
features of every token, so the mask, which still runs over the scrambled "positions", no
longer follows the tokens: head i's slot t holds a piece of token (i·T + t)/h. Some outputs can
therefore read the token after them, which is their own training target. Through one layer
`leaking_positions` finds them with the student's measurement (`moved_by_token`, notebook 04's
exercise 4); through a model of several layers more positions reach their target, by reading a
slot that a layer below had already filled with it (`leaking_positions_in_model`). Those
positions can learn to copy, and the training loss falls below the entropy floor of the text,
as it does without any mask; asked to predict from a prefix alone, as in generation, the model
fails.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F

from gptlib.data.grammar import TOY_GRAMMAR, Grammar
from gptlib.lessons.nb04.experiments.multihead import scramble_head_split
from gptlib.lessons.shared.experiments.mask_ablation import (
    AblationRun,
    AblationSetup,
    held_out_windows,
    train_run,
)
from gptlib.lessons.shared.experiments.variants import Variant, build_gpt
from gptlib.model import GPT, CausalSelfAttention, GPTConfig

# The bug model learns to copy more slowly than a model without any mask: it needs more steps
# than notebook 03's 300 before its training loss crosses the entropy floor.
BUG_SETUP = replace(AblationSetup(), steps=800)

# The student's measurement: moved_by_token(fn, x) → bool [T, ...], entry [s, ...] True when
# changing token s of x [B, T, d] moves that output of fn.
MovedByToken = Callable[[Callable[[torch.Tensor], torch.Tensor], torch.Tensor], torch.Tensor]


def leaking_positions(
    moved_by_token: MovedByToken, setup: AblationSetup = BUG_SETUP, seed: int = 0
) -> list[int]:
    """Positions t of a window whose output, after one attention layer with the scrambled split,
    moves with the token at t + 1 (their target), measured by `moved_by_token` on a freshly
    built layer."""
    torch.manual_seed(seed)
    attn = scramble_head_split(CausalSelfAttention(setup.d_model, setup.n_heads))
    moved = moved_by_token(attn, torch.randn(1, setup.block_size, setup.d_model))  # [T, T]
    return [t for t in range(setup.block_size - 1) if moved[t + 1, t]]


def leaking_positions_in_model(
    setup: AblationSetup = BUG_SETUP, grammar: Grammar = TOY_GRAMMAR, seed: int = 0
) -> list[int]:
    """Positions t whose logits, in a freshly built GPT of `setup` with the scrambled split in
    every layer, move when the token at t + 1 (their target) changes."""
    config = GPTConfig(
        vocab_size=grammar.tokenizer().vocab_size,
        d_model=setup.d_model,
        n_heads=setup.n_heads,
        n_layers=setup.n_layers,
        max_len=setup.block_size,
    )
    torch.manual_seed(seed)
    model = scramble_head_split(build_gpt(config, Variant())).eval()
    ids = torch.randint(config.vocab_size, (1, setup.block_size))
    with torch.no_grad():
        base = model(ids)[0]
        leaking = []
        for t in range(setup.block_size - 1):
            changed = ids.clone()
            changed[0, t + 1] = (changed[0, t + 1] + 1) % config.vocab_size
            if not torch.allclose(model(changed)[0][0, t], base[0, t], rtol=0, atol=1e-6):
                leaking.append(t)
    return leaking


@torch.no_grad()
def held_out_position_loss(
    model: GPT, setup: AblationSetup, grammar: Grammar = TOY_GRAMMAR, windows: int = 1024
) -> list[float]:
    """The mean held-out loss at each window position, [T], over `windows` windows of fresh
    text (the training run's 32 windows leave each position's mean too noisy to compare)."""
    x, y = held_out_windows(replace(setup, val_sentences=400, val_windows=windows), grammar)
    logits, _ = model.eval()(x)
    return F.cross_entropy(logits.transpose(1, 2), y, reduction="none").mean(dim=0).tolist()


@torch.no_grad()
def future_replaced_loss(model: GPT, x: torch.Tensor, y: torch.Tensor) -> list[float]:
    """The mean loss at each position t, [T], when every token after t is replaced by the
    token at the same place in another window (x rolled by one along the batch), x and y [B, T].

    The window keeps its length T, so every token sits in the slots it had in training; only
    the future is no longer the one that follows. A prefix-only pass changes both at once for
    the scrambled split, whose slots depend on the input's length."""
    if x.dim() != 2 or x.shape != y.shape or x.shape[0] < 2:
        raise ValueError(
            f"x and y must both be [B, T] with B >= 2, got {list(x.shape)}, {list(y.shape)}"
        )
    donor = x.roll(1, dims=0)  # [B, T]: each window's future taken from its neighbour
    model.eval()
    losses = []
    for t in range(x.shape[1]):
        mixed = torch.cat([x[:, : t + 1], donor[:, t + 1 :]], dim=1)  # [B, T]
        losses.append(F.cross_entropy(model(mixed)[0][:, t], y[:, t]).item())
    return losses


@dataclass(frozen=True)
class ReshapeBugRun:
    """The model trained with `view(B, h, T, d_h)`, the positions that can see their target
    (through one scrambled layer, `leaking`, and through the whole model, `leaking_in_model`),
    its held-out loss at each position and the floor there: the lowest expected loss of a model
    that reads only the characters up to that position (`Grammar.context_entropies`), [T]."""

    run: AblationRun
    leaking: list[int]
    leaking_in_model: list[int]
    position_loss: list[float]
    floors: list[float]
    replaced_loss: float  # held-out loss with each position's future replaced, length kept at T

    def groups(self) -> dict[str, list[int]]:
        """The window's positions by how they can reach their target: through one layer, only
        through the model's stack of layers, or not at all."""
        T = len(self.position_loss)
        return {
            "one layer": list(self.leaking),
            "only through the stack": [t for t in self.leaking_in_model if t not in self.leaking],
            "not at all": [t for t in range(T) if t not in self.leaking_in_model],
        }

    def below_floor(self, positions: list[int], margin: float = 0.0) -> list[int]:
        """Those of `positions` whose held-out loss is more than `margin` below their floor:
        no model that reads only the past gets there, so these read their target."""
        return [t for t in positions if self.position_loss[t] < self.floors[t] - margin]


def run_reshape_bug(
    moved_by_token: MovedByToken,
    setup: AblationSetup = BUG_SETUP,
    grammar: Grammar = TOY_GRAMMAR,
    windows: int = 1024,
) -> ReshapeBugRun:
    """Train notebook 03's small model (mask on) with the scrambled split and evaluate it, on
    `windows` held-out windows at each position."""
    return ReshapeBugRun(
        leaking=leaking_positions(moved_by_token, setup),
        leaking_in_model=leaking_positions_in_model(setup, grammar),
        **train_reshape_bug(setup, grammar, windows),
    )


def train_reshape_bug(
    setup: AblationSetup = BUG_SETUP, grammar: Grammar = TOY_GRAMMAR, windows: int = 1024
) -> dict[str, object]:
    """The trained part of `ReshapeBugRun`: the run, its held-out loss at each position on
    `windows` windows, each position's floor and the loss with the future replaced."""
    run = train_run(setup, True, grammar, alter=scramble_head_split)
    x, y = held_out_windows(setup, grammar)
    return {
        "run": run,
        "position_loss": held_out_position_loss(run.model, setup, grammar, windows),
        "floors": grammar.context_entropies(setup.block_size),
        "replaced_loss": sum(future_replaced_loss(run.model, x, y)) / setup.block_size,
    }
