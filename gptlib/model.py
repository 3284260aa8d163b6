"""The GPT: embeddings, a stack of blocks, a final norm, the unembedding, and generation.

Built step by step in notebook 07; trained and sampled in notebook 08.
idx [B, T] → x [B, T, d] → L × Block → LN → lm_head → logits [B, T, V].
Its parameter names are the chapter's (with `lm_head` for the chapter's `head`): tok_emb,
pos_emb, blocks.{i}.ln1 / attn.qkv / attn.proj / ln2 / mlp.up / mlp.down, ln_f, lm_head. So a
model written like the chapter's and this one load each other's `state_dict()` as they are.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from gptlib._validate import (
    check_choice,
    check_dropout,
    check_heads,
    check_positive_int,
    check_sampling,
    check_token_ids,
)
from gptlib.attention import KVCache
from gptlib.blocks import GELUS, Block
from gptlib.hooks import evaluating
from gptlib.sampling import sample_next

INITS = ("gpt2", "pytorch")


@dataclass(frozen=True)
class GPTConfig:
    """Everything that fixes a GPT's shape. The defaults are the chapter's small model."""

    vocab_size: int
    d_model: int = 128
    n_heads: int = 4
    n_layers: int = 4
    max_len: int = 256  # positions the model can read: its context length
    tie_weights: bool = False  # the unembedding shares the token embedding's matrix
    bias: bool = True  # biases in linear layers and LayerNorms
    dropout: float = 0.0
    gelu: str = "exact"  # the MLP's, one of GELUS: "tanh" is GPT-2's (gptlib.pretrained, 08)

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_heads", "n_layers", "max_len"):
            check_positive_int(name, getattr(self, name))
        check_heads(self.d_model, self.n_heads)
        check_choice("gelu", self.gelu, GELUS)
        check_dropout(self.dropout)

    def __repr__(self) -> str:  # gelu only when it is not the chapter's (older outputs stand)
        shown = {k: v for k, v in asdict(self).items() if (k, v) != ("gelu", "exact")}
        return f"GPTConfig({', '.join(f'{k}={v!r}' for k, v in shown.items())})"

    def to_dict(self) -> dict:
        return asdict(self)


class GPT(nn.Module):
    """A decoder-only Transformer in the style of GPT-2 (notebooks 07 and 08).

    With init="gpt2" (the default) weights start as in GPT-2: normal with std 0.02, the
    projections that write into the residual stream scaled by 1/√(2L); `embedding_std` sets the
    std of the embedding tables. init="pytorch" keeps each module's own default, as the
    chapter's code gets them (embeddings N(0, 1), Linear uniform within ±1/√fan_in): that
    memorises a short text sooner (notebook 07) and learns faster in a 60-s run (`gptlib train`).
    """

    def __init__(
        self, config: GPTConfig, *, init: str = "gpt2", embedding_std: float = 0.02
    ) -> None:
        super().__init__()
        check_choice("init", init, INITS)
        self.config = c = config
        self.tok_emb = nn.Embedding(c.vocab_size, c.d_model)  # E: [V, d]
        self.pos_emb = nn.Embedding(c.max_len, c.d_model)  # P: [max_len, d], learned positions
        self.dropout = nn.Dropout(c.dropout)
        self.blocks = nn.ModuleList(
            Block(c.d_model, c.n_heads, bias=c.bias, dropout=c.dropout, gelu=c.gelu)
            for _ in range(c.n_layers)
        )
        self.ln_f = nn.LayerNorm(c.d_model, bias=c.bias)  # Pre-LN leaves the stream unnormalised
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)  # unembedding W_U: d → V
        if init == "gpt2":
            self._init_like_gpt2(embedding_std)
        if c.tie_weights:
            self.lm_head.weight = self.tok_emb.weight  # W_U = Eᵀ

    def _init_like_gpt2(self, embedding_std: float) -> None:
        for name, p in self.named_parameters():  # norms keep γ=1, β=0
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif p.dim() == 2:
                std = embedding_std if "emb" in name else 0.02
                if name.endswith(("attn.proj.weight", "mlp.down.weight")):  # write to the stream
                    std /= math.sqrt(2 * self.config.n_layers)
                nn.init.normal_(p, mean=0.0, std=std)

    def num_parameters(self) -> int:
        """Number of distinct trainable parameters (a tied matrix counts once)."""
        return sum(p.numel() for p in self.parameters())

    def hidden_states(
        self, idx: torch.Tensor, *, start: int = 0, caches: list[KVCache] | None = None
    ) -> torch.Tensor:
        """idx [B, T] at window positions start.. → final hidden states [B, T, d] (unchecked)."""
        positions = torch.arange(start, start + idx.shape[1], device=idx.device)  # [T]
        x = self.dropout(self.tok_emb(idx) + self.pos_emb(positions))  # [B, T, d]
        for i, block in enumerate(self.blocks):
            x = block(x, None if caches is None else caches[i])
        return self.ln_f(x)

    def forward(
        self, idx: torch.Tensor, targets: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """idx [B, T] → (logits [B, T, V], mean cross-entropy or None); targets = idx shifted,
        -1 where a position is left out of the loss (nanoGPT's convention). Ids and targets may
        have any integer dtype."""
        c = self.config
        check_token_ids(idx, c.vocab_size, max_len=c.max_len, targets=targets)
        logits = self.lm_head(self.hidden_states(idx.long()))  # [B, T, V]
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.flatten(0, 1), targets.long().flatten(), ignore_index=-1)
        return logits, loss

    def new_caches(self, batch_size: int) -> list[KVCache]:
        """One empty KV cache per layer, with room for max_len positions."""
        c, p = self.config, self.lm_head.weight
        shape = (batch_size, c.n_heads, c.max_len, c.d_model // c.n_heads)  # [B, h, max_len, d_h]
        return [KVCache.empty(shape, device=p.device, dtype=p.dtype) for _ in range(c.n_layers)]

    @torch.no_grad()
    def generate(
        self,
        idx: torch.Tensor,
        n_new: int,
        *,
        temperature: float = 1.0,
        top_k: int | None = None,
        generator: torch.Generator | None = None,
        use_cache: bool = True,
    ) -> torch.Tensor:
        """Extend idx [B, T] by n_new sampled tokens → [B, T + n_new] (notebooks 07, 08).

        temperature=0 is greedy; top_k keeps the k likeliest tokens. The model reads at most
        max_len tokens; a full window slides forward to keep the last max_len // 2 (positions
        restart at 0). `use_cache` keeps each layer's keys and values, so a step feeds only the
        new token through the blocks; without it every step recomputes the window. Same tokens.
        """
        c = self.config
        check_token_ids(idx, c.vocab_size, read_values=True)
        check_sampling(temperature, top_k)
        check_positive_int("n_new", n_new, minimum=0)
        sampling = dict(temperature=temperature, top_k=top_k, generator=generator)
        tokens, caches = idx.long(), None
        start = max(0, idx.shape[1] - c.max_len)  # the window is tokens[:, start:]
        with evaluating(self), torch.inference_mode():
            for _ in range(n_new):
                if tokens.shape[1] - start > c.max_len:  # full: slide, refill the caches
                    start, caches = tokens.shape[1] - max(1, c.max_len // 2), None
                if not use_cache:
                    h = self.hidden_states(tokens[:, start:])
                elif caches is None:  # the prompt, or the window after a slide: one pass
                    caches = self.new_caches(idx.shape[0])
                    h = self.hidden_states(tokens[:, start:], caches=caches)
                else:  # only the newest token; the earlier ones are in the caches
                    h = self.hidden_states(tokens[:, -1:], start=caches[0].filled, caches=caches)
                next_id = sample_next(self.lm_head(h[:, -1]), **sampling)  # [B, V] → [B, 1]
                tokens = torch.cat([tokens, next_id], dim=1)
        return tokens.clone()  # made in inference mode; a clone is an ordinary tensor
