"""Tiny character models that differ only in their number of heads (notebook 04).

Width d is fixed, so every variant's attention layer holds the same 4d² + 4d parameters; what
changes is how many separate attention patterns those parameters compute.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from gptlib.data.grammar import TOY_GRAMMAR, Grammar
from gptlib.lessons.shared.experiments.toy import plain_adam, toy_text_ids, train_losses
from gptlib.model import GPT, GPTConfig


def train_head_variants(
    choices: Sequence[int] = (1, 2, 4, 8),
    d_model: int = 32,
    n_layers: int = 1,
    block_size: int = 32,
    steps: int = 200,
    lr: float = 3e-3,
    seed: int = 0,
    grammar: Grammar = TOY_GRAMMAR,
) -> dict[int, tuple[GPT, list[float]]]:
    """{n_heads: (trained model, training losses)} on the same grammar text and batches."""
    bad = [h for h in choices if h < 1 or d_model % h]
    if bad:
        raise ValueError(f"head counts {bad} do not divide d_model={d_model}")
    ids, tokenizer = toy_text_ids(300, seed, grammar)
    run = plain_adam(steps, lr, block_size=block_size, seed=seed)
    variants = {}
    for h in choices:
        config = GPTConfig(
            vocab_size=tokenizer.vocab_size,
            d_model=d_model,
            n_heads=h,
            n_layers=n_layers,
            max_len=block_size,
        )
        torch.manual_seed(seed)
        model = GPT(config)
        losses = train_losses(model, ids, run)
        variants[h] = (model.eval(), losses.tolist())
    return variants
