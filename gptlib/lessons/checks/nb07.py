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

from gptlib.lessons.checks.core import CheckError, Exercise, Mistake, Property, register
from gptlib.lessons.checks.nb04 import ATTENTION_MODULE_MISTAKES, module_inputs, run_module
from gptlib.lessons.checks.nb05 import MLP_MISTAKES, mlp_inputs, run_mlp
from gptlib.lessons.checks.weights import load_weights
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


class _Attention(nn.Module):
    """Causal self-attention written out: fused qkv, h heads, explicit masked softmax."""

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, d = x.shape
        q, k, v = (
            t.view(B, T, self.n_heads, self.d_head).transpose(1, 2)
            for t in self.qkv(x).split(d, dim=-1)
        )
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)  # [B, h, T, T]
        future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
        out = scores.softmax(dim=-1) @ v  # [B, h, T, d_h]
        return self.proj(out.transpose(1, 2).reshape(B, T, d))


class _MLP(nn.Module):
    """d → 4d → d with GELU between."""

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.up = nn.Linear(d_model, 4 * d_model)
        self.down = nn.Linear(4 * d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.gelu(self.up(x)))


# --- the attention and the MLP, written again from memory (notebooks 04 and 05) ---------------
# The same tests as there, under 07's names, so that 07's report counts them: gptlib's layer
# with random weights loaded into the student's, the same catalogues of mistakes.

