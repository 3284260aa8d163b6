"""Small training runs on the toy grammar, shared by the experiments of notebooks 03–06.

The text comes from `gptlib.data.grammar` (generated, so it needs no download and its entropy
is known exactly), its ids from a `CharTokenizer`, its batches from a `BatchSampler`, and the
training from gptlib's `Trainer`, set to plain Adam at a constant learning rate (after an
optional linear warmup). `train_losses` records every step's loss and keeps going no further
than a divergence, so a run that blows up shows as NaN instead of an exception.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from gptlib.data.grammar import TOY_GRAMMAR, Grammar
from gptlib.data.tokenizer import CharTokenizer
from gptlib.train import NonFiniteLossError, TrainConfig, Trainer


def toy_text_ids(
    n_sentences: int, seed: int, grammar: Grammar = TOY_GRAMMAR
) -> tuple[torch.Tensor, CharTokenizer]:
    """`n_sentences` seeded sentences of `grammar` as ids [N], with the grammar's tokenizer."""
    tokenizer = grammar.tokenizer()
    return tokenizer.encode(grammar.text(n_sentences, seed=seed)), tokenizer


def plain_adam(
    steps: int,
    lr: float,
    warmup_steps: int = 0,
    batch_size: int = 16,
    block_size: int = 32,
    seed: int = 0,
) -> TrainConfig:
    """Adam at a constant `lr` after a linear warmup: no decay, no weight decay, no clipping."""
    return TrainConfig(
        steps=steps,
        batch_size=batch_size,
        block_size=block_size,
        lr=lr,
        min_lr=lr,
        warmup_steps=warmup_steps,
        weight_decay=0.0,
        beta2=0.999,
        grad_clip=0.0,
        eval_batches=1,
        seed=seed,
    )


def train_losses(model: nn.Module, ids: torch.Tensor, config: TrainConfig) -> torch.Tensor:
    """Train `model` in place on the token stream ids [N]; every step's loss, [config.steps].

    Steps after a loss or gradient turned NaN or infinite are not taken and read NaN.
    """
    trainer = Trainer(model, ids, ids, config)
    losses = torch.full((config.steps,), math.nan)
    for step in range(config.steps):
        try:
            losses[step] = trainer.train_step()
        except NonFiniteLossError:
            break
    return losses
