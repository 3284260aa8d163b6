"""The same tiny character model trained with and without the causal mask (notebook 03).

Both runs start from the same weights and see the same batches of `TOY_GRAMMAR` text; the only
difference is the mask (the unmasked run is the lesson variant `Variant(attention="unmasked")`).
Without the mask, position t can read token t+1, which is its own target: the training loss
falls below the text's entropy (impossible for an honest predictor) while the model, asked to
predict from a prefix as in generation, fails.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from gptlib.data.batches import BatchSampler
from gptlib.data.grammar import TOY_GRAMMAR, Grammar, word_hit_rate
from gptlib.lessons.experiments.attention_maps import attention_maps
from gptlib.lessons.experiments.causality import prefix_logits
from gptlib.lessons.experiments.toy import plain_adam, toy_text_ids, train_losses
from gptlib.lessons.experiments.variants import Variant, build_gpt
from gptlib.model import GPT, GPTConfig


@dataclass(frozen=True)
class AblationSetup:
    """Sizes of the experiment: a small GPT, short windows, a few hundred steps."""

    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    block_size: int = 32  # window length T
    batch: int = 16
    steps: int = 300
    lr: float = 3e-3
    train_sentences: int = 300
    val_sentences: int = 60
    val_windows: int = 32
    sample_chars: int = 120
    prompt: str = "the "
    seed: int = 0


@dataclass
class AblationRun:
    """What one run (with or without the mask) produced."""

    causal: bool
    model: GPT
    losses: list[float] = field(repr=False)  # training loss at every step
    val_loss: float  # held-out loss, whole window visible (what training reports)
    prefix_loss: float  # held-out loss when each prediction sees only its prefix (generation)
    position_loss: list[float] = field(repr=False)  # held-out loss at each window position [T]
    sample: str  # text generated from `prompt`
    word_hit_rate: float  # fraction of generated words that exist in the grammar
    next_token_attention: float  # largest mean weight any head puts on key t+1 from query t


def next_token_attention(model: GPT, idx: torch.Tensor) -> float:
    """Largest mean attention weight, over layers and heads, from query t to key t+1.

    idx [B, T]. A causal model scores exactly 0 (that key is masked); a model that learned to
    copy its target from the next position scores close to 1.
    """
    maps = attention_maps(model, idx)  # [L, B, h, T, T]
    ahead = maps.diagonal(offset=1, dim1=-2, dim2=-1)  # [L, B, h, T-1]: weight on key t+1
    return float(ahead.mean(dim=(1, 3)).max())


def train_run(
    setup: AblationSetup,
    causal: bool,
    grammar: Grammar = TOY_GRAMMAR,
    alter: Callable[[GPT], object] | None = None,
) -> AblationRun:
    """Train one model with (`causal=True`) or without the mask and evaluate it.

    `alter` changes the freshly built model in place before training (notebook 04 plants the
    reshape bug with it). The sample is generated without the KV cache, recomputing the window
    at every step, so every model generates through the very forward pass it was trained with.
    """
    train_ids, tokenizer = toy_text_ids(setup.train_sentences, setup.seed, grammar)
    val_ids, _ = toy_text_ids(setup.val_sentences, setup.seed + 1, grammar)
    config = GPTConfig(
        vocab_size=tokenizer.vocab_size,
        d_model=setup.d_model,
        n_heads=setup.n_heads,
        n_layers=setup.n_layers,
        max_len=setup.block_size,
    )
    torch.manual_seed(setup.seed)  # the same initial weights for both runs: the mask has none
    model = build_gpt(config, Variant(attention="fused" if causal else "unmasked"))
    if alter is not None:
        alter(model)
    run = plain_adam(
        setup.steps, setup.lr, batch_size=setup.batch, block_size=setup.block_size, seed=setup.seed
    )  # the same batches for both runs, too
    losses = train_losses(model, train_ids, run)
    model.eval()
    x, y = BatchSampler(val_ids, setup.val_windows, setup.block_size, seed=1).sample()
    with torch.no_grad():
        logits, loss = model(x, y)
        per_token = F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="none")
        prefix = prefix_logits(model, x)
        prefix_loss = F.cross_entropy(prefix.flatten(0, 1), y.flatten()).item()
        generated = model.generate(
            tokenizer.encode(setup.prompt)[None],
            setup.sample_chars,
            generator=torch.Generator().manual_seed(setup.seed),
            use_cache=False,
        )
    sample = tokenizer.decode(generated[0])
    return AblationRun(
        causal=causal,
        model=model,
        losses=losses.tolist(),
        val_loss=loss.item(),
        prefix_loss=prefix_loss,
        position_loss=per_token.view(y.shape).mean(dim=0).tolist(),
        sample=sample,
        word_hit_rate=word_hit_rate(sample, grammar.words()),
        next_token_attention=next_token_attention(model, x),
    )


def run_mask_ablation(
    setup: AblationSetup = AblationSetup(), grammar: Grammar = TOY_GRAMMAR
) -> tuple[AblationRun, AblationRun]:
    """(with mask, without mask): the same model, data and seed, differing only in the mask."""
    return train_run(setup, True, grammar), train_run(setup, False, grammar)
