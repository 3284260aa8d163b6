"""Exercises of notebook 07 (build the GPT): the student's attention and MLP (again, from
memory), `Block`, `GPT` (the capstone), `generate` and the KV cache."""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F
from torch import nn

from gptlib.lessons.engine.checks.core import (
    Exercise,
    Mistake,
    Property,
    register,
)
from gptlib.lessons.engine.checks.delegation import Route
from gptlib.lessons.nb04.checks import ATTENTION_MODULE_MISTAKES
from gptlib.lessons.nb05.checks import MLP_MISTAKES, mlp_inputs
from gptlib.lessons.nb05.harness import run_mlp
from gptlib.lessons.nb07.harness import (
    BUFFER_IN_STATE_DICT,
    GRADIENT_CUT,
    IN_PLACE,
    NOT_TIED,
    ONE_BLOCK_SHARED,
    OTHER_DEFAULTS,
    TIED_ALWAYS,
    Projections,
    forked_adapt,
    keeps_the_prompt,
    loss_is_a_number,
    own_random_stream,
    run_gpt,
    run_module,
    run_step_by_step,
)
from gptlib.lessons.shared.routes import BLOCK, MULTI_HEAD_LAYER
from gptlib.model import GPT as LibraryGPT
from gptlib.model import MLP as LibraryMLP
from gptlib.model import Block as LibraryBlock
from gptlib.model import CausalSelfAttention as LibraryAttention
from gptlib.model import GPTConfig

# === Notebook 07_build_the_gpt: every piece of the GPT, generate and the KV cache ============
#
# The student writes the attention, the MLP, `Block` and `GPT` as classes. The check builds
# them, loads the state dict of a gptlib model with random values far from any initialisation
# (so that every weight matters), and compares what they compute with gptlib's. Each
# catalogued mistake is a class (or function) that makes exactly that mistake.
#
# No late surprises: what the notebook later does with these classes, the checks do first.
# Section 8 moves weights between the student's model and gptlib's with a strict
# `load_state_dict`, and section 10 trains the model, so the checks load strictly (a buffer in
# the state dict is a named mistake), run a backward pass, and compare every parameter's
# gradient with gptlib's; the capstone is also built with its default sizes, the chapter's,
# as section 8 builds it. A check leaves torch's global random stream as it found it, so that
# the notebook's next random draws do not depend on what the checks build.


def _lively(module: nn.Module, g: torch.Generator) -> nn.Module:
    """Give every parameter of `module` random values: matrices N(0, 1/fan_in) (embedding
    tables N(0, 1)), LayerNorm scales near 1, biases and shifts of order 0.2. In evaluation
    mode."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if p.dim() == 2:
                std = 1.0 if "emb" in name else p.shape[1] ** -0.5
                p.copy_(std * torch.randn(p.shape, generator=g))
            elif name.endswith("weight"):  # a LayerNorm's γ
                p.copy_(1.0 + 0.3 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.2 * torch.randn(p.shape, generator=g))
    return module.eval()


class _Attention(LibraryAttention):
    """gptlib's attention with the softmax written out, built as the student's is:
    (d_model, n_heads). The catalogue's attentions below change it."""

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__(d_model, n_heads, fused=False)


# --- the attention and the MLP, written again from memory (notebooks 04 and 05) ---------------
# 04's and 05's catalogues of mistakes, under 07's names so that 07's report counts them.
# The attention is run as the capstone will run it: loaded strictly, with gradients.


