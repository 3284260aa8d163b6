"""The GPT in one file, read top to bottom:

    idx [B, T] → tok_emb + pos_emb → L × Block → ln_f → lm_head → logits [B, T, V]

Each piece comes before the code that uses it, otherwise in the notebooks' order:
1. attention: the softmax written out (02), the causal mask (03), multi-head attention (04);
2. the MLP (05) and the Pre-LN block (06);
3. the next token: temperature and top-k (07, 08), ahead of `GPT.generate`, which calls them;
4. the config and the GPT (07).
The KV cache (07's last exercise, 08) runs through them, marked "KV cache": skip it at first.
Input is checked where it comes in (a config, `forward`, `generate`) by `gptlib.validation`.

Shapes: B batch; T positions (T_q queries, T_k keys where they differ: new positions after
cached ones); d model width; h heads; d_h = d / h per head (`d_head`; the chapter's `dh`); d_k,
d_v the key and value widths where attention takes any (d_h in the model); V vocabulary.

Parameter names are the chapter's but one: its unembedding `head` is our `lm_head`. Rename it in
a model written like the chapter's (or the key `head.weight` in its state dict) and the two load
each other's `state_dict()` with strict=True, as notebook 07's model does. Exercise references
the model does not use live with their lessons: `gptlib.lessons.shared.references` (the
sinusoidal table, 01) and `gptlib.lessons.nb06.references` (LayerNorm written out, 06).
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

# --- 1. Attention (notebooks 02-04; the KV cache, 07-08) --------------------------------------


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
    v [..., T_k, d_v] → (output [..., T_q, d_v], weights [..., T_q, T_k] before dropout). Where
    the boolean mask [T_q, T_k] is False the weight is exactly 0. `scaled=False` skips the √d_k
    (the model always scales); `dropout_p` drops weights before they mix the values."""
    scores = q @ k.transpose(-2, -1)  # [..., T_q, T_k]
    if scaled:
        scores = scores / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    mixing = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
    return mixing @ v, weights


def causal_mask(
    T_q: int, *, T_k: int | None = None, device: torch.device | None = None
) -> torch.Tensor:
    """Boolean mask [T_q, T_k] (notebook 03), True where query i may attend to key j, as torch's
    fused attention takes it (the chapter marks the blocked scores instead). The queries are the
    last T_q of T_k positions, so query i sees keys 0 .. i + T_k − T_q: the lower triangle when
    T_q = T_k, shifted right by T_k − T_q when that many keys come before the first query."""
    T_k = T_q if T_k is None else T_k
    return torch.ones(T_q, T_k, dtype=torch.bool, device=device).tril(diagonal=T_k - T_q)


