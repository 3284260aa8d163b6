"""Exercises of notebook 07 (build the GPT): the student's attention and MLP (again, from
memory), `Block`, `GPT` (the capstone), `generate` and the KV cache."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from gptlib.lessons.engine.checks.compare import outputs_match
from gptlib.lessons.engine.checks.core import (
    CheckError,
    Exercise,
    Mistake,
    Property,
    exercise_named,
    mistake_error,
    register,
)
from gptlib.lessons.engine.checks.delegation import Route, unwatched
from gptlib.lessons.engine.checks.weights import load_weights, unexpected_buffers
from gptlib.lessons.nb04.checks import ATTENTION_MODULE_MISTAKES
from gptlib.lessons.nb05.checks import MLP_MISTAKES, mlp_inputs, run_mlp
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


# --- what later cells do with a module: a strict load, a forward and a backward pass -------


def own_random_stream(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` run on a fork of torch's global random stream: building the check's models and the
    student's leaves the notebook's next random draws as they were."""

    @functools.wraps(fn)
    def forked(*args: Any, **kwargs: Any) -> Any:
        with torch.random.fork_rng(devices=[]):
            return fn(*args, **kwargs)

    return forked


def _forked(adapt: Callable[[Any], Callable[..., Any]], answer: Any) -> Callable[..., Any]:
    return own_random_stream(adapt(answer))


def forked_adapt(adapt: Callable[[Any], Callable[..., Any]]) -> Callable[[Any], Callable]:
    """An `adapt` whose adapted functions run on a fork of the global random stream."""
    return functools.partial(_forked, adapt)


BUFFER_IN_STATE_DICT = (
    "buffer-in-the-state-dict",
    "your module keeps a tensor that is not a weight (a mask, say) in its state dict. "
    "gptlib's state dict holds weights only, and section 8 moves weights between your model "
    "and gptlib's with a strict load, which refuses any name that only one side has. A tensor "
    "that can be rebuilt belongs outside the state dict, or can be made anew in forward.",
)


IN_PLACE = (
    "in-place-on-a-saved-tensor",
    "your forward pass changes, in place, a tensor that autograd kept for the backward pass "
    "(an augmented assignment such as +=, or a method whose name ends in an underscore). The "
    "numbers come out right, but training's backward pass (section 10) stops with an error. "
    "Make a new tensor for each result instead of changing one.",
)


GRADIENT_CUT = (
    "gradient-cut",
    "your model computes the right numbers, but part of it is cut off from the gradient: it "
    "runs without gradient tracking, or works on a detached copy of a tensor or of a weight. "
    "The parameters behind that cut get no gradient (or a wrong one), so training would leave "
    "them as they are.",
)

# The lines that mend the structural mistakes above, shown from the second time they are made:
# only the catalogues' Mistakes name them, so a graded release does not ship them.
BUFFER_IN_STATE_DICT_FIX = (
    'register it as a non-persistent buffer: self.register_buffer("mask", mask, '
    "persistent=False), or build the mask inside forward"
)
IN_PLACE_FIX = (
    "write x = x + self.attn(self.ln1(x)) rather than x += self.attn(self.ln1(x)) (and "
    "masked_fill rather than masked_fill_ on a tensor the gradient needs)"
)
GRADIENT_CUT_FIX = "remove torch.no_grad(), .detach() and .data from forward"


def _cosine_weights(t: torch.Tensor) -> torch.Tensor:
    """Fixed, varied weights shaped like `t`: their weighted sum of `t` is a scalar whose
    gradient reaches every output entry differently."""
    return torch.cos(torch.arange(t.numel(), dtype=torch.float64)).to(t.dtype).view_as(t)


def _scalar(outputs: Any) -> torch.Tensor:
    """What the backward pass differentiates: the loss when there is one, else a fixed
    weighted sum of the (first) output."""
    if isinstance(outputs, tuple):
        if len(outputs) > 1 and isinstance(outputs[1], torch.Tensor):
            return outputs[1]
        outputs = outputs[0]
    return (outputs * _cosine_weights(outputs)).sum()