register(
    Exercise(
        name="gpt-attention",
        notebook="07_build_the_gpt",
        reference=LibraryAttention,
        make_inputs=module_inputs,
        adapt=functools.partial(run_module, exercise="gpt-attention"),
        mistakes=ATTENTION_MODULE_MISTAKES,
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
        make_inputs=mlp_inputs,
        adapt=functools.partial(run_mlp, exercise="gpt-mlp"),
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

    attention, feed_forward = _Attention, _MLP  # the catalogue's blocks swap these

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


def _block_with(attention: type = _Attention, feed_forward: type = _MLP) -> type:
    """The reference block around another attention or MLP: a mistake inside one of them."""
    name = f"BlockWith{attention.__name__}{feed_forward.__name__}"
    return type(name, (Block,), {"attention": attention, "feed_forward": feed_forward})


POST_LN = (
    "post-ln",
    "your block normalises after adding, x = LN(x + F(x)): that is Post-LN, the original "
    "Transformer's placement. The chapter's GPT is Pre-LN: normalise the sublayer's input and "
    "add its output to the untouched x, x = x + attn(ln1(x)), then x = x + mlp(ln2(x)).",
)
NO_ATTENTION_RESIDUAL = (
    "no-residual-around-attention",
    "the attention's output replaces x instead of being added to it: write "
    "x = x + self.attn(self.ln1(x)). Without the skip, what the embeddings carried is lost and "
    "gradients have no direct path back (notebook 05).",
)
NO_MLP_RESIDUAL = (
    "no-residual-around-mlp",
    "the MLP's output replaces x instead of being added to it: write "
    "x = x + self.mlp(self.ln2(x)), so the block returns the residual stream plus the MLP's "
    "update.",
)
# The MLP mistakes whose parameters differ from gptlib's (no biases, a hidden width of d) show
# as a misfit when the weights are loaded, which names them; the others are caught by value.
_MLP_MISTAKES_BY_VALUE = tuple(
    m for m in MLP_MISTAKES if m.name not in ("hidden-width-d", "no-biases")
)
BLOCK_MISTAKES = (
    Mistake(*POST_LN, _PostLNBlock),
    Mistake(*NO_ATTENTION_RESIDUAL, _NoAttentionResidualBlock),
    Mistake(*NO_MLP_RESIDUAL, _NoMLPResidualBlock),
    *(
        Mistake(m.name, f"in your attention, {m.message}", _block_with(attention=m.implementation))
        for m in ATTENTION_MODULE_MISTAKES
    ),
    *(
        Mistake(m.name, f"in your MLP, {m.message}", _block_with(feed_forward=m.implementation))
        for m in _MLP_MISTAKES_BY_VALUE
    ),
)


def _load_gptlib_weights(exercise: str, source: nn.Module, model: nn.Module) -> None:
    """Load gptlib's state dict into the student's module; a misfit is a CheckError saying which.

    The chapter's own name for the unembedding, `head`, is accepted for gptlib's `lm_head`.
    """
    state, own = source.state_dict(), model.state_dict()
    if "head.weight" in own and "lm_head.weight" not in own:
        state = {("head.weight" if k == "lm_head.weight" else k): w for k, w in state.items()}
    try:
        load_weights(model, state)
    except ValueError as exc:
        raise CheckError(exercise, str(exc)) from None


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
        and any(n.startswith(("lm_head.", "head.")) for n in names)
        for names in _names_per_parameter(module)
    )


def _blocks_share_weights(module: nn.Module) -> bool:
    """Whether two layers of the stack hold the same parameter ([Block(...)] * n_layers)."""
    return any(
        len({n.split(".")[1] for n in names if n.startswith("blocks.")}) > 1
        for names in _names_per_parameter(module)
    )


def _block_inputs(g: torch.Generator) -> list[tuple]:
    """(d_model, n_heads, a gptlib Block with lively weights, x [B, T, d])."""
    cases = []
    for B, T, d, h in ((2, 7, 16, 4), (1, 9, 24, 3)):
        source = _lively(LibraryBlock(d, h), g)
        cases.append((d, h, source, torch.randn(B, T, d, generator=g)))
    return cases


def _run_block(block_class: Any) -> Callable[..., torch.Tensor]:
    """`adapt`: build block_class(d_model, n_heads), load gptlib's weights, run it on x."""

    def run(d_model: int, n_heads: int, source: nn.Module, x: torch.Tensor) -> torch.Tensor:
        block = block_class(d_model, n_heads)
        _load_gptlib_weights("gpt-block", source, block)
        with torch.no_grad():
            return block.eval()(x)

    return run


register(
    Exercise(
        name="gpt-block",
        notebook="07_build_the_gpt",
        reference=Block,
        make_inputs=_block_inputs,
        adapt=_run_block,
        mistakes=(
            *BLOCK_MISTAKES,
            Mistake(
                "norm-on-the-output",
                "your LayerNorms normalise the sublayers' outputs, x = x + LN(F(x)). Pre-LN "
                "normalises their input: x = x + self.attn(self.ln1(x)).",
                _NormOnOutputBlock,
            ),
            Mistake(
                "one-norm-twice",
                "both sublayers read ln1's output: the MLP needs its own LayerNorm, "
                "x = x + self.mlp(self.ln2(x)), with its own γ and β.",
                _OneNormBlock,
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


NOT_TIED = Mistake(
    "not-tied",
    "with tie_weights=True the unembedding must be the token embedding's matrix itself, not a "
    "copy of it: after creating both, write self.lm_head.weight = self.tok_emb.weight. The "
    "model then has V·d fewer parameters, and training updates one matrix.",
    _NeverTiedGPT,
)
TIED_ALWAYS = Mistake(
    "tied-when-not-asked",
    "your model ties the unembedding to the token embedding although tie_weights=False: share "
    "the matrix only when tie_weights is True.",
    _AlwaysTiedGPT,
)


class _SharedBlockGPT(GPT):
    def __init__(self, vocab_size, d_model=128, n_heads=4, n_layers=4, max_len=256,
                 tie_weights=False):  # fmt: skip
        super().__init__(vocab_size, d_model, n_heads, n_layers, max_len, tie_weights)
        self.blocks = nn.ModuleList([self.block(d_model, n_heads)] * n_layers)


ONE_BLOCK_SHARED = Mistake(
    "one-block-shared",
    "every layer of your stack is one and the same Block: a list that repeats one module "
    "(as [module] * n_layers does) holds n_layers references to it, so all layers share a "
    "single set of weights and the model has the parameters of one block. That is not weight "
    "tying, which shares only the token embedding with the unembedding. Each layer needs a "
    "Block of its own, built anew for each place in the stack.",
    _SharedBlockGPT,
)


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
    reads all of them; the third call passes no targets."""
    cases = []
    for config, (B, T), with_targets in (
        (dict(vocab_size=11, d_model=16, n_heads=4, n_layers=2, max_len=12), (2, 9), True),
        (dict(vocab_size=13, d_model=24, n_heads=3, n_layers=3, max_len=8, tie_weights=True),
         (3, 8), True),
        (dict(vocab_size=7, d_model=8, n_heads=2, n_layers=1, max_len=6), (1, 5), False),
    ):  # fmt: skip
        source = _lively(LibraryGPT(GPTConfig(**config)), g)
        idx = torch.randint(config["vocab_size"], (B, T), generator=g)
        targets = torch.randint(config["vocab_size"], (B, T), generator=g)
        cases.append((config, source, idx, targets if with_targets else None))
    return cases


def _run_gpt(gpt_class: Any) -> Callable[..., tuple]:
    """`adapt`: build gpt_class(**config), load gptlib's weights, run it on (idx, targets)."""

    def run(config: dict, source: nn.Module, idx: torch.Tensor, targets: Any) -> tuple:
        model = gpt_class(**config)
        if _blocks_share_weights(model):  # before loading, which would report a misfit
            raise CheckError("gpt", ONE_BLOCK_SHARED.message, ONE_BLOCK_SHARED.name)
        _load_gptlib_weights("gpt", source, model)
        if _tied(model) != _tied(source):  # equal logits could hide it: a tie is not a value
            mistake = NOT_TIED if config.get("tie_weights") else TIED_ALWAYS
            raise CheckError("gpt", mistake.message, mistake.name)
        with torch.no_grad():
            return tuple(model.eval()(idx, targets))

    return run


def _loss_is_a_number(out: tuple, config: dict, source, idx, targets) -> str | None:
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
        make_inputs=_gpt_inputs,
        adapt=_run_gpt,
        properties=(Property("the loss is one number", _loss_is_a_number),),
        returns=("logits", "loss"),
        mistakes=(
            Mistake(
                "no-final-layernorm",
                "the logits come straight from the last block: a Pre-LN stack needs one more "
                "LayerNorm before the unembedding, logits = self.lm_head(self.ln_f(x)).",
                _NoFinalNormGPT,
            ),
            Mistake(
                "positions-not-added",
                "the position vectors are never added, so the model cannot tell where a token "
                "stands: x = self.tok_emb(idx) + self.pos_emb(torch.arange(T)).",
                _NoPositionsGPT,
            ),
            Mistake(
                "positions-added-after-the-blocks",
                "you add the position vectors after the blocks, where attention can no longer "
                "use them. Add them to the token vectors before the first block.",
                _PositionsAfterBlocksGPT,
            ),
            Mistake(
                "loss-against-the-inputs",
                "the loss compares the logits with idx, the tokens the model reads. They must "
                "be compared with targets, the next tokens: "
                "F.cross_entropy(logits.flatten(0, 1), targets.flatten()).",
                _LossAgainstInputsGPT,
            ),
            Mistake(
                "targets-shifted-twice",
                "the targets arrive already shifted by one (targets[:, t] is the token after "
                "idx[:, t]); shifting them again inside forward scores each position against "
                "the token two ahead. Use all B·T logits against all B·T targets.",
                _ShiftedTwiceGPT,
            ),
            Mistake(
                "loss-on-probabilities",
                "the loss was computed from probabilities: F.cross_entropy takes logits and "
                "applies the log-softmax itself, so a softmax before it squeezes every input "
                "into [0, 1] and the loss can barely move. Hand it the logits.",
                _LossOnProbabilitiesGPT,
            ),
            Mistake(
                "loss-summed",
                "your loss is the sum over all B·T predictions, not their mean: it grows with "
                "the batch and the window, and so does every gradient. The chapter's loss (and "
                "the number the notebooks compare with ln V) is the mean.",
                _SummedLossGPT,
            ),
            NOT_TIED,
            TIED_ALWAYS,
            ONE_BLOCK_SHARED,
            *(Mistake(m.name, m.message, _with_block(m.implementation)) for m in BLOCK_MISTAKES),
        ),
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


def _keeps_the_prompt(out: torch.Tensor, model, idx: torch.Tensor, *_: object) -> str | None:
    if not torch.equal(out[:, : idx.shape[1]], idx):
        return "the result must start with the prompt idx, unchanged, and append to it"
    return None


register(
    Exercise(
        name="generate",
        notebook="07_build_the_gpt",
        reference=_generate,
        make_inputs=_generate_inputs,
        properties=(Property("starts with the prompt", _keeps_the_prompt),),
        mistakes=(
            Mistake(
                "no-crop",
                "the model was given the whole sequence: once it grows past max_len tokens "
                "the model has no position vector for the extra ones and fails. Feed it only "
                "the last max_len tokens, idx[:, -max_len:].",
                functools.partial(_generate, window="all"),
            ),
            Mistake(
                "cropped-to-the-first-tokens",
                "you kept the first max_len tokens, idx[:, :max_len]: once the text is longer, "
                "the model keeps reading the same old window and never sees what it just "
                "wrote. Keep the last ones, idx[:, -max_len:].",
                functools.partial(_generate, window="first"),
            ),
            Mistake(
                "first-position-logits",
                "the next token comes from the logits at position 0, which predict the second "
                "token of the window. The prediction for the next token is at the last "
                "position: logits[:, -1].",
                functools.partial(_generate, position=0),
            ),
            Mistake(
                "temperature-after-softmax",
                "the temperature had no effect: dividing the probabilities by T only rescales "
                "them, and torch.multinomial draws the same way from any rescaling. Divide the "
                "logits by T, then take the softmax.",
                functools.partial(_generate, temperature_on="probabilities"),
            ),
            Mistake(
                "temperature-multiplied",
                "the logits were multiplied by the temperature: that sharpens the distribution "
                "for T > 1 and flattens it for T < 1, the opposite of what T means. Divide.",
                functools.partial(_generate, temperature_on="logits, multiplied"),
            ),
            Mistake(
                "always-arg-max",
                "you always took the most likely token, so temperature, top-k and the "
                "generator change nothing. Draw from the distribution: "
                "torch.multinomial(probs, 1, generator=generator).",
                functools.partial(_generate, temperature_on="none: arg-max"),
            ),
            Mistake(
                "top-k-keeps-k-plus-one",
                "one token too many survives the top-k cut: keep the logits that are at least "
                "the k-th largest, torch.topk(logits, k).values[:, -1:], and no more.",
                functools.partial(_generate, top_k_rule="k + 1"),
            ),
            Mistake(
                "top-k-keeps-the-smallest",
                "you kept the k smallest logits, the least likely tokens. Top-k keeps the k "
                "largest: torch.topk(logits, k) with its default largest=True.",
                functools.partial(_generate, top_k_rule="smallest"),
            ),
            Mistake(
                "top-k-masked-with-zero",
                "the dropped logits were set to 0, not −∞, so those tokens keep a probability "
                "of e⁰ / Σ. Fill them with float('-inf').",
                functools.partial(_generate, top_k_rule="zero"),
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
    """(a gptlib attention layer with lively weights, x [B, T, d], n_heads): the check feeds
    x one position at a time."""
    cases = []
    for B, T, d, h in ((2, 6, 16, 4), (1, 9, 12, 3)):
        attn = _lively(LibraryAttention(d, h), g)
        cases.append((attn, torch.randn(B, T, d, generator=g), h))
    return cases


def _run_step_by_step(attend: Any) -> Callable[..., tuple]:
    """`adapt`: feed x to `attend` one position at a time, starting from cache=None, passing on
    the cache it returns. → (outputs [B, T, d], keys, values of the last cache)."""

    def run(attn: nn.Module, x: torch.Tensor, n_heads: int) -> tuple:
        cache, outputs = None, []
        with torch.no_grad():
            for t in range(x.shape[1]):
                returned = attend(attn, x[:, t : t + 1], cache, n_heads)
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
        make_inputs=_kv_cache_inputs,
        adapt=_run_step_by_step,
        returns=("outputs", "keys", "values"),
        mistakes=(
            Mistake(
                "cache-keeps-only-the-newest",
                "the cache you pass on holds only the newest position's key and value, so "
                "each step reads itself and the one before it, not the whole past. Return the "
                "old keys and values with the new ones appended along the positions' axis.",
                functools.partial(_attend_with_cache, keep="newest"),
            ),
            Mistake(
                "new-position-not-read",
                "the new position attends to the cached keys but not to its own: it must read "
                "itself too, as every position does under the causal mask. Append its key and "
                "value first, then attend.",
                functools.partial(_attend_with_cache, reads="cache only"),
            ),
            Mistake(
                "square-mask-on-one-query",
                "you applied a causal mask made for a square score matrix. With one query and "
                "t + 1 keys, cutting above the diagonal leaves the query only the first key. The "
                "newest position comes after every cached one, so it may read all of them.",
                functools.partial(_attend_with_cache, reads="square mask"),
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
