"""The same tiny character model trained with and without the causal mask (notebook 03).

Both runs start from the same weights and see the same batches of `TOY_GRAMMAR` text; the only
difference is the mask (the unmasked run is the lesson variant `Variant(attention="unmasked")`).
Without the mask, position t can read token t+1, which is its own target: the loss falls below
the text's entropy (impossible for an honest predictor) while the model, asked to predict from a
prefix as in generation, fails. Each trained model is measured on held-out windows by a function
given as `measure` (notebook 03 passes the student's; the exercise's reference
`gptlib.lessons.shared.references.held_out_losses` is the default).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from gptlib.data.batches import BatchSampler
from gptlib.data.grammar import TOY_GRAMMAR, Grammar, word_hit_rate
from gptlib.lessons.shared.experiments.toy import plain_adam, toy_text_ids, train_losses
from gptlib.lessons.shared.experiments.variants import Variant, build_gpt
from gptlib.lessons.shared.references import held_out_losses
from gptlib.model import GPT, GPTConfig

# model, held-out windows x [B, T], targets y [B, T] → per-position losses (visible, alone), [T]
Measure = Callable[[GPT, torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


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


def held_out_windows(
    setup: AblationSetup, grammar: Grammar = TOY_GRAMMAR
) -> tuple[torch.Tensor, torch.Tensor]:
    """The held-out windows x [val_windows, T] and their targets y (x shifted by one), drawn
    from sentences the training text does not hold."""
    val_ids, _ = toy_text_ids(setup.val_sentences, setup.seed + 1, grammar)
    return BatchSampler(val_ids, setup.val_windows, setup.block_size, seed=1).sample()


def train_run(
    setup: AblationSetup,
    causal: bool,
    grammar: Grammar = TOY_GRAMMAR,
    alter: Callable[[GPT], object] | None = None,
    measure: Measure = held_out_losses,
) -> AblationRun:
    """Train one model with (`causal=True`) or without the mask and evaluate it with `measure`.

    `alter` changes the freshly built model in place before training (notebook 04 plants the
    reshape bug with it). The sample is generated without the KV cache, recomputing the window
    at every step, so every model generates through the very forward pass it was trained with.
    """
    train_ids, tokenizer = toy_text_ids(setup.train_sentences, setup.seed, grammar)
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
    visible, alone = measure(model, *held_out_windows(setup, grammar))
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
        val_loss=float(visible.mean()),
        prefix_loss=float(alone.mean()),
        position_loss=visible.tolist(),
        sample=sample,
        word_hit_rate=word_hit_rate(sample, grammar.words()),
    )


def run_mask_ablation(
    setup: AblationSetup = AblationSetup(),
    grammar: Grammar = TOY_GRAMMAR,
    measure: Measure = held_out_losses,
) -> tuple[AblationRun, AblationRun]:
    """(with mask, without mask): the same model, data and seed, differing only in the mask."""
    return (
        train_run(setup, True, grammar, measure=measure),
        train_run(setup, False, grammar, measure=measure),
    )
