"""The reshape bug of notebook 04, trained: notebook 03's small model with `view(B, h, T, d_h)`
in every attention layer.

The scrambled split gives each head all the features of a block of T/h tokens instead of d_h
features of every token, so the mask, which still runs over the scrambled "positions", no
longer follows the tokens: head i's slot t holds a piece of token (i·T + t)/h. Some outputs can
therefore read the token after them, which is their own training target. Those positions learn
to copy it and the training loss falls below the entropy floor of the text, as it does without
any mask; asked to predict from a prefix alone, as in generation, the model fails.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from gptlib.attention import CausalSelfAttention
from gptlib.data.grammar import TOY_GRAMMAR, Grammar
from gptlib.lessons.experiments.mask_ablation import AblationRun, AblationSetup, train_run
from gptlib.lessons.experiments.multihead import (
    positions_reading_their_target,
    scramble_head_split,
)

# The bug model learns to copy more slowly than a model without any mask: it needs more steps
# than notebook 03's 300 before its training loss crosses the entropy floor.
BUG_SETUP = replace(AblationSetup(), steps=800)


def leaking_positions(setup: AblationSetup = BUG_SETUP, seed: int = 0) -> list[int]:
    """Positions t of a window whose output, after one attention layer with the scrambled split,
    depends on the token at t + 1 (their target); computed on a freshly built layer."""
    torch.manual_seed(seed)
    attn = scramble_head_split(CausalSelfAttention(setup.d_model, setup.n_heads))
    x = torch.randn(1, setup.block_size, setup.d_model)
    return positions_reading_their_target(attn, x)


@dataclass(frozen=True)
class ReshapeBugRun:
    """The model trained with `view(B, h, T, d_h)`, and the positions that can see their target."""

    run: AblationRun
    leaking: list[int]  # positions that see their target through one scrambled layer

    def mean_position_loss(self, leaking: bool) -> float:
        """Mean held-out loss over the leaking positions (`leaking=True`) or over the others."""
        chosen = [
            loss for t, loss in enumerate(self.run.position_loss) if (t in self.leaking) == leaking
        ]
        return sum(chosen) / len(chosen)


def run_reshape_bug(
    setup: AblationSetup = BUG_SETUP, grammar: Grammar = TOY_GRAMMAR
) -> ReshapeBugRun:
    """Train notebook 03's small model (mask on) with the scrambled split and evaluate it."""
    run = train_run(setup, True, grammar, alter=scramble_head_split)
    return ReshapeBugRun(run, leaking_positions(setup))
