"""The attention weights of a model's layers, [L, B, h, T, T] (notebooks 03, 04 and 08).

The fused kernel never forms the weights, so they are computed again from what each layer
receives (recorded by a forward pre-hook): the layer's own qkv projection and head split, then
softmax(q kᵀ / √d_h) over the allowed keys (all of them in an `UnmaskedAttention`). Nothing in
the model changes.
"""

from __future__ import annotations

import torch
from torch import nn

from gptlib.hooks import capture_inputs, evaluating
from gptlib.lessons.shared.experiments.variants import is_masked
from gptlib.model import CausalSelfAttention, attention_with_weights, causal_mask


def attention_weights(attn: CausalSelfAttention, x: torch.Tensor) -> torch.Tensor:
    """The weights [B, h, T, T] with which `attn` mixes the values of its input x [B, T, d]."""
    q, k, v = (attn.split_heads(t) for t in attn.qkv(x).split(attn.d_model, dim=-1))
    mask = causal_mask(x.shape[1], device=x.device) if is_masked(attn) else None
    return attention_with_weights(q, k, v, mask=mask)[1]


@torch.no_grad()
def attention_maps(model: nn.Module, idx: torch.Tensor) -> torch.Tensor:
    """The attention weights of every layer and head of `model` (a `gptlib.GPT` or a lesson
    variant of it) on idx [B, T], in evaluation mode: [L, B, h, T, T]."""
    layers = [block.attn for block in model.blocks]
    with evaluating(model), capture_inputs(layers) as inputs:
        model(idx)
    return torch.stack([attention_weights(a, x) for a, x in zip(layers, inputs, strict=True)])