def _gradients(module: nn.Module) -> dict[str, torch.Tensor | None]:
    """Every parameter's gradient by name (a shared parameter under each of its names)."""
    return {name: p.grad for name, p in module.named_parameters(remove_duplicate=False)}


def _report(exercise: str, mistake: tuple[str, ...]) -> CheckError:
    """The error naming `mistake`: the catalogue's report of it (its fix from the second time),
    or the adapter's own message where the exercise does not catalogue it."""
    for m in exercise_named(exercise).mistakes:
        if m.name == mistake[0]:
            return mistake_error(exercise_named(exercise), m)
    return CheckError(exercise, mistake[1], mistake[0])


def _load_strictly(exercise: str, model: nn.Module, source: nn.Module) -> None:
    """Load gptlib's state dict into the student's module strictly, as section 8 does: a buffer
    only the student's state dict holds is the named mistake; a misfit says which names and
    shapes differ."""
    state = source.state_dict()
    if unexpected_buffers(model, state):
        raise _report(exercise, BUFFER_IN_STATE_DICT)
    try:
        load_weights(model, state, strict=True)
    except ValueError as exc:
        raise CheckError(exercise, str(exc)) from None


def run_like_gptlib(exercise: str, model: nn.Module, source: nn.Module, *args: Any) -> Any:
    """`model`, built from the student's answer, with the weights of gptlib's `source`, run
    on `args` as the notebook runs it: loaded strictly, with gradients, and when its outputs
    agree with gptlib's, a backward pass whose gradients must agree too. Returns the outputs,
    detached."""
    _load_strictly(exercise, model, source)
    model.eval()
    limits = exercise_named(exercise)
    with torch.enable_grad():
        got = model(*args)
        with unwatched():  # gptlib's model beside the student's: not the student's call
            expected = source(*args)
        if not outputs_match(got, expected, limits.atol, limits.rtol):
            return _detached(got)
        model.zero_grad(set_to_none=True)
        source.zero_grad(set_to_none=True)
        ours = _scalar(got)
        if not ours.requires_grad:
            raise _report(exercise, GRADIENT_CUT)
        try:
            ours.backward()
        except RuntimeError as exc:
            if "inplace operation" in str(exc):
                raise _report(exercise, IN_PLACE) from None
            raise CheckError(exercise, f"the backward pass through yours failed: {exc}") from None
        with unwatched():
            _scalar(expected).backward()
    theirs = _gradients(source)
    for name, grad in _gradients(model).items():
        if grad is None or not _close(grad, theirs[name]):
            raise _report(exercise, GRADIENT_CUT)
    return _detached(got)


def _close(grad: torch.Tensor, expected: torch.Tensor) -> bool:
    scale = 1.0 + expected.abs().max().item()
    return torch.allclose(grad.double(), expected.double(), rtol=1e-3, atol=1e-4 * scale)


def _detached(outputs: Any) -> Any:
    if isinstance(outputs, tuple | list):
        return tuple(_detached(o) for o in outputs)
    return outputs.detach() if isinstance(outputs, torch.Tensor) else outputs


def run_module(exercise: str, module_class: Any) -> Callable[..., torch.Tensor]:
    """`adapt` for the attention and the block: build module_class(d_model, n_heads) and run
    it like gptlib's layer (`run_like_gptlib`)."""

    def run(d_model: int, n_heads: int, source: nn.Module, x: torch.Tensor) -> torch.Tensor:
        return run_like_gptlib(exercise, module_class(d_model, n_heads), source, x)

    return run


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
            Mistake(*BUFFER_IN_STATE_DICT, _BufferedAttention, fix=BUFFER_IN_STATE_DICT_FIX),
            Mistake(*GRADIENT_CUT, _DetachedAttention, fix=GRADIENT_CUT_FIX),
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
        *BUFFER_IN_STATE_DICT,
        _block_with(attention=_BufferedAttention),
        fix=BUFFER_IN_STATE_DICT_FIX,
    ),
    Mistake(*IN_PLACE, _InPlaceBlock, fix=IN_PLACE_FIX),
    Mistake(*GRADIENT_CUT, _block_with(attention=_DetachedAttention), fix=GRADIENT_CUT_FIX),
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


