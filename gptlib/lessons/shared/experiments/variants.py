"""The lesson variants of gptlib's GPT: the roads the chapter's model does not take.

`gptlib.GPT` is the chapter's model and nothing else: learned positions, Pre-LN blocks with
residual connections, causal attention through torch's fused kernel. To show what each piece
does, the notebooks also build what it is not. Each variant is built here, one way, by
`build_gpt(config, Variant(...))`: a `gptlib.GPT` whose modules are swapped or rewired. It
keeps the model's initial weights and parameter names (`load_state_dict` moves weights between
the two, for the parameters both have) and its shapes: ids [B, T] → logits [B, T, V].

| Variant(...)                    | what changes                       | notebook   |
|---------------------------------|------------------------------------|------------|
| attention="written-out"         | fused=False: softmax written out   | 08, 09     |
| attention="unmasked"            | no causal mask                     | 03         |
| attention="none"                | blocks without attention           | 08         |
| positions="sinusoidal" / "none" | fixed sinusoids / no positions     | 01, 08, 09 |
| norm="post"                     | Post-LN blocks: x ← LN(x + F(x))   | 06         |
| residual=False                  | no skips: x ← F(LN(x))             | 05, 08     |
| block_norms=False               | no LayerNorms in the blocks        | 05, 08     |
| final_norm=False                | none before the unembedding        | 08         |
| mlp=False                       | blocks of attention alone          | 08         |
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from gptlib.lessons.shared.references import sinusoidal_positions
from gptlib.model import (
    GPT,
    Block,
    CausalSelfAttention,
    GPTConfig,
    KVCache,
)

ATTENTIONS = ("fused", "written-out", "unmasked", "none")
NORMS = ("pre", "post")
POSITIONS = ("learned", "sinusoidal", "none")


class UnmaskedAttention(CausalSelfAttention):
    """Self-attention without the causal mask: every position also reads the later ones, its
    own target among them (notebook 03's pitfall). x [B, T, d] → [B, T, d].

    Keys cached before later tokens existed would be stale, so a model with these layers
    generates with `use_cache=False`.
    """

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        dropout_p = self.dropout_p if self.training else 0.0
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p)


def is_masked(attn: CausalSelfAttention) -> bool:
    """Whether `attn` applies the causal mask (every attention layer but `UnmaskedAttention`)."""
    return not isinstance(attn, UnmaskedAttention)


class SinusoidalPositions(nn.Module):
    """The original Transformer's fixed position vectors in place of the learned table
    (notebook 01): positions [T] → rows of `sinusoidal_positions(max_len, d)`, [T, d]."""

    def __init__(self, max_len: int, d_model: int) -> None:
        super().__init__()
        self.register_buffer("table", sinusoidal_positions(max_len, d_model), persistent=False)

    def forward(self, positions: torch.Tensor) -> torch.Tensor:
        return self.table[positions]


class NoPositions(nn.Module):
    """No position vectors: positions [T] → zeros [T, d], so only the causal mask hints at the
    order of the tokens (notebook 08)."""

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.register_buffer("zero", torch.zeros(1, d_model), persistent=False)

    def forward(self, positions: torch.Tensor) -> torch.Tensor:
        return self.zero.expand(len(positions), -1)


def positions_of(model: GPT) -> str:
    """Which of `POSITIONS` `model` adds to its token vectors."""
    kinds = {SinusoidalPositions: "sinusoidal", NoPositions: "none"}
    return kinds.get(type(model.pos_emb), "learned")


class RewiredBlock(nn.Module):
    """A `Block`'s own modules, wired otherwise. [B, T, d] → [B, T, d].

    norm="post" (the original Transformer): x ← ln1(x + attn(x)), then x ← ln2(x + mlp(x)).
    residual=False: each sublayer's output replaces x instead of being added to it (Pre-LN
    x ← attn(ln1(x)), Post-LN x ← ln1(attn(x))). norms=False: ln1 and ln2 are the identity.
    mlp=False: attention alone; attention=False: the MLP alone. With the defaults it computes
    what the `Block` computes.
    """

    def __init__(
        self,
        block: Block,
        *,
        norm: str = "pre",
        residual: bool = True,
        norms: bool = True,
        mlp: bool = True,
        attention: bool = True,
    ) -> None:
        super().__init__()
        self.norm, self.residual = norm, residual
        self.ln1 = block.ln1 if norms and attention else nn.Identity()
        self.attn = block.attn if attention else None
        self.ln2 = block.ln2 if norms and mlp else nn.Identity()
        self.mlp = block.mlp if mlp else None

    def forward(self, x: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """x [B, T, d] → [B, T, d]; `cache` as in `CausalSelfAttention.forward`."""
        if self.attn is not None:
            x = self._sublayer(x, lambda h: self.attn(h, cache), self.ln1)
        return x if self.mlp is None else self._sublayer(x, self.mlp, self.ln2)

    def _sublayer(
        self, x: torch.Tensor, f: Callable[[torch.Tensor], torch.Tensor], ln: nn.Module
    ) -> torch.Tensor:
        if self.norm == "pre":
            update = f(ln(x))
            return x + update if self.residual else update
        return ln(x + f(x) if self.residual else f(x))


@dataclass(frozen=True)
class Variant:
    """What a lesson changes in gptlib's GPT (the table above); the defaults change nothing.

    Post-LN blocks end in a LayerNorm, so norm="post" also drops the final one.
    """

    attention: str = "fused"
    positions: str = "learned"
    norm: str = "pre"
    residual: bool = True
    block_norms: bool = True
    final_norm: bool = True
    mlp: bool = True

    def __post_init__(self) -> None:
        for name, choices in (("attention", ATTENTIONS), ("positions", POSITIONS), ("norm", NORMS)):
            if getattr(self, name) not in choices:
                raise ValueError(f"{name} must be one of {choices}, got {getattr(self, name)!r}")

    @property
    def rewires_blocks(self) -> bool:
        wiring = (self.norm, self.residual, self.block_norms, self.mlp, self.attention != "none")
        return wiring != ("pre", True, True, True, True)


def build_gpt(
    config: GPTConfig,
    variant: Variant = Variant(),
    *,
    embedding_std: float = 0.02,
    init: str = "gpt2",
) -> GPT:
    """`GPT(config, init=..., embedding_std=...)` with `variant`'s changes: the same initial
    weights where the variant keeps the parameter, under the same names (a left-out module's
    parameters are dropped). ids [B, T] → logits [B, T, V]."""
    model = GPT(config, init=init, embedding_std=embedding_std)
    if variant.positions == "sinusoidal":
        model.pos_emb = SinusoidalPositions(config.max_len, config.d_model)
    elif variant.positions == "none":
        model.pos_emb = NoPositions(config.d_model)
    for i, block in enumerate(model.blocks):
        if variant.attention == "written-out":
            block.attn.fused = False  # the softmax written out beside the fused call
        elif variant.attention == "unmasked":
            block.attn = _unmasked(block.attn)
        if variant.rewires_blocks:
            model.blocks[i] = RewiredBlock(
                block,
                norm=variant.norm,
                residual=variant.residual,
                norms=variant.block_norms,
                mlp=variant.mlp,
                attention=variant.attention != "none",
            )
    if variant.norm == "post" or not variant.final_norm:
        model.ln_f = nn.Identity()
    return model


def _unmasked(layer: CausalSelfAttention) -> UnmaskedAttention:
    """An `UnmaskedAttention` holding `layer`'s own parameters (nothing copied, nothing drawn)."""
    with torch.device("meta"):
        twin = UnmaskedAttention(
            layer.d_model, layer.n_heads, bias=layer.qkv.bias is not None, dropout=layer.dropout_p
        )
    twin.load_state_dict(layer.state_dict(keep_vars=True), assign=True)
    return twin
