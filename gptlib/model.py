"""The GPT in one file, in the order the notebooks build it:

    idx [B, T] → tok_emb + pos_emb → L × Block → ln_f → lm_head → logits [B, T, V]

1. attention: the causal mask (03), the softmax written out (02), the KV cache (08), multi-head
   attention (04), fused or written out;
2. the MLP (05) and the Pre-LN block (06);
3. the config and the GPT (07), with `generate` (07, 08);
4. the next token from the logits: temperature and top-k (08).

The checks where input comes in (a config, `forward`, `generate`) live in `gptlib.validation`;
their ValueErrors say what was wrong and what to do.

Shapes: B batch, T positions (T_k keys), d model width, h heads, d_h = d / h (`d_head`),
V vocabulary. Parameter names are the chapter's (`lm_head` for its `head`), so a model written
like the chapter's and this one load each other's `state_dict()` as they are. Two exercise
references the model does not use live with their lessons: `gptlib.lessons.shared.references`
(the sinusoidal table, 01) and `gptlib.lessons.nb06.references` (LayerNorm written out, 06).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from gptlib.validation import (
    check_choice,
    check_dropout,
    check_heads,
    check_positive_int,
    check_sampling,
    check_token_ids,
)

# --- 1. Attention (notebooks 02-04) -----------------------------------------------------------


def causal_mask(
    T_q: int, *, T_k: int | None = None, device: torch.device | None = None
) -> torch.Tensor:
    """Boolean mask [T_q, T_k] (notebook 03), True where query i may attend to key j as in
    torch's fused attention (the chapter marks the blocked scores instead). The queries are the
    last T_q of T_k positions: the lower triangle, or a band shifted right by T_k − T_q."""
    T_k = T_q if T_k is None else T_k
    return torch.ones(T_q, T_k, dtype=torch.bool, device=device).tril(diagonal=T_k - T_q)


def attention_with_weights(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    mask: torch.Tensor | None = None,
    scaled: bool = True,
    dropout_p: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q kᵀ / √d_k) v written out (notebook 02): q [..., T_q, d_k], k [..., T_k, d_k],
    v [..., T_k, d_v] → (output [..., T_q, d_v], weights [..., T_q, T_k]). Where the boolean
    mask is False the score is −∞ and the weight exactly 0; `scaled=False` skips the √d_k;
    `dropout_p` drops weights before they mix the values."""
    scores = q @ k.transpose(-2, -1)  # [..., T_q, T_k]
    if scaled:
        scores = scores / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    mixing = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
    return mixing @ v, weights


@dataclass
class KVCache:
    """One attention layer's keys and values, kept between generation steps (notebook 08):
    k, v preallocated [B, h, max_len, d_h], of which the first `filled` positions hold data."""

    k: torch.Tensor
    v: torch.Tensor
    filled: int = 0

    @classmethod
    def empty(cls, shape: tuple[int, ...], *, device: torch.device, dtype: torch.dtype) -> KVCache:
        k = torch.empty(shape, device=device, dtype=dtype)
        return cls(k, torch.empty_like(k))

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store new k, v [B, h, T_new, d_h]; return all keys and values so far [B, h, T_k, d_h]."""
        start, self.filled = self.filled, self.filled + k.shape[-2]
        self.k[:, :, start : self.filled] = k
        self.v[:, :, start : self.filled] = v
        return self.k[:, :, : self.filled], self.v[:, :, : self.filled]


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with a fused qkv projection (notebook 04):
    x [B, T, d] → qkv [B, T, 3d] → q, k, v [B, h, T, d_h] → attend → [B, T, d] → W_O.
    `attend` calls torch's fused kernel or, with `fused=False`, the softmax written out: the
    same numbers up to rounding, in two matmuls that torch's FLOP counter sees (notebook 09)."""

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        *,
        bias: bool = True,
        dropout: float = 0.0,
        fused: bool = True,
    ) -> None:
        super().__init__()
        check_heads(d_model, n_heads)
        check_dropout(dropout)
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        self.dropout_p, self.fused = dropout, fused  # dropout_p: on the weights, in training
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias)  # W_Q, W_K, W_V fused
        self.proj = nn.Linear(d_model, d_model, bias=bias)  # W_O
        self.dropout = nn.Dropout(dropout)  # on the output

    def split_heads(self, t: torch.Tensor) -> torch.Tensor:
        """[B, T, d] → [B, h, T, d_h]: view the last axis as (h, d_h), then move heads forward."""
        B, T, _ = t.shape
        return t.view(B, T, self.n_heads, self.d_head).transpose(1, 2)

    @staticmethod
    def merge_heads(t: torch.Tensor) -> torch.Tensor:
        """[B, h, T, d_h] → [B, T, d]: the inverse of `split_heads`."""
        B, h, T, d_h = t.shape
        return t.transpose(1, 2).reshape(B, T, h * d_h)

    def forward(self, x: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """x [B, T, d] → y [B, T, d]; with a `cache`, x holds only the new positions."""
        q, k, v = (self.split_heads(t) for t in self.qkv(x).split(self.d_model, dim=-1))
        if cache is not None:
            k, v = cache.append(k, v)  # [B, h, T_k, d_h]: the cached positions, then these
        return self.dropout(self.proj(self.merge_heads(self.attend(q, k, v))))

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """q [B, h, T, d_h], k and v [B, h, T_k, d_h] → [B, h, T, d_h]: each query mixes the
        values of its own and earlier positions (after T_k − T cached ones: a shifted band)."""
        T, T_k = q.shape[-2], k.shape[-2]
        dropout_p = self.dropout_p if self.training else 0.0
        if not self.fused:
            mask = causal_mask(T, T_k=T_k, device=q.device)
            return attention_with_weights(q, k, v, mask=mask, dropout_p=dropout_p)[0]
        if T == T_k:  # the full triangle: the kernel's fast path
            return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=True)
        mask = None if T == 1 else causal_mask(T, T_k=T_k, device=q.device)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)