# The lines that mend the GPT's structural mistakes, for the catalogue's Mistakes alone (not
# shipped in a graded release: the solution's own lines).
NOT_TIED_FIX = "after creating both layers: self.lm_head.weight = self.tok_emb.weight"
TIED_ALWAYS_FIX = "if tie_weights: self.lm_head.weight = self.tok_emb.weight"
ONE_BLOCK_SHARED_FIX = (
    "self.blocks = nn.ModuleList(Block(d_model, n_heads) for _ in range(n_layers))"
)
OTHER_DEFAULTS_FIX = (
    "def __init__(self, vocab_size, d_model=128, n_heads=4, n_layers=4, max_len=256, "
    "tie_weights=False)"
)


def _names_per_parameter(module: nn.Module) -> list[list[str]]:
    """Every parameter's names: one each, except for a parameter that several modules share."""
    names: dict[int, list[str]] = {}
    for name, p in module.named_parameters(remove_duplicate=False):
        names.setdefault(id(p), []).append(name)
    return list(names.values())


def _tied(module: nn.Module) -> bool:
    """Whether the unembedding and the token embedding are one matrix (tied weights)."""
    return any(
        any(n.startswith("tok_emb.") for n in names)
        and any(n.startswith("lm_head.") for n in names)
        for names in _names_per_parameter(module)
    )


def _blocks_share_weights(module: nn.Module) -> bool:
    """Whether two layers of the stack hold the same parameter ([Block(...)] * n_layers)."""
    return any(
        len({n.split(".")[1] for n in names if n.startswith("blocks.")}) > 1
        for names in _names_per_parameter(module)
    )


NOT_TIED = (
    "not-tied",
    "with tie_weights=True the unembedding must be the token embedding's matrix itself, one "
    "parameter used twice, not a copy of it: the model then holds V·d numbers fewer, and "
    "training updates the one matrix from both uses.",
)


TIED_ALWAYS = (
    "tied-when-not-asked",
    "your model shares the unembedding with the token embedding although tie_weights is "
    "False: share the matrix only when it is asked for.",
)


ONE_BLOCK_SHARED = (
    "one-block-shared",
    "every layer of your stack is one and the same block: a list that repeats one module "
    "holds n_layers references to it, so all layers share a single set of weights and the "
    "model has the parameters of one block. That is not weight tying, which shares only the "
    "token embedding with the unembedding. Each layer needs a block of its own, built anew "
    "for each place in the stack.",
)


OTHER_DEFAULTS = (
    "other-default-sizes",
    "your model is right when every size is given, but its default sizes are not the "
    "chapter's: section 8 builds it with the vocabulary size alone and loads the weights of "
    "gptlib's model of the chapter's sizes (d = 128, 4 heads, 4 layers, 256 positions).",
)


def run_gpt(gpt_class: Any) -> Callable[..., tuple]:
    """`adapt`: build gpt_class(**config) and run it like gptlib's model (`run_like_gptlib`)."""

    def run(config: dict, source: nn.Module, idx: torch.Tensor, targets: Any) -> tuple:
        model = gpt_class(**config)
        if _blocks_share_weights(model):  # before loading, which would report a misfit
            raise _report("gpt", ONE_BLOCK_SHARED)
        ours, theirs = _shapes(model), _shapes(source)
        if set(config) == {"vocab_size"} and ours.keys() == theirs.keys() and ours != theirs:
            raise _report("gpt", OTHER_DEFAULTS)
        if _tied(model) != _tied(source):  # equal logits could hide it: a tie is not a value
            raise _report("gpt", NOT_TIED if config.get("tie_weights") else TIED_ALWAYS)
        if set(config) != {"vocab_size"}:
            return run_like_gptlib("gpt", model, source, idx, targets)
        try:
            return run_like_gptlib("gpt", model, source, idx, targets)
        except CheckError:
            raise
        except Exception as exc:
            raise CheckError(
                "gpt",
                f"built as section 8 builds it, GPT({config['vocab_size']}) with the chapter's "
                f"sizes, your model fails on a window of all {idx.shape[1]} positions it knows "
                f"(the chapter's script reads 64, and nothing stops a longer window): "
                f"{type(exc).__name__}: {exc}",
            ) from None

    return run


