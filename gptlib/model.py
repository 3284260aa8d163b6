"""The GPT: embeddings, a stack of blocks, a final norm and the unembedding (notebook 07).

idx [B, T] → x [B, T, d] → L × Block → LN → logits [B, T, V].
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from gptlib._validate import check_token_ids
from gptlib.attention import KVCache
from gptlib.blocks import NORM_PLACEMENTS, Block, LayerNorm
from gptlib.decoding import Decoder
from gptlib.embeddings import POSITION_KINDS, PositionalEmbedding
from gptlib.sampling import sample_next, validate_sampling


@dataclass(frozen=True)
class GPTConfig:
    """Everything that fixes a GPT's shape. The defaults are the chapter's small model."""

    vocab_size: int
    d_model: int = 128
    n_heads: int = 4
    n_layers: int = 4
    max_len: int = 256
    norm: str = "pre"  # "pre" (GPT-2) or "post" (original Transformer)
    positions: str = "learned"  # "learned", "sinusoidal" or "none"
    tie_weights: bool = False  # share the unembedding with the token embedding
    bias: bool = True  # biases in linear layers and LayerNorms
    dropout: float = 0.0
    attn_impl: str = "sdpa"  # "sdpa" (fused) or "explicit" (written-out softmax)
    causal: bool = True  # False removes the attention mask: notebook 03's pitfall

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_heads", "n_layers", "max_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.d_model % self.n_heads:
            divisors = [h for h in range(1, self.d_model + 1) if self.d_model % h == 0]
            raise ValueError(
                f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}: each head "
                f"gets d_model / n_heads features. Choose n_heads from {divisors}"
            )
        if self.norm not in NORM_PLACEMENTS:
            raise ValueError(f"norm must be 'pre' or 'post', got {self.norm!r}")
        if self.positions not in POSITION_KINDS:
            raise ValueError(f"positions must be one of {POSITION_KINDS}, got {self.positions!r}")
        if self.positions == "sinusoidal" and self.d_model % 2:
            raise ValueError(f"sinusoidal positions need an even d_model, got {self.d_model}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.attn_impl not in ("sdpa", "explicit"):
            raise ValueError(f"attn_impl must be 'sdpa' or 'explicit', got {self.attn_impl!r}")

    def to_dict(self) -> dict:
        return asdict(self)


class GPT(nn.Module):
    """A decoder-only Transformer in the style of GPT-2 (notebook 07).

    forward(idx [B, T], targets [B, T] | None) → (logits [B, T, V], loss or None).

    Weights start as in GPT-2: normal with std 0.02, the residual-stream projections scaled by
    1/√(2L). `embedding_std` sets the std of the token and learned position tables; 1.0 is
    PyTorch's default for `nn.Embedding`, which the chapter's code keeps (notebook 07 shows it
    memorising a repeated text far sooner than with 0.02).
    """

    def __init__(self, config: GPTConfig, embedding_std: float = 0.02) -> None:
        super().__init__()
        if not embedding_std > 0:
            raise ValueError(f"embedding_std must be > 0, got {embedding_std}")
        self.config = c = config
        self.tok_emb = nn.Embedding(c.vocab_size, c.d_model)
        self.pos_emb = PositionalEmbedding(c.positions, c.max_len, c.d_model)
        self.dropout = nn.Dropout(c.dropout)
        self.blocks = nn.ModuleList(
            Block(
                c.d_model,
                c.n_heads,
                norm=c.norm,
                bias=c.bias,
                dropout=c.dropout,
                attn_impl=c.attn_impl,
                causal=c.causal,
            )
            for _ in range(c.n_layers)
        )
        # Pre-LN needs a final norm before the unembedding; Post-LN blocks already end in one.
        self.ln_f = LayerNorm(c.d_model, bias=c.bias) if c.norm == "pre" else nn.Identity()
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)  # unembedding W_U
        self.apply(functools.partial(self._init_weights, embedding_std=embedding_std))
        # GPT-2: scale the projections that write into the residual stream by 1/√(2L).
        for name, p in self.named_parameters():
            if name.endswith(("attn.proj.weight", "mlp.down.weight")):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * c.n_layers))
        if c.tie_weights:
            self.lm_head.weight = self.tok_emb.weight

    @staticmethod
    def _init_weights(module: nn.Module, embedding_std: float = 0.02) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=embedding_std)

    def num_parameters(self) -> int:
        """Number of distinct trainable parameters (a tied matrix counts once)."""
        return sum(p.numel() for p in self.parameters())

    def _hidden(
        self,
        idx: torch.Tensor,
        start: int = 0,
        caches: list[KVCache] | None = None,
        return_weights: bool = False,
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """idx [B, T] at positions start.. → final hidden states [B, T, d], per-layer weights."""
        T = idx.shape[1]
        x = self.dropout(self.tok_emb(idx) + self.pos_emb(start, T, idx.device))  # [B, T, d]
        weights = []
        for i, block in enumerate(self.blocks):
            x, w = block(
                x, cache=None if caches is None else caches[i], return_weights=return_weights
            )
            if w is not None:
                weights.append(w)
        return self.ln_f(x), weights

    def forward(
        self, idx: torch.Tensor, targets: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """idx [B, T] token ids → (logits [B, T, V], mean cross-entropy against targets or None)."""
        c = self.config
        check_token_ids(idx, c.vocab_size, c.max_len)
        if targets is not None and targets.shape != idx.shape:
            raise ValueError(
                f"targets must have the same shape as idx {list(idx.shape)}, got "
                f"{list(targets.shape)}; targets are idx shifted left by one position"
            )
        h, _ = self._hidden(idx)
        logits = self.lm_head(h)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, c.vocab_size), targets.reshape(-1))
        return logits, loss

    @torch.no_grad()
    def attention_maps(self, idx: torch.Tensor) -> torch.Tensor:
        """Attention weights of every layer and head, [L, B, h, T, T] (notebook 07)."""
        check_token_ids(idx, self.config.vocab_size, self.config.max_len)
        was_training = self.training
        self.eval()
        try:
            _, weights = self._hidden(idx, return_weights=True)
        finally:
            self.train(was_training)
        return torch.stack(weights)

    @torch.no_grad()
    def generate(
        self,
        idx: torch.Tensor,
        n_new: int,
        temperature: float = 1.0,
        top_k: int | None = None,
        generator: torch.Generator | None = None,
        use_cache: bool = True,
    ) -> torch.Tensor:
        """Extend idx [B, T] by n_new sampled tokens → [B, T + n_new] (notebook 07).

        temperature=0 is greedy decoding; top_k keeps the k likeliest tokens. With
        `use_cache` each step feeds only the new token and reuses cached keys and values;
        without it the whole window is recomputed. Both see the same window: the model reads
        at most max_len tokens, and when the window is full it slides forward by half
        (keeping the last max_len // 2 tokens), so learned positions restart at 0 and the
        cache is refilled once per max_len // 2 new tokens instead of at every step.
        """
        c = self.config
        check_token_ids(idx, c.vocab_size)
        validate_sampling(temperature, top_k)
        if not isinstance(n_new, int) or n_new < 0:
            raise ValueError(f"n_new must be a non-negative int, got {n_new!r}")
        was_training = self.training
        self.eval()
        tokens = list(idx.unbind(1))  # T tensors [B]
        try:
            # inference mode skips autograd's bookkeeping: about 20% less time per cached token
            with torch.inference_mode():
                # Cached keys are only valid if earlier positions never see later ones.
                cached = use_cache and c.causal
                step = self._cached_logits if cached else self._recomputed_logits
                start = max(0, len(tokens) - c.max_len)
                state: dict = {}
                for _ in range(n_new):
                    if len(tokens) - start > c.max_len:
                        start = len(tokens) - max(1, c.max_len // 2)
                        state.clear()
                    logits = step(tokens, start, state)
                    tokens.append(sample_next(logits, temperature, top_k, generator).squeeze(1))
        finally:
            self.train(was_training)
        return torch.stack(tokens, dim=1)  # built outside inference mode: an ordinary tensor

    def _recomputed_logits(
        self, tokens: list[torch.Tensor], start: int, state: dict
    ) -> torch.Tensor:
        h, _ = self._hidden(torch.stack(tokens[start:], dim=1))
        return self.lm_head(h[:, -1])

    def _cached_logits(self, tokens: list[torch.Tensor], start: int, state: dict) -> torch.Tensor:
        """Next-token logits [B, V], feeding only tokens not yet in the cache (state holds it)."""
        c = self.config
        if "caches" not in state:
            B = tokens[0].shape[0]
            ref = self.lm_head.weight
            state["caches"] = [
                KVCache.empty(
                    B, c.n_heads, c.max_len, c.d_model // c.n_heads, ref.device, ref.dtype
                )
                for _ in range(c.n_layers)
            ]
        caches = state["caches"]
        done = start + caches[0].length  # tokens[start:done] are cached
        if done < len(tokens) - 1:  # the prompt, or the window after a slide: one batched pass
            new = torch.stack(tokens[done:], dim=1)
            h, _ = self._hidden(new, start=done - start, caches=caches)
            return self.lm_head(h[:, -1])
        if "decoder" not in state:
            state["decoder"] = Decoder(self)
        return state["decoder"].step(tokens[-1], done - start, caches)