# --- 2. The MLP and the block (notebooks 05-06) -----------------------------------------------

GELUS = ("exact", "tanh")  # the MLP's GELU: x·Φ(x) with erf (05), or GPT-2's approximation (08)


class MLP(nn.Module):
    """Position-wise feed-forward network d → d_ff (default 4d) → d with GELU (notebook 05):
    8d² weights at d_ff = 4d, twice attention's 4d². [B, T, d] → [B, T, d]. `gelu` "tanh" is
    GPT-2's 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), within 4.7e-4 of the exact one."""

    def __init__(
        self,
        d_model: int,
        *,
        d_ff: int | None = None,
        bias: bool = True,
        dropout: float = 0.0,
        gelu: str = "exact",
    ) -> None:
        super().__init__()
        d_ff = 4 * d_model if d_ff is None else d_ff
        for name, value in (("d_model", d_model), ("d_ff", d_ff)):
            check_positive_int(name, value)
        check_dropout(dropout)
        check_choice("gelu", gelu, GELUS)
        self.up = nn.Linear(d_model, d_ff, bias=bias)
        self.down = nn.Linear(d_ff, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)
        self.approximate = "none" if gelu == "exact" else "tanh"  # F.gelu's name for each

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.down(F.gelu(self.up(x), approximate=self.approximate)))