@dataclass
class KVCache:
    """KV cache (notebooks 07-08; skip on a first read): one attention layer's keys and values,
    kept between generation steps. k, v [B, h, max_len, d_h] are allocated once (`empty`,
    uninitialised); the first `filled` positions hold data."""

    k: torch.Tensor
    v: torch.Tensor
    filled: int = 0

    @classmethod
    def empty(cls, shape: tuple[int, ...], *, device: torch.device, dtype: torch.dtype) -> KVCache:
        k = torch.empty(shape, device=device, dtype=dtype)
        return cls(k, torch.empty_like(k))

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store new k, v [B, h, T_new, d_h] after the filled positions; return all the keys and
        values so far, each [B, h, T_k, d_h] with T_k the new `filled`."""
        start = self.filled
        self.filled += k.shape[-2]
        self.k[:, :, start : self.filled] = k
        self.v[:, :, start : self.filled] = v
        return self.k[:, :, : self.filled], self.v[:, :, : self.filled]


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with a fused qkv projection (notebook 04): x [B, T, d]
    → qkv [B, T, 3d] → q, k, v [B, h, T, d_h] → attend → merge_heads → [B, T, d] → proj (W_O)
    → dropout → y [B, T, d]. `attend` runs torch's fused kernel or, with `fused=False`, the
    softmax written out: equal up to rounding, in two matmuls that torch's FLOP counter sees
    (notebook 09). GPT and Block take no `fused`: set `block.attn.fused = False` in each block,
    as `gptlib.lessons.shared.experiments.variants` does for attention="written-out"."""

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
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads  # d, h, d_h
        self.dropout_p, self.fused = dropout, fused  # dropout_p: on the weights, while training
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias)  # W_Q, W_K, W_V side by side
        self.proj = nn.Linear(d_model, d_model, bias=bias)  # W_O
        self.dropout = nn.Dropout(dropout)  # the same p, on the layer's output

    def split_heads(self, t: torch.Tensor) -> torch.Tensor:
        """[B, T, d] → [B, h, T, d_h]: view the last axis as (h, d_h), then move heads forward."""
        B, T, _ = t.shape
        return t.view(B, T, self.n_heads, self.d_head).transpose(1, 2)

    @staticmethod
    def merge_heads(t: torch.Tensor) -> torch.Tensor:
        """[B, h, T, d_h] → [B, T, d]: the inverse of `split_heads`."""
        B, h, T, d_h = t.shape
        return t.transpose(1, 2).reshape(B, T, h * d_h)

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """q [B, h, T_q, d_h], k and v [B, h, T_k, d_h] → [B, h, T_q, d_h]: the queries are the
        last T_q of T_k positions, each mixing the values up to its own (`causal_mask`)."""
        T_q, T_k = q.shape[-2], k.shape[-2]
        dropout_p = self.dropout_p if self.training else 0.0
        if not self.fused:  # the softmax written out, the mask made explicit
            mask = causal_mask(T_q, T_k=T_k, device=q.device)
            return attention_with_weights(q, k, v, mask=mask, dropout_p=dropout_p)[0]
        if T_q == T_k:  # no keys before the first query: the full triangle, the fast path
            return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=True)
        # KV cache: is_causal's triangle starts top-left, wrong after cached keys. One new query
        # (each step of `generate`) is the last position and sees every key; several need a mask.
        mask = None if T_q == 1 else causal_mask(T_q, T_k=T_k, device=q.device)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)

    def forward(self, x: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """x [B, T, d] → y [B, T, d]; with a `cache` (KV cache), x holds only the new positions."""
        qkv = self.qkv(x)  # [B, T, 3d]
        q, k, v = (self.split_heads(t) for t in qkv.split(self.d_model, dim=-1))  # [B, h, T, d_h]
        if cache is not None:  # KV cache
            k, v = cache.append(k, v)  # [B, h, T_k, d_h]: the cached positions, then these
        y = self.merge_heads(self.attend(q, k, v))  # [B, h, T, d_h] → [B, T, d]
        return self.dropout(self.proj(y))


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
        x = x + self.attn(self.ln1(x), cache)  # tokens exchange information (cache: KV cache)
        return x + self.mlp(self.ln2(x))  # each token computes on its own


# --- 3. The next token: temperature and top-k (notebooks 07-08) -------------------------------


def next_token_probs(
    logits: torch.Tensor, *, temperature: float = 1.0, top_k: int | None = None
) -> torch.Tensor:
    """Logits [B, V] → probabilities [B, V] after temperature and top-k (notebook 08): dividing
    by a temperature below 1 sharpens, above 1 flattens; top-k keeps the k likeliest and any
    tied with the k-th, as nanoGPT's does (k ≥ V keeps all); temperature 0 puts all the mass on
    the arg-max (`sample_next` takes the arg-max itself, without calling this)."""
    if temperature == 0:
        return F.one_hot(logits.argmax(-1), logits.shape[-1]).to(logits.dtype)
    # Shift the largest logit to 0 and leave it undivided: a temperature that is 0 in the logits'
    # dtype (below about 1e-45 in float32) then sends the others to −∞, never the largest to nan.
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
    """Logits [B, V] → ids [B, 1] drawn from `next_token_probs`; the arg-max at temperature 0."""
    if temperature == 0:  # nothing drawn from the generator
        return logits.argmax(-1, keepdim=True)
    probs = next_token_probs(logits, temperature=temperature, top_k=top_k)
    return torch.multinomial(probs, 1, generator=generator)


# --- 4. The GPT (notebooks 07-08) -------------------------------------------------------------

INITS = ("gpt2", "pytorch")  # GPT's starting weights: GPT-2's, or each torch module's default


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
    dropout: float = 0.0  # p of every dropout: embeddings, attention weights, layer outputs
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
    default) draws the weights as GPT-2 does: normal with std 0.02 (the embeddings' std is the
    `embedding_std` argument), biases 0, the projections that write into the residual stream
    scaled by 1/√(2L). init="pytorch" keeps each module's own default, as the chapter's code gets
    them (embeddings N(0, 1), Linear uniform within ±1/√fan_in)."""

    def __init__(
        self, config: GPTConfig, *, init: str = "gpt2", embedding_std: float = 0.02
    ) -> None:
        super().__init__()
        check_choice("init", init, INITS)
        self.config = config
        c = config
        self.tok_emb = nn.Embedding(c.vocab_size, c.d_model)  # E: [V, d]
        self.pos_emb = nn.Embedding(c.max_len, c.d_model)  # P: [max_len, d], learned positions
        self.dropout = nn.Dropout(c.dropout)  # on the embeddings' sum
        self.blocks = nn.ModuleList(
            Block(c.d_model, c.n_heads, bias=c.bias, dropout=c.dropout, gelu=c.gelu)
            for _ in range(c.n_layers)
        )
        self.ln_f = nn.LayerNorm(c.d_model, bias=c.bias)  # Pre-LN leaves the stream unnormalised
        # The unembedding W_U [d, V]: nn.Linear keeps it transposed, lm_head.weight is W_Uᵀ [V, d].
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        if init == "gpt2":
            for name, param in self.named_parameters():  # norms keep γ = 1, β = 0
                if name.endswith("bias"):
                    nn.init.zeros_(param)
                elif param.dim() == 2:
                    std = embedding_std if name in ("tok_emb.weight", "pos_emb.weight") else 0.02
                    if name.endswith(("attn.proj.weight", "mlp.down.weight")):  # into the stream
                        std /= math.sqrt(2 * c.n_layers)
                    nn.init.normal_(param, mean=0.0, std=std)
        if c.tie_weights:
            self.lm_head.weight = self.tok_emb.weight  # one [V, d] matrix: W_U = Eᵀ

    def num_parameters(self) -> int:
        """Number of distinct parameters, frozen ones included (a tied matrix counts once)."""
        return sum(p.numel() for p in self.parameters())

    def hidden_states(
        self, idx: torch.Tensor, *, start: int = 0, caches: list[KVCache] | None = None
    ) -> torch.Tensor:
        """idx [B, T] at positions start .. start + T − 1 → [B, T, d], the last block's output
        after ln_f: what `lm_head` reads. `caches` (KV cache): one per layer, already holding the
        `start` earlier positions. No checks: `forward` and `generate` check their input first."""
        positions = torch.arange(start, start + idx.shape[1], device=idx.device)  # [T]
        x = self.dropout(self.tok_emb(idx) + self.pos_emb(positions))  # [B, T, d]
        for i, block in enumerate(self.blocks):
            x = block(x, None if caches is None else caches[i])
        return self.ln_f(x)

    def forward(
        self, idx: torch.Tensor, targets: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """idx [B, T] → (logits [B, T, V], mean cross-entropy or None). targets [B, T]: the id
        after each position (the text shifted by one: the last target lies past idx), -1 to leave
        a position out of the loss (nanoGPT's convention). Ids of any integer dtype but bool."""
        check_token_ids(idx, self.config.vocab_size, max_len=self.config.max_len, targets=targets)
        logits = self.lm_head(self.hidden_states(idx.long()))  # [B, T, V]
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.flatten(0, 1), targets.long().flatten(), ignore_index=-1)
        return logits, loss

    def new_caches(self, batch_size: int) -> list[KVCache]:
        """KV cache: one empty `KVCache` per layer, with room for max_len positions."""
        c, weight = self.config, self.lm_head.weight  # the caches take the weights' device, dtype
        d_head = c.d_model // c.n_heads  # d_h
        shape = (batch_size, c.n_heads, c.max_len, d_head)  # [B, h, max_len, d_h]
        return [KVCache.empty(shape, device=weight.device, dtype=weight.dtype) for _ in self.blocks]

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
        top_k keeps the k likeliest. `use_cache` (KV cache) gives the same tokens faster while the
        text fits in max_len: the prompt goes through the blocks once, then each new token alone,
        each layer keeping its keys and values. Past max_len the window moves and every token in
        it gets a new position, so each new token costs a full pass over max_len tokens."""
        c = self.config
        check_token_ids(idx, c.vocab_size, read_values=True)
        check_sampling(temperature, top_k)
        check_positive_int("n_new", n_new, minimum=0)
        sampling = dict(temperature=temperature, top_k=top_k, generator=generator)
        tokens, caches, was_training = idx.long(), None, self.training
        self.eval()
        try:
            for _ in range(n_new):
                if use_cache and tokens.shape[1] <= c.max_len:  # KV cache: exact while it all fits
                    if caches is None:  # the first step: the whole prompt fills the caches
                        caches = self.new_caches(idx.shape[0])
                    seen = caches[0].filled  # 0 at first, then all but the newest token
                    h = self.hidden_states(tokens[:, seen:], start=seen, caches=caches)
                else:  # the chapter's crop: the last max_len tokens, all through the blocks
                    h = self.hidden_states(tokens[:, -c.max_len :])
                next_id = sample_next(self.lm_head(h[:, -1]), **sampling)  # [B, V] → [B, 1]
                tokens = torch.cat([tokens, next_id], dim=1)
        finally:
            self.train(was_training)
        return tokens
