"""The single-token decode step that generation with a KV cache repeats (notebook 07).

`GPT.generate` sends the prompt through the blocks' ordinary forward pass, which fills one
`KVCache` per layer. Every later step has one new token per sequence: x is [B, d], the new
key and value of each layer go into its cache, and the query attends to all cached positions
(no mask needed: nothing later than the newest token exists). At the chapter's size such a step
is about sixty tensor operations of a few microseconds each, so Python's bookkeeping around
them (module calls, attribute lookups) would cost as much as the arithmetic. `Decoder` gathers
each block's weights once and runs the block's arithmetic with `torch.nn.functional` calls:
the same numbers as `Block.forward` (tests/test_generation.py), about a third less time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from gptlib.attention import KVCache, scaled_dot_product_attention
from gptlib.blocks import Block, LayerNorm

if TYPE_CHECKING:
    from gptlib.model import GPT


@dataclass(frozen=True)
class _Norm:
    weight: torch.Tensor
    bias: torch.Tensor | None
    eps: float

    @classmethod
    def of(cls, norm: LayerNorm) -> _Norm:
        return cls(norm.weight, norm.bias, norm.eps)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, self.eps)


@dataclass(frozen=True)
class _LayerWeights:
    """One block's tensors, looked up once per generation instead of once per token."""

    pre_norm: bool
    explicit: bool
    n_heads: int
    ln1: _Norm
    ln2: _Norm
    qkv: tuple[torch.Tensor, torch.Tensor | None]
    proj: tuple[torch.Tensor, torch.Tensor | None]
    up: tuple[torch.Tensor, torch.Tensor | None]
    down: tuple[torch.Tensor, torch.Tensor | None]

    @classmethod
    def of(cls, block: Block) -> _LayerWeights:
        if not block.residual:
            raise ValueError("the decode step needs blocks with residual connections")
        attn, mlp = block.attn, block.mlp
        return cls(
            pre_norm=block.norm == "pre",
            explicit=attn.impl == "explicit",
            n_heads=attn.n_heads,
            ln1=_Norm.of(block.ln1),
            ln2=_Norm.of(block.ln2),
            qkv=(attn.qkv.weight, attn.qkv.bias),
            proj=(attn.proj.weight, attn.proj.bias),
            up=(mlp.up.weight, mlp.up.bias),
            down=(mlp.down.weight, mlp.down.bias),
        )

    def attention(self, x: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """x [B, d] → attention output [B, d]; appends this token's key and value to `cache`."""
        B, d = x.shape
        qkv = F.linear(x, *self.qkv).view(B, 3, self.n_heads, 1, d // self.n_heads)
        q, k, v = qkv.unbind(1)  # each [B, h, 1, d_h]
        k, v = cache.append(k, v)  # [B, h, T_k, d_h]
        if self.explicit:
            out, _ = scaled_dot_product_attention(q, k, v)
        else:
            out = F.scaled_dot_product_attention(q, k, v)
        return F.linear(out.view(B, d), *self.proj)

    def mlp(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(F.gelu(F.linear(x, *self.up)), *self.down)

    def __call__(self, x: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """`Block.forward` for one token per sequence, in evaluation mode: [B, d] → [B, d]."""
        if self.pre_norm:
            x = x + self.attention(self.ln1(x), cache)
            return x + self.mlp(self.ln2(x))
        x = self.ln1(x + self.attention(x, cache))
        return self.ln2(x + self.mlp(x))


class Decoder:
    """Next-token logits for one new token per sequence, given caches filled by the prompt."""

    def __init__(self, model: GPT) -> None:
        self.model = model
        self.layers = [_LayerWeights.of(block) for block in model.blocks]

    def step(self, token: torch.Tensor, position: int, caches: list[KVCache]) -> torch.Tensor:
        """token [B] at window position `position` → logits [B, V] for the token after it."""
        model = self.model
        x = model.tok_emb(token) + model.pos_emb(position, 1, token.device)  # [B, d]
        for layer, cache in zip(self.layers, caches, strict=True):
            x = layer(x, cache)
        return model.lm_head(model.ln_f(x))
