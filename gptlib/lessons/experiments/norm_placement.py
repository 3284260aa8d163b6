"""Experiments of notebook 06: Pre-LN vs Post-LN, at initialisation and in training.

Models are gptlib GPTs initialised like the original Transformer (Xavier-uniform matrices,
unit-variance embeddings), the setting Xiong et al. (2020) analyse, and trained on the
toy grammar (`gptlib.data.grammar`). Shapes: B batch, T positions, L blocks.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from gptlib.blocks import LayerNorm
from gptlib.data.batches import BatchSampler
from gptlib.data.grammar import TOY_GRAMMAR
from gptlib.hooks import capture_inputs, capture_outputs
from gptlib.lessons.experiments.gradient_norms import loss_gradient_norms
from gptlib.lessons.experiments.toy import plain_adam, toy_text_ids, train_losses
from gptlib.model import GPT, GPTConfig

# One small model for every experiment of notebook 06; depth is the knob that matters.
D_MODEL, N_HEADS, BLOCK_SIZE, BATCH_SIZE = 32, 4, 32, 16
TOY_SENTENCES = 2000
VOCAB_SIZE = TOY_GRAMMAR.tokenizer().vocab_size


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
        elif isinstance(module, LayerNorm):
            nn.init.ones_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
    return model


def toy_data() -> torch.Tensor:
    """The toy-grammar text every experiment of notebook 06 uses, as ids [N]."""
    return toy_text_ids(TOY_SENTENCES, seed=0)[0]


def build_model(norm: str, n_layers: int, seed: int = 0) -> GPT:
    """A GPT with `norm` placement ("pre" or "post") and the original Transformer's init."""
    torch.manual_seed(seed)
    config = GPTConfig(
        vocab_size=VOCAB_SIZE,
        d_model=D_MODEL,
        n_heads=N_HEADS,
        n_layers=n_layers,
        max_len=BLOCK_SIZE,
        norm=norm,
    )
    return transformer_init_(GPT(config))


def init_gradient_profile(
    norm: str, n_layers: int, ids: torch.Tensor, n_models: int = 3, n_batches: int = 2
) -> torch.Tensor:
    """Per-block gradient norms at initialisation, [L], averaged over models and batches.

    Models use seeds 0..n_models-1; each sees the same `n_batches` batches of ids [N].
    Averaging estimates the expected gradient, as Xiong et al. do, rather than one draw.
    """
    if n_models < 1 or n_batches < 1:
        raise ValueError(f"need n_models, n_batches >= 1, got {n_models}, {n_batches}")
    total = torch.zeros(n_layers, dtype=torch.float64)
    for seed in range(n_models):
        model = build_model(norm, n_layers, seed=seed)
        batches = BatchSampler(ids, BATCH_SIZE, BLOCK_SIZE, seed=1000)
        for _ in range(n_batches):
            total += loss_gradient_norms(model, *batches.sample())
    return total / (n_models * n_batches)


def unigram_entropy(ids: torch.Tensor) -> float:
    """Entropy of the frequencies of ids [N], in nats: the loss of a model that ignores context."""
    p = torch.bincount(ids).double() / len(ids)
    p = p[p > 0]
    return float(-(p * p.log()).sum())


def training_comparison(
    ids: torch.Tensor,
    n_layers: int = 8,
    steps: int = 120,
    lr: float = 6e-3,
    warmup_steps: int = 40,
    seed: int = 0,
) -> dict[str, torch.Tensor]:
    """Train three identical-but-for-norm models; return each one's losses [steps].

    Keys: "Pre-LN, no warmup", "Post-LN, no warmup", "Post-LN, warmup N" (N = warmup_steps).
    Same seed, data order and learning rate for all three.
    """
    runs = {
        "Pre-LN, no warmup": ("pre", 0),
        "Post-LN, no warmup": ("post", 0),
        f"Post-LN, warmup {warmup_steps}": ("post", warmup_steps),
    }
    return {
        name: train_losses(
            build_model(norm, n_layers, seed=seed),
            ids,
            plain_adam(steps, lr, warmup, BATCH_SIZE, BLOCK_SIZE, seed),
        )
        for name, (norm, warmup) in runs.items()
    }


def final_loss(losses: torch.Tensor, last: int = 10) -> float:
    """Mean of the last `last` losses (NaN counts as infinitely bad: a diverged run)."""
    tail = losses[-last:]
    return math.inf if torch.isnan(tail).any() else float(tail.mean())


@torch.no_grad()
def stream_sizes(model: GPT, idx: torch.Tensor) -> torch.Tensor:
    """Mean per-token norm |x| of the stream entering each block and leaving the last, [L + 1].

    idx: token ids [B, T]. For Post-LN every block ends in a LayerNorm, so from block 2 on
    the stream enters at the size LayerNorm gives it (√d when γ = 1); for Pre-LN it is a raw
    sum that grows with every write.
    """
    with capture_inputs(model.blocks) as entering, capture_outputs(model.blocks[-1:]) as leaving:
        model(idx)
    return torch.stack([x.norm(dim=-1).mean() for x in entering + leaving])
