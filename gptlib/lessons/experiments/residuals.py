"""Experiments of notebook 05: where a block's parameters live, the MLP's nonlinearity, and
what the residual connection does for gradients and for the token vectors.

Shapes: B batch, T positions, d model width, L blocks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from gptlib.blocks import Block
from gptlib.hooks import capture_inputs, capture_outputs, evaluating
from gptlib.lessons.experiments.gradient_norms import loss_gradient_norms
from gptlib.model import GPT, GPTConfig

ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "ReLU": F.relu,  # the original Transformer
    "GELU": F.gelu,  # GPT-2 (exact erf form)
    "SiLU": F.silu,  # the gate inside SwiGLU (modern LLMs)
}


def _count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def block_parameter_counts(d_model: int, n_heads: int = 4, bias: bool = True) -> dict[str, int]:
    """Parameters of one gptlib `Block`, counted from its real modules: attention, MLP, norms.

    The block is built on the meta device (shapes only, no memory), so any width is cheap.
    """
    if d_model < 1 or n_heads < 1 or d_model % n_heads:
        raise ValueError(
            f"need positive d_model divisible by n_heads, got d_model={d_model}, n_heads={n_heads}"
        )
    with torch.device("meta"):
        block = Block(d_model, n_heads, bias=bias)
    return {
        "attention": _count(block.attn),
        "mlp": _count(block.mlp),
        "layer norms": _count(block.ln1) + _count(block.ln2),
    }


def activation_values_and_slopes(
    x: torch.Tensor,
) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """For each activation in `ACTIVATIONS`: (φ(x), φ'(x)), both shaped like x [N].

    The slopes come from autograd, so they are the derivatives backpropagation really uses.
    """
    result = {}
    for name, phi in ACTIVATIONS.items():
        xs = x.detach().clone().requires_grad_(True)
        y = phi(xs)
        (slope,) = torch.autograd.grad(y.sum(), xs)
        result[name] = (y.detach(), slope)
    return result


@dataclass(frozen=True)
class GradientFlow:
    """What one backward pass through a deep stack shows (notebook 05).

    grad_norms [L]: gradient norm of each block's parameters, block 1 first.
    token_similarity [L]: mean cosine similarity between the vectors of different positions
    after each block (each vector centred over its d features, as LayerNorm would see it).
    """

    grad_norms: torch.Tensor
    token_similarity: torch.Tensor


def deep_stack(
    n_layers: int,
    residual: bool,
    layer_norm: bool = True,
    d_model: int = 64,
    n_heads: int = 4,
    block_size: int = 32,
    vocab_size: int = 65,
    seed: int = 0,
) -> GPT:
    """A GPT (GPT-2 initialisation, float64) whose blocks keep or drop their skip connections.

    `layer_norm=False` replaces each block's two LayerNorms by the identity, leaving the
    residual connection as the only difference between `residual=True` and `False`. The
    final LayerNorm before the unembedding stays. float64 so that gradients far below
    float32's smallest number (about 1e-45) are still measured rather than rounded to 0.
    """
    torch.manual_seed(seed)
    config = GPTConfig(
        vocab_size=vocab_size,
        d_model=d_model,
        n_heads=n_heads,
        n_layers=n_layers,
        max_len=block_size,
    )
    model = GPT(config).double()
    for block in model.blocks:
        block.residual = residual
        if not layer_norm:
            block.ln1, block.ln2 = nn.Identity(), nn.Identity()
    return model


def mean_token_similarity(h: torch.Tensor) -> torch.Tensor:
    """Mean cosine similarity between the centred vectors of different positions of h [B, T, d]."""
    centred = F.normalize(h - h.mean(dim=-1, keepdim=True), dim=-1)
    cosines = centred @ centred.transpose(1, 2)  # [B, T, T]
    T = h.shape[1]
    off_diagonal = cosines.sum(dim=(1, 2)) - cosines.diagonal(dim1=1, dim2=2).sum(dim=1)
    return (off_diagonal / (T * (T - 1))).mean()


def gradient_flow(
    n_layers: int,
    residual: bool,
    layer_norm: bool = True,
    batch_size: int = 8,
    block_size: int = 32,
    d_model: int = 64,
    seed: int = 0,
) -> GradientFlow:
    """Per-block gradient norms and token similarity of `deep_stack` on random tokens."""
    if n_layers < 1 or block_size < 2:
        raise ValueError(f"need n_layers >= 1 and block_size >= 2, got {n_layers}, {block_size}")
    model = deep_stack(
        n_layers, residual, layer_norm, d_model=d_model, block_size=block_size, seed=seed
    )
    generator = torch.Generator().manual_seed(seed)
    V = model.config.vocab_size
    inputs = torch.randint(0, V, (batch_size, block_size), generator=generator)
    targets = torch.randint(0, V, (batch_size, block_size), generator=generator)
    with capture_outputs(model.blocks) as outputs:
        grad_norms = loss_gradient_norms(model, inputs, targets)
    return GradientFlow(grad_norms, torch.stack([mean_token_similarity(h) for h in outputs]))


@dataclass(frozen=True)
class StreamWrites:
    """The residual stream of a Pre-LN GPT, taken apart (notebook 05).

    embedding [B, T, d]: token + position vectors, the stream's start.
    updates [2L, B, T, d]: what each sublayer adds (attention of block 1, its MLP, block 2, ...).
    final [B, T, d]: the stream after the last block (before the final LayerNorm).
    relative [2L]: mean over tokens of |update| / |stream just before it|.
    names [2L]: "attn 1", "mlp 1", "attn 2", ...
    """

    embedding: torch.Tensor
    updates: torch.Tensor
    final: torch.Tensor
    relative: torch.Tensor
    names: tuple[str, ...]


@torch.no_grad()
def residual_stream_writes(model: GPT, idx: torch.Tensor) -> StreamWrites:
    """Record every write into the residual stream of a Pre-LN `model` on token ids idx [B, T]."""
    if model.config.norm != "pre" or not all(block.residual for block in model.blocks):
        raise ValueError(
            "residual_stream_writes needs a Pre-LN model with residual connections, got "
            f"norm={model.config.norm!r}, residual={[b.residual for b in model.blocks]}; "
            "build it with GPTConfig(norm='pre') and leave Block.residual at True"
        )
    names = tuple(
        f"{kind} {i}" for i in range(1, len(model.blocks) + 1) for kind in ("attn", "mlp")
    )
    sublayers = [layer for block in model.blocks for layer in (block.attn, block.mlp)]
    with (
        evaluating(model),
        capture_inputs(model.blocks[:1]) as embedding,
        capture_outputs(sublayers) as writes,
        capture_outputs(model.blocks[-1:]) as final,
    ):
        model(idx)
    updates = torch.stack(writes)  # [2L, B, T, d], in call order: attn 1, mlp 1, attn 2, ...
    before = embedding[0] + updates.cumsum(dim=0) - updates  # the stream before each write
    relative = (updates.norm(dim=-1) / before.norm(dim=-1)).mean(dim=(1, 2))
    return StreamWrites(embedding[0], updates, final[0], relative, names)