class Block(nn.Module):
    """One Pre-LN block, as GPT-2's (notebook 06): x ← x + attn(ln1(x)), then
    x ← x + mlp(ln2(x)), so the residual path is a clean sum. [B, T, d] → [B, T, d].
    (Post-LN and blocks without skips are lessons: `gptlib.lessons.shared.experiments.variants`.)"""

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        *,
        bias: bool = True,
        dropout: float = 0.0,
        gelu: str = "exact",
    ) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model, bias=bias)
        self.attn = CausalSelfAttention(d_model, n_heads, bias=bias, dropout=dropout)
        self.ln2 = nn.LayerNorm(d_model, bias=bias)
        self.mlp = MLP(d_model, bias=bias, dropout=dropout, gelu=gelu)

    def forward(self, x: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        x = x + self.attn(self.ln1(x), cache)  # tokens exchange information
        return x + self.mlp(self.ln2(x))  # each token computes on its own


# --- 3. The GPT (notebooks 07-08) -------------------------------------------------------------

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

    def to_dict(self) -> dict:
        return asdict(self)


class GPT(nn.Module):
    """A decoder-only Transformer in the style of GPT-2 (notebooks 07 and 08). init="gpt2" (the
    default) starts the weights as GPT-2's: normal with std 0.02 (the embeddings
    `embedding_std`), the projections that write into the residual stream scaled by 1/√(2L).
    init="pytorch" keeps each module's own default, as the chapter's code gets them
    (embeddings N(0, 1), Linear uniform within ±1/√fan_in)."""

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
            for name, param in self.named_parameters():  # norms keep γ = 1, β = 0
                if name.endswith("bias"):
                    nn.init.zeros_(param)
                elif param.dim() == 2:
                    std = embedding_std if "emb" in name else 0.02
                    if name.endswith(("attn.proj.weight", "mlp.down.weight")):  # into the stream
                        std /= math.sqrt(2 * c.n_layers)
                    nn.init.normal_(param, mean=0.0, std=std)
        if c.tie_weights:
            self.lm_head.weight = self.tok_emb.weight  # W_U = Eᵀ

    def num_parameters(self) -> int:
        """Number of distinct trainable parameters (a tied matrix counts once)."""
        return sum(p.numel() for p in self.parameters())

    def hidden_states(
        self, idx: torch.Tensor, *, start: int = 0, caches: list[KVCache] | None = None
    ) -> torch.Tensor:
        """idx [B, T] at positions start.. → final hidden states [B, T, d]. No checks: `forward`
        and `generate` check their input first."""
        positions = torch.arange(start, start + idx.shape[1], device=idx.device)  # [T]
        x = self.dropout(self.tok_emb(idx) + self.pos_emb(positions))  # [B, T, d]
        for i, block in enumerate(self.blocks):
            x = block(x, None if caches is None else caches[i])
        return self.ln_f(x)

    def forward(
        self, idx: torch.Tensor, targets: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """idx [B, T] → (logits [B, T, V], mean cross-entropy or None). targets [B, T] is idx
        shifted left, -1 where a position is left out of the loss (nanoGPT's convention); ids
        and targets may have any integer dtype."""
        check_token_ids(idx, self.config.vocab_size, max_len=self.config.max_len, targets=targets)
        logits = self.lm_head(self.hidden_states(idx.long()))  # [B, T, V]
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.flatten(0, 1), targets.long().flatten(), ignore_index=-1)
        return logits, loss

    def new_caches(self, batch_size: int) -> list[KVCache]:
        """One empty KV cache per layer, with room for max_len positions."""
        c, weight = self.config, self.lm_head.weight  # the caches take the weights' device, dtype
        shape = (batch_size, c.n_heads, c.max_len, c.d_model // c.n_heads)  # [B, h, max_len, d_h]
        return [
            KVCache.empty(shape, device=weight.device, dtype=weight.dtype)
            for _ in range(c.n_layers)
        ]

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
        """Extend idx [B, T] by n_new sampled tokens → [B, T + n_new] (notebooks 07, 08), reading
        the last max_len tokens at most, as the chapter's loop does; temperature=0 is greedy,
        top_k keeps the k likeliest. `use_cache` gives the same tokens faster while the whole
        text fits in max_len: only the new token goes through the blocks, each layer keeping its
        keys and values. Past max_len the window moves and every token in it gets a new position,
        so the cache no longer holds: each new token costs a full pass over max_len tokens."""
        c = self.config
        check_token_ids(idx, c.vocab_size, read_values=True)
        check_sampling(temperature, top_k)
        check_positive_int("n_new", n_new, minimum=0)
        sampling = dict(temperature=temperature, top_k=top_k, generator=generator)
        tokens, caches, was_training = idx.long(), None, self.training
        self.eval()
        try:
            for _ in range(n_new):
                if use_cache and tokens.shape[1] <= c.max_len:  # it all fits: the cache is exact
                    if caches is None:  # the prompt goes through first, filling the caches
                        caches = self.new_caches(idx.shape[0])
                    seen = caches[0].filled  # then only the newest token
                    h = self.hidden_states(tokens[:, seen:], start=seen, caches=caches)
                else:  # the chapter's crop: the last max_len tokens, all through the blocks
                    h = self.hidden_states(tokens[:, -c.max_len :])
                next_id = sample_next(self.lm_head(h[:, -1]), **sampling)  # [B, V] → [B, 1]
                tokens = torch.cat([tokens, next_id], dim=1)
        finally:
            self.train(was_training)
        return tokens


# --- 4. The next token: temperature and top-k (notebook 08) -----------------------------------


def next_token_probs(
    logits: torch.Tensor, *, temperature: float = 1.0, top_k: int | None = None
) -> torch.Tensor:
    """Logits [B, V] → probabilities [B, V] after temperature and top-k (notebook 08): dividing
    by a temperature below 1 sharpens, above 1 flattens; top-k keeps the k likeliest (k ≥ V
    keeps all); temperature 0 puts all the mass on the arg-max."""
    if temperature == 0:
        return F.one_hot(logits.argmax(-1), logits.shape[-1]).to(logits.dtype)
    # Shift the largest logit to 0 and leave it undivided: a tiny temperature then sends the
    # others to −∞, never the largest to 0 / 0 where the temperature underflows to 0 in the
    # logits' dtype (below about 1e-45 in float32).
    shifted = logits - logits.amax(dim=-1, keepdim=True)
    logits = torch.where(shifted == 0, shifted, shifted / temperature)
    if top_k is not None and top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    return torch.softmax(logits, dim=-1)


def sample_next(
    logits: torch.Tensor,
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Logits [B, V] → next token ids [B, 1], sampled (the arg-max when temperature == 0)."""
    if temperature == 0:
        return logits.argmax(-1, keepdim=True)
    probs = next_token_probs(logits, temperature=temperature, top_k=top_k)
    return torch.multinomial(probs, 1, generator=generator)