def _shapes(module: nn.Module) -> dict[str, tuple[int, ...]]:
    return {name: tuple(p.shape) for name, p in module.named_parameters()}


def loss_is_a_number(out: tuple, config: dict, source, idx, targets) -> str | None:
    loss = out[1]
    if targets is None:
        return None if loss is None else "without targets, forward must return (logits, None)"
    if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
        return "the loss must be one number, a 0-d tensor: the mean over all B·T predictions"
    return None


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
            Mistake(*NOT_TIED, _NeverTiedGPT, fix=NOT_TIED_FIX),
            Mistake(*TIED_ALWAYS, _AlwaysTiedGPT, fix=TIED_ALWAYS_FIX),
            Mistake(*ONE_BLOCK_SHARED, _SharedBlockGPT, fix=ONE_BLOCK_SHARED_FIX),
            Mistake(*OTHER_DEFAULTS, _OtherDefaultsGPT, fix=OTHER_DEFAULTS_FIX),
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


def keeps_the_prompt(out: torch.Tensor, model, idx: torch.Tensor, *_: object) -> str | None:
    if not torch.equal(out[:, : idx.shape[1]], idx):
        return "the result must start with the prompt idx, unchanged, and append to it"
    return None


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


class Projections(nn.Module):
    """An attention layer's two linear maps and nothing else: what `attend_with_cache` may use.
    In the notebook it runs on the student's own layers, whose other attributes may be named
    otherwise than gptlib's."""

    def __init__(self, layer: nn.Module) -> None:
        super().__init__()
        self.qkv, self.proj = layer.qkv, layer.proj

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise CheckError(
            "kv-cache",
            "your function runs the whole attention layer, which recomputes every position it "
            "is given. A cached step computes the newest position's query, key and value with "
            "the layer's qkv, attends over the cache, and applies proj.",
        )


def _kv_cache_inputs(g: torch.Generator) -> list[tuple]:
    """(the qkv and proj maps of a gptlib attention layer with lively weights, x [B, T, d],
    n_heads): the check feeds x one position at a time."""
    cases = []
    for B, T, d, h in ((2, 6, 16, 4), (1, 9, 12, 3)):
        attn = Projections(_lively(LibraryAttention(d, h), g))
        cases.append((attn, torch.randn(B, T, d, generator=g), h))
    return cases


def run_step_by_step(attend: Any) -> Callable[..., tuple]:
    """`adapt`: feed x to `attend` one position at a time, starting from cache=None, passing on
    the cache it returns. → (outputs [B, T, d], keys, values of the last cache)."""

    def run(attn: nn.Module, x: torch.Tensor, n_heads: int) -> tuple:
        cache, outputs = None, []
        with torch.no_grad():
            for t in range(x.shape[1]):
                try:
                    returned = attend(attn, x[:, t : t + 1], cache, n_heads)
                except AttributeError as exc:
                    raise CheckError(
                        "kv-cache",
                        f"your function read an attribute the layer it is given need not have "
                        f"({exc}). Use only the layer's qkv and proj, and the n_heads argument: "
                        "in the notebook it runs on your own attention layers.",
                    ) from None
                if not (isinstance(returned, tuple) and len(returned) == 2):
                    raise CheckError(
                        "kv-cache",
                        "return two things, the output for the new position and the new "
                        f"cache: (y, (keys, values)); yours returned {type(returned).__name__}",
                    )
                y, cache = returned
                if not (isinstance(cache, tuple) and len(cache) == 2):
                    raise CheckError(
                        "kv-cache",
                        "the cache you return must be a pair (keys, values), each [B, h, t, "
                        f"d_h]; yours is {type(cache).__name__}",
                    )
                outputs.append(y)
        return torch.cat(outputs, dim=1), *cache

    return run


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