class _BufferedAttention(_Attention):
    """The right computation, with its mask kept in the state dict (a persistent buffer)."""

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__(d_model, n_heads)
        self.register_buffer("mask", torch.ones(256, 256, dtype=torch.bool).triu(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, d = x.shape
        q, k, v = (
            t.view(B, T, self.n_heads, self.d_head).transpose(1, 2)
            for t in self.qkv(x).split(d, dim=-1)
        )
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
        return self.proj((scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, T, d))


class _DetachedAttention(_Attention):
    """The right numbers from weights read without gradient tracking."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return super().forward(x)


def _attention_inputs(g: torch.Generator) -> list[tuple]:
    """(d_model, n_heads, a gptlib attention layer with lively weights, x [B, T, d]). The last
    input is 40 positions long: a mask stored at a fixed small size breaks."""
    cases = []
    for B, T, d, h in ((2, 5, 12, 3), (1, 6, 8, 4), (1, 40, 16, 2)):
        source = _lively(LibraryAttention(d, h), g)
        cases.append((d, h, source, torch.randn(B, T, d, generator=g)))
    return cases


register(
    Exercise(
        name="gpt-attention",
        notebook="07_build_the_gpt",
        reference=LibraryAttention,
        forbidden=MULTI_HEAD_LAYER,
        make_inputs=own_random_stream(_attention_inputs),
        adapt=forked_adapt(functools.partial(run_module, "gpt-attention")),
        mistakes=(
            *ATTENTION_MODULE_MISTAKES,
            Mistake(*BUFFER_IN_STATE_DICT[:2], _BufferedAttention, fix=BUFFER_IN_STATE_DICT[2]),
            Mistake(*GRADIENT_CUT[:2], _DetachedAttention, fix=GRADIENT_CUT[2]),
        ),
        hints=(
            "The layer holds two linear maps, one making queries, keys and values together and "
            "one mixing the heads' results. In between, each head attends on its own slice of "
            "the features, and no position may read a later one.",
            "Cut the fused output into queries, keys and values (d wide each); give each head its "
            "d_h features with the token axis kept separate from the head axis; scale by √d_h; "
            "block the later keys before the softmax over the keys; put the heads side by side "
            "again before the output map.",
        ),
    )
)

register(
    Exercise(
        name="gpt-mlp",
        notebook="07_build_the_gpt",
        reference=LibraryMLP,
        make_inputs=own_random_stream(mlp_inputs),
        adapt=forked_adapt(functools.partial(run_mlp, exercise="gpt-mlp")),
        mistakes=MLP_MISTAKES,
        hints=(
            "Two linear layers with a nonlinearity between them: widen each position's vector, "
            "bend it, narrow it back to d_model.",
            "The widening is by a factor of four; the bend is the exact GELU; both layers keep "
            "their biases and are named as the table says.",
        ),
    )
)


class Block(nn.Module):
    """The reference block: Pre-LN, x + attn(ln1(x)), then x + mlp(ln2(x)). [B, T, d] → same."""

    attention, feed_forward = _Attention, LibraryMLP  # the catalogue's blocks swap these

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = self.attention(d_model, n_heads)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = self.feed_forward(d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))  # tokens read earlier tokens
        return x + self.mlp(self.ln2(x))  # each token on its own


class _PostLNBlock(Block):
    def forward(self, x):
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.mlp(x))


class _NoAttentionResidualBlock(Block):
    def forward(self, x):
        x = self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class _NoMLPResidualBlock(Block):
    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return self.mlp(self.ln2(x))


class _NormOnOutputBlock(Block):
    def forward(self, x):
        x = x + self.ln1(self.attn(x))
        return x + self.ln2(self.mlp(x))


class _OneNormBlock(Block):
    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln1(x))


class _InPlaceBlock(Block):
    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x += self.mlp(self.ln2(x))  # ln2 kept x for its backward pass
        return x


def _block_with(attention: type = _Attention, feed_forward: type = LibraryMLP) -> type:
    """The reference block around another attention or MLP: a mistake inside one of them."""
    name = f"BlockWith{attention.__name__}{feed_forward.__name__}"
    return type(name, (Block,), {"attention": attention, "feed_forward": feed_forward})


POST_LN = (
    "post-ln",
    "your block normalises after adding: that is Post-LN, the original Transformer's "
    "placement. The chapter's GPT is Pre-LN: each sublayer reads a normalised copy of the "
    "stream, and its output is added to the stream as it was, never normalised inside the block.",
    "x = x + self.attn(self.ln1(x)), then x = x + self.mlp(self.ln2(x))",
)
NO_ATTENTION_RESIDUAL = (
    "no-residual-around-attention",
    "the attention's output replaces the residual stream instead of being added to it. "
    "Without the skip, what the embeddings carried is lost and gradients have no direct path "
    "back (notebook 05).",
    "x = x + self.attn(self.ln1(x))",
)
NO_MLP_RESIDUAL = (
    "no-residual-around-mlp",
    "the MLP's output replaces the residual stream instead of being added to it: the block "
    "must return the stream plus the MLP's update.",
    "x = x + self.mlp(self.ln2(x))",
)
# The MLP mistakes whose parameters differ from gptlib's (no biases, a hidden width of d) show
# as a misfit when the weights are loaded, which names them; the others are caught by value.
_MLP_MISTAKES_BY_VALUE = tuple(
    m for m in MLP_MISTAKES if m.name not in ("hidden-width-d", "no-biases")
)
BLOCK_MISTAKES = (
    Mistake(*POST_LN[:2], _PostLNBlock, fix=POST_LN[2]),
    Mistake(*NO_ATTENTION_RESIDUAL[:2], _NoAttentionResidualBlock, fix=NO_ATTENTION_RESIDUAL[2]),
    Mistake(*NO_MLP_RESIDUAL[:2], _NoMLPResidualBlock, fix=NO_MLP_RESIDUAL[2]),
    *(
        Mistake(
            m.name,
            f"in your attention, {m.message}",
            _block_with(attention=m.implementation),
            fix=m.fix,
        )
        for m in ATTENTION_MODULE_MISTAKES
    ),
    *(
        Mistake(
            m.name,
            f"in your MLP, {m.message}",
            _block_with(feed_forward=m.implementation),
            fix=m.fix,
        )
        for m in _MLP_MISTAKES_BY_VALUE
    ),
    Mistake(
        *BUFFER_IN_STATE_DICT[:2],
        _block_with(attention=_BufferedAttention),
        fix=BUFFER_IN_STATE_DICT[2],
    ),
    Mistake(*IN_PLACE[:2], _InPlaceBlock, fix=IN_PLACE[2]),
    Mistake(*GRADIENT_CUT[:2], _block_with(attention=_DetachedAttention), fix=GRADIENT_CUT[2]),
)


def _block_inputs(g: torch.Generator) -> list[tuple]:
    """(d_model, n_heads, a gptlib Block with lively weights, x [B, T, d])."""
    cases = []
    for B, T, d, h in ((2, 7, 16, 4), (1, 9, 24, 3)):
        source = _lively(LibraryBlock(d, h), g)
        cases.append((d, h, source, torch.randn(B, T, d, generator=g)))
    return cases


register(
    Exercise(
        name="gpt-block",
        notebook="07_build_the_gpt",
        reference=Block,
        forbidden=BLOCK,
        make_inputs=own_random_stream(_block_inputs),
        adapt=forked_adapt(functools.partial(run_module, "gpt-block")),
        mistakes=(
            *BLOCK_MISTAKES,
            Mistake(
                "norm-on-the-output",
                "your LayerNorms normalise what the sublayers return. Pre-LN normalises what "
                "they read: the input of each sublayer, while the stream itself stays as it is.",
                _NormOnOutputBlock,
                fix="x = x + self.attn(self.ln1(x))",
            ),
            Mistake(
                "one-norm-twice",
                "both sublayers read the first LayerNorm's output: the MLP needs a LayerNorm of "
                "its own, with its own scale and shift, applied to the stream after the "
                "attention's update.",
                _OneNormBlock,
                fix="x = x + self.mlp(self.ln2(x))",
            ),
        ),
        atol=1e-4,
        rtol=1e-4,
        hints=(
            "A Pre-LN block is two residual steps, attention then MLP; each sublayer reads a "
            "normalised copy of the stream, with its own LayerNorm.",
            "Attention reads the first norm's output and the MLP the second's; the sums stay "
            "unnormalised inside the block, and the block returns the stream after both steps.",
        ),
    )
)


class GPT(nn.Module):
    """The reference model: embeddings, Pre-LN blocks, final LayerNorm, unembedding.

    idx [B, T] → (logits [B, T, V], mean cross-entropy against targets [B, T], or None).
    """

    block = Block  # the catalogue's models swap this

    def __init__(
        self,
        vocab_size: int,
        d_model: int = 128,
        n_heads: int = 4,
        n_layers: int = 4,
        max_len: int = 256,
        tie_weights: bool = False,
    ) -> None:
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(self.block(d_model, n_heads) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        if tie_weights:
            self.lm_head.weight = self.tok_emb.weight

    def forward(
        self, idx: torch.Tensor, targets: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.tok_emb(idx) + self.pos_emb(positions)  # [B, T, d]
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))  # [B, T, V]
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def _with_block(block_class: type) -> type:
    """The reference GPT built from another block: a block-level mistake, seen from the GPT."""
    return type(f"GPTWith{block_class.__name__}", (GPT,), {"block": block_class})


def _mean_loss(logits: torch.Tensor, targets: torch.Tensor | None) -> torch.Tensor | None:
    return None if targets is None else F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def _positions(idx: torch.Tensor) -> torch.Tensor:
    return torch.arange(idx.shape[1], device=idx.device)


class _NoFinalNormGPT(GPT):
    def forward(self, idx, targets=None):
        x = self.tok_emb(idx) + self.pos_emb(_positions(idx))
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(x)
        return logits, _mean_loss(logits, targets)


class _NoPositionsGPT(GPT):
    def forward(self, idx, targets=None):
        x = self.tok_emb(idx)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return logits, _mean_loss(logits, targets)


class _PositionsAfterBlocksGPT(GPT):
    def forward(self, idx, targets=None):
        x = self.tok_emb(idx)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x + self.pos_emb(_positions(idx))))
        return logits, _mean_loss(logits, targets)


class _LossAgainstInputsGPT(GPT):
    def forward(self, idx, targets=None):
        logits, _ = super().forward(idx)
        return logits, _mean_loss(logits, None if targets is None else idx)


class _ShiftedTwiceGPT(GPT):
    def forward(self, idx, targets=None):
        logits, _ = super().forward(idx)
        return logits, _mean_loss(logits[:, :-1], None if targets is None else targets[:, 1:])


class _NeverTiedGPT(GPT):
    def __init__(self, vocab_size, d_model=128, n_heads=4, n_layers=4, max_len=256,
                 tie_weights=False):  # fmt: skip
        super().__init__(vocab_size, d_model, n_heads, n_layers, max_len, tie_weights=False)


class _AlwaysTiedGPT(GPT):
    def __init__(self, vocab_size, d_model=128, n_heads=4, n_layers=4, max_len=256,
                 tie_weights=False):  # fmt: skip
        super().__init__(vocab_size, d_model, n_heads, n_layers, max_len, tie_weights=True)


class _SharedBlockGPT(GPT):
    def __init__(self, vocab_size, d_model=128, n_heads=4, n_layers=4, max_len=256,
                 tie_weights=False):  # fmt: skip
        super().__init__(vocab_size, d_model, n_heads, n_layers, max_len, tie_weights)
        self.blocks = nn.ModuleList([self.block(d_model, n_heads)] * n_layers)


class _OtherDefaultsGPT(GPT):
    def __init__(self, vocab_size, d_model=64, n_heads=4, n_layers=4, max_len=256,
                 tie_weights=False):  # fmt: skip
        super().__init__(vocab_size, d_model, n_heads, n_layers, max_len, tie_weights)


class _LossOnProbabilitiesGPT(GPT):
    def forward(self, idx, targets=None):
        logits, _ = super().forward(idx)
        probs = logits.softmax(dim=-1)
        return logits, _mean_loss(probs, targets)


class _SummedLossGPT(GPT):
    def forward(self, idx, targets=None):
        logits, loss = super().forward(idx, targets)
        return logits, None if loss is None else loss * targets.numel()


def _gpt_inputs(g: torch.Generator) -> list[tuple]:
    """(config, a gptlib GPT of that config with lively weights, idx [B, T], targets or None).

    The first model is untied and reads fewer positions than it knows; the second is tied and
    reads all of them; the third call passes no targets; the last gives only the vocabulary
    size, as section 8 builds the model (the defaults must be the chapter's sizes), and fills
    its 256 positions."""
    cases = []
    for config, (B, T), with_targets in (
        (dict(vocab_size=11, d_model=16, n_heads=4, n_layers=2, max_len=12), (2, 9), True),
        (dict(vocab_size=13, d_model=24, n_heads=3, n_layers=3, max_len=8, tie_weights=True),
         (3, 8), True),
        (dict(vocab_size=7, d_model=8, n_heads=2, n_layers=1, max_len=6), (1, 5), False),
        (dict(vocab_size=9), (1, 256), True),
    ):  # fmt: skip
        source = _lively(LibraryGPT(GPTConfig(**config)), g)
        idx = torch.randint(config["vocab_size"], (B, T), generator=g)
        targets = torch.randint(config["vocab_size"], (B, T), generator=g)
        cases.append((config, source, idx, targets if with_targets else None))
    return cases


def _gpt_mistake(mistake: tuple[str, ...], implementation: type) -> Mistake:
    return Mistake(*mistake[:2], implementation, fix=mistake[2])


register(
    Exercise(
        name="gpt",
        notebook="07_build_the_gpt",
        reference=GPT,
        forbidden=(
            Route(
                "gptlib.model:GPT",
                "gptlib's `GPT`",
                "it is the model this exercise asks you to write.",
            ),
        ),
        make_inputs=own_random_stream(_gpt_inputs),
        adapt=forked_adapt(run_gpt),
        properties=(Property("the loss is one number", loss_is_a_number),),
        returns=("logits", "loss"),
        mistakes=(
            Mistake(
                "no-final-layernorm",
                "the logits come straight from the last block. A Pre-LN stack never normalises "
                "the residual stream itself, so it needs one more LayerNorm, the final one, "
                "between the last block and the unembedding.",
                _NoFinalNormGPT,
                fix="logits = self.lm_head(self.ln_f(x))",
            ),
            Mistake(
                "positions-not-added",
                "the position vectors are never added, so the model cannot tell where a token "
                "stands: each token's vector must be its row of the token table plus the row "
                "of the position table for where it stands.",
                _NoPositionsGPT,
                fix="x = self.tok_emb(idx) + self.pos_emb(torch.arange(T, device=idx.device))",
            ),
            Mistake(
                "positions-added-after-the-blocks",
                "you add the position vectors after the blocks, where attention can no longer "
                "use them. They belong with the token vectors, before the first block.",
                _PositionsAfterBlocksGPT,
                fix="x = self.tok_emb(idx) + self.pos_emb(torch.arange(T, device=idx.device)), "
                "then the blocks",
            ),
            Mistake(
                "loss-against-the-inputs",
                "the loss compares the logits with the tokens the model reads. Each position "
                "must be scored against the token that follows it, which is what targets holds.",
                _LossAgainstInputsGPT,
                fix="F.cross_entropy(logits.flatten(0, 1), targets.flatten())",
            ),
            Mistake(
                "targets-shifted-twice",
                "the targets arrive already shifted by one (the target at position t is the "
                "token after position t); shifting them again inside forward scores each "
                "position against the token two ahead. Score all B·T logits against all B·T "
                "targets as they come.",
                _ShiftedTwiceGPT,
                fix="F.cross_entropy(logits.flatten(0, 1), targets.flatten())",
            ),
            Mistake(
                "loss-on-probabilities",
                "the loss was computed from probabilities. Cross-entropy in PyTorch takes "
                "logits and applies the log-softmax itself, so a softmax before it squeezes "
                "every input into [0, 1] and the loss can barely move. Hand it the logits.",
                _LossOnProbabilitiesGPT,
                fix="F.cross_entropy(logits.flatten(0, 1), targets.flatten()), with no softmax",
            ),
            Mistake(
                "loss-summed",
                "your loss is the sum over all B·T predictions, not their mean: it grows with "
                "the batch and the window, and so does every gradient. The chapter's loss (and "
                "the number the notebooks compare with ln V) is the mean.",
                _SummedLossGPT,
                fix="F.cross_entropy's default reduction, the mean",
            ),
            _gpt_mistake(NOT_TIED, _NeverTiedGPT),
            _gpt_mistake(TIED_ALWAYS, _AlwaysTiedGPT),
            _gpt_mistake(ONE_BLOCK_SHARED, _SharedBlockGPT),
            _gpt_mistake(OTHER_DEFAULTS, _OtherDefaultsGPT),
            *(
                Mistake(m.name, m.message, _with_block(m.implementation), fix=m.fix)
                for m in BLOCK_MISTAKES
            ),
        ),  # fmt: skip
        atol=1e-4,
        rtol=1e-4,
        hints=(
            "forward has four stages: embed (token rows plus position rows), every block in "
            "order, the final LayerNorm, and the unembedding to one logit per vocabulary entry; "
            "with targets it also returns the mean cross-entropy.",
            "The positions of an input of length T are 0 … T − 1; cross-entropy compares [B·T, "
            "V] logits with [B·T] targets, so flatten the batch and time axes of both. Without "
            "targets the loss is None.",
        ),
    )
)


# --- generate: crop to the last max_len tokens, temperature, top-k ---------------------------


def _generate(
    model: nn.Module,
    idx: torch.Tensor,
    n_new: int,
    max_len: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    generator: torch.Generator | None = None,
    window: str = "last",
    position: int = -1,
    temperature_on: str = "logits",
    top_k_rule: str = "largest",
) -> torch.Tensor:
    """The reference with the defaults: idx [B, T] → [B, T + n_new]. Each keyword after
    `generator` reproduces one catalogued mistake."""
    with torch.no_grad():
        for _ in range(n_new):
            context = {"last": idx[:, -max_len:], "first": idx[:, :max_len], "all": idx}[window]
            logits = model(context)[0][:, position]  # [B, V]
            if temperature_on == "logits":
                logits = logits / temperature
            elif temperature_on == "logits, multiplied":
                logits = logits * temperature
            if top_k is not None:
                logits = _top_k(logits, top_k, top_k_rule)
            probs = torch.softmax(logits, dim=-1)
            if temperature_on == "probabilities":
                probs = probs / temperature
            if temperature_on == "none: arg-max":
                next_id = probs.argmax(dim=-1, keepdim=True)
            else:
                next_id = torch.multinomial(probs, 1, generator=generator)
            idx = torch.cat([idx, next_id], dim=1)
    return idx


def _top_k(logits: torch.Tensor, k: int, rule: str) -> torch.Tensor:
    if rule == "smallest":
        kth = torch.topk(logits, k, dim=-1, largest=False).values[:, -1:]
        return logits.masked_fill(logits > kth, float("-inf"))
    kept = k + 1 if rule == "k + 1" else k
    kth = torch.topk(logits, min(kept, logits.shape[-1]), dim=-1).values[:, -1:]
    return logits.masked_fill(logits < kth, 0.0 if rule == "zero" else float("-inf"))


def _generate_inputs(g: torch.Generator) -> list[tuple]:
    """A gptlib model that knows 6 positions, with lively weights, and prompts whose generation
    runs past them: greedy (top_k = 1), a low temperature, a high one with top-k = 3. Each
    call gets its own seeded generator."""
    model = _lively(
        LibraryGPT(GPTConfig(vocab_size=10, d_model=16, n_heads=2, n_layers=2, max_len=6)),
        g,
    )
    cases = []
    for (B, T), n_new, temperature, top_k, seed in (
        ((2, 4), 6, 1.0, 1, 11),
        ((2, 3), 7, 0.5, None, 12),
        ((1, 5), 6, 2.0, 3, 13),
        ((3, 2), 8, 1.0, 4, 14),
    ):
        idx = torch.randint(10, (B, T), generator=g)
        generator = torch.Generator().manual_seed(seed)
        cases.append((model, idx, n_new, 6, temperature, top_k, generator))
    return cases


register(
    Exercise(
        name="generate",
        notebook="07_build_the_gpt",
        reference=_generate,
        forbidden=(
            Route(
                "gptlib.model:GPT.generate",
                "the model's own `generate`",
                "it is the loop this exercise asks you to write.",
            ),
            Route(
                "gptlib.model:next_token_probs",
                "gptlib's `next_token_probs`",
                "it does steps of the loop this exercise asks you to write.",
            ),
            Route(
                "gptlib.model:sample_next",
                "gptlib's `sample_next`",
                "it does steps of the loop this exercise asks you to write.",
            ),
        ),
        make_inputs=own_random_stream(_generate_inputs),
        properties=(Property("starts with the prompt", keeps_the_prompt),),
        mistakes=(
            Mistake(
                "no-crop",
                "the model was given the whole sequence: once it grows past max_len tokens the "
                "model has no position vector for the extra ones and fails. It can only ever "
                "read the most recent max_len tokens.",
                functools.partial(_generate, window="all"),
                fix="logits, _ = model(idx[:, -max_len:])",
            ),
            Mistake(
                "cropped-to-the-first-tokens",
                "you kept the oldest max_len tokens: once the text is longer, the model keeps "
                "reading the same old window and never sees what it just wrote. Keep the most "
                "recent ones.",
                functools.partial(_generate, window="first"),
                fix="logits, _ = model(idx[:, -max_len:])",
            ),
            Mistake(
                "first-position-logits",
                "the next token comes from the logits at the first position, which predict the "
                "second token of the window. The prediction for the token after the text sits "
                "at the last position.",
                functools.partial(_generate, position=0),
                fix="logits = logits[:, -1] / temperature",
            ),
            Mistake(
                "temperature-after-softmax",
                "the temperature had no effect: dividing the probabilities by it only rescales "
                "them, and drawing from a rescaled distribution draws the same way. The "
                "temperature divides the logits, before the softmax.",
                functools.partial(_generate, temperature_on="probabilities"),
                fix="logits = logits[:, -1] / temperature, then probs = torch.softmax(logits, "
                "dim=-1)",
            ),
            Mistake(
                "temperature-multiplied",
                "the logits were multiplied by the temperature: that sharpens the distribution "
                "above 1 and flattens it below 1, the opposite of what a temperature means.",
                functools.partial(_generate, temperature_on="logits, multiplied"),
                fix="logits = logits[:, -1] / temperature",
            ),
            Mistake(
                "always-arg-max",
                "you always took the most likely token, so temperature, top-k and the "
                "generator change nothing. Generation draws from the distribution, with the "
                "generator you are given.",
                functools.partial(_generate, temperature_on="none: arg-max"),
                fix="next_id = torch.multinomial(probs, 1, generator=generator)",
            ),
            Mistake(
                "top-k-keeps-k-plus-one",
                "one token too many survives the top-k cut: keep exactly the logits at least "
                "as large as the k-th largest of the row.",
                functools.partial(_generate, top_k_rule="k + 1"),
                fix="kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]",
            ),
            Mistake(
                "top-k-keeps-the-smallest",
                "you kept the k smallest logits, the least likely tokens. Top-k keeps the k "
                "largest.",
                functools.partial(_generate, top_k_rule="smallest"),
                fix="torch.topk(logits, top_k, dim=-1) with its default largest=True",
            ),
            Mistake(
                "top-k-masked-with-zero",
                "the dropped logits were set to 0, not minus infinity, so those tokens keep a "
                "probability of e⁰ divided by the sum: they can still be drawn.",
                functools.partial(_generate, top_k_rule="zero"),
                fix='logits.masked_fill(logits < kth, float("-inf"))',
            ),
        ),
        hints=(
            "One token at a time: run the model on what it can read, take the logits of the "
            "last position only, turn them into probabilities, draw one id, append it, and "
            "repeat.",
            "Feed at most the last max_len ids; divide the logits by the temperature before the "
            "softmax, keep only the k largest when top_k is given, and draw with "
            "torch.multinomial and the generator you were passed, so that the check can repeat "
            "your draws.",
        ),
    )
)

# --- the KV cache: one new position attends to the keys and values kept from before -----------


def _attend_with_cache(
    attn: nn.Module,
    x: torch.Tensor,
    cache: tuple[torch.Tensor, torch.Tensor] | None,
    n_heads: int,
    keep: str = "all",
    reads: str = "cache and itself",
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    """The reference with the defaults. x [B, 1, d], the newest position's input to the layer
    `attn` (its `qkv` and `proj`); cache None or (keys, values) [B, h, t, d_h] of the positions
    before it → (y [B, 1, d], (keys, values) [B, h, t + 1, d_h]). Each keyword after `n_heads`
    reproduces one catalogued mistake."""
    B, T, d = x.shape
    q, k, v = (
        t.view(B, T, n_heads, d // n_heads).transpose(1, 2) for t in attn.qkv(x).split(d, dim=-1)
    )
    new = (k, v)
    if cache is not None:
        k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
    read_k, read_v = cache if reads == "cache only" and cache is not None else (k, v)
    scores = q @ read_k.transpose(-2, -1) / math.sqrt(d // n_heads)  # [B, h, 1, t + 1]
    if reads == "square mask":
        blocked = torch.ones(T, read_k.shape[2], dtype=torch.bool).triu(1)
        scores = scores.masked_fill(blocked, float("-inf"))
    y = attn.proj((scores.softmax(dim=-1) @ read_v).transpose(1, 2).reshape(B, T, d))
    return y, (new if keep == "newest" else (k, v))


def _kv_cache_inputs(g: torch.Generator) -> list[tuple]:
    """(the qkv and proj maps of a gptlib attention layer with lively weights, x [B, T, d],
    n_heads): the check feeds x one position at a time."""
    cases = []
    for B, T, d, h in ((2, 6, 16, 4), (1, 9, 12, 3)):
        attn = Projections(_lively(LibraryAttention(d, h), g))
        cases.append((attn, torch.randn(B, T, d, generator=g), h))
    return cases


register(
    Exercise(
        name="kv-cache",
        notebook="07_build_the_gpt",
        reference=_attend_with_cache,
        forbidden=(
            Route(
                "gptlib.model:KVCache",
                "gptlib's `KVCache`",
                "it is the cache this exercise asks you to keep yourself.",
            ),
            Route(
                "gptlib.model:CausalSelfAttention",
                "gptlib's `CausalSelfAttention`",
                (
                    "its cached step is what this exercise asks you to write, from the layer's "
                    "`qkv` and `proj` alone."
                ),
            ),
        ),
        make_inputs=own_random_stream(_kv_cache_inputs),
        adapt=forked_adapt(run_step_by_step),
        returns=("outputs", "keys", "values"),
        mistakes=(
            Mistake(
                "cache-keeps-only-the-newest",
                "the cache you pass on holds only the newest position's key and value, so each "
                "step reads itself and the one before it, not the whole past. The cache must "
                "grow: the old keys and values with the new ones appended along the positions' "
                "axis.",
                functools.partial(_attend_with_cache, keep="newest"),
                fix="return y, (k, v) with k = torch.cat([cache[0], k], dim=2) (and v alike)",
            ),
            Mistake(
                "new-position-not-read",
                "the new position attends to the cached keys but not to its own: it must read "
                "itself too, as every position does under the causal mask. Append its key and "
                "value to the cache first, then attend.",
                functools.partial(_attend_with_cache, reads="cache only"),
                fix="k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2) "
                "before the scores",
            ),
            Mistake(
                "square-mask-on-one-query",
                "you applied a causal mask made for a square score matrix. With one query and "
                "t + 1 keys, cutting above the diagonal leaves the query only the first key. The "
                "newest position comes after every cached one, so it may read all of them.",
                functools.partial(_attend_with_cache, reads="square mask"),
                fix="no mask: scores = q @ k.transpose(-2, -1) / math.sqrt(d_h), then softmax",
            ),
        ),
        atol=1e-5,
        rtol=1e-4,
        hints=(
            "The new position is the last one, so causality allows it every key there is: the "
            "cached ones and its own. Its query, key and value come from the layer's fused map; "
            "the cache grows by one position per call.",
            "Split the new query, key and value into heads as in the full layer, join the cached "
            "keys and values with the new ones along the positions' axis (dim 2 of [B, h, t, "
            "d_h]), attend with the scaled scores and no mask, merge the heads, project, and "
            "return the output with the grown pair.",
        ),
    )
)
