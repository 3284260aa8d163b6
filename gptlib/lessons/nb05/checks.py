"""Exercises of notebook 05: the MLP as a module (notebook 07 restates it for the capstone), and
the two functions the deep-stack experiment runs on: an initialisation that keeps each layer's
signal at its input's size, and how alike the positions' vectors are. (Each block's gradient
norm is notebook 06's exercise; here gptlib measures it.)"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from gptlib.lessons.engine.checks.core import (
    CheckError,
    Exercise,
    Mistake,
    Property,
    exercise_named,
    mistake_error,
    register,
    running_a_mistake,
)
from gptlib.lessons.shared.experiments.variants import Variant, build_gpt
from gptlib.model import GPT, MLP, GPTConfig

HIDDEN_WIDTH_D_NAME = "hidden-width-d"  # the mistake load_mlp_weights itself reports


# ---------------------------------------------------------------- mlp (the student's module)


def mlp_inputs(g: torch.Generator) -> list[tuple]:
    """(d_model, x [B, T, d], weights): weights are the state dict of a gptlib `MLP(d_model)`
    with random values, biases included, large enough that GELU's bend matters."""
    cases = []
    for B, T, d in ((2, 3, 8), (1, 5, 16)):
        x = 1.5 * torch.randn(B, T, d, generator=g)
        x[:, 1] = x[:, 0]  # two positions hold the same vector
        source = MLP(d)
        with torch.no_grad():
            for p in source.parameters():
                fan_in = p.shape[-1] if p.dim() == 2 else 4
                p.copy_(torch.randn(p.shape, generator=g) / fan_in**0.5)
        cases.append((d, x, source.state_dict()))
    return cases


class _NoActivation(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.up, self.down = nn.Linear(d_model, 4 * d_model), nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        return self.down(self.up(x))


class _ReLU(_NoActivation):
    def forward(self, x):
        return self.down(F.relu(self.up(x)))


class _TanhGELU(_NoActivation):
    def forward(self, x):
        return self.down(F.gelu(self.up(x), approximate="tanh"))


class _ActivationAfterDown(_NoActivation):
    def forward(self, x):
        return F.gelu(self.down(self.up(x)))


class _ActivationTwice(_NoActivation):
    def forward(self, x):
        return F.gelu(self.down(F.gelu(self.up(x))))


class _NoBiases(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.up = nn.Linear(d_model, 4 * d_model, bias=False)
        self.down = nn.Linear(4 * d_model, d_model, bias=False)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


class _HiddenWidthD(nn.Module):
    """The catalogue's own d-wide MLP: no gptlib weights fit it, so it keeps weights drawn from a
    fixed seed, and only it reproduces its own output."""

    def __init__(self, d_model):
        super().__init__()
        self.up, self.down = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        g = torch.Generator().manual_seed(5)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.randn(p.shape, generator=g))

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


HIDDEN_WIDTH_D = Mistake(
    HIDDEN_WIDTH_D_NAME,
    "your hidden layer is d_model wide. The MLP widens each vector to four times d_model and "
    "narrows it back: the widening is where it gets room to compute.",
    _HiddenWidthD,
    fix="up = nn.Linear(d_model, 4 * d_model) and down = nn.Linear(4 * d_model, d_model)",
)


# The module's catalogue: notebook 07 asks for the MLP again and meets the same mistakes.
MLP_MISTAKES = (
    Mistake(
        "no-activation",
        "there is no nonlinearity between the two layers, so together they are one linear map "
        "(a product of two matrices is a matrix). The bend belongs on the wide hidden vector, "
        "between the two layers.",
        _NoActivation,
        fix="return self.down(F.gelu(self.up(x)))",
    ),
    Mistake(
        "relu",
        "you used ReLU, the original Transformer's choice. The chapter's GPT (like GPT-2 and "
        "gptlib) uses GELU, which lets small negative values through smoothly where ReLU sets "
        "them to exactly 0.",
        _ReLU,
        fix="F.gelu in place of F.relu",
    ),
    Mistake(
        "gelu-tanh",
        "close, and not wrong in itself: you used GELU's tanh approximation, the one GPT-2 was "
        "trained with. It differs from the exact GELU by up to 4.7e-4 (near ±2.7), more than "
        "this check allows; the chapter's code and gptlib use the exact form, built on the "
        "normal distribution's CDF (gptlib keeps the tanh form only to load GPT-2's weights).",
        _TanhGELU,
        fix="F.gelu(h) with its default approximate='none'",
    ),
    HIDDEN_WIDTH_D,
    Mistake(
        "activation-after-down",
        "GELU is applied after the down projection. It belongs between the two layers, on "
        "the wide hidden vector; what goes back into the residual stream is a plain linear "
        "projection.",
        _ActivationAfterDown,
        fix="return self.down(F.gelu(self.up(x)))",
    ),
    Mistake(
        "activation-on-output",
        "you also applied GELU after the down projection. The nonlinearity belongs only to the "
        "hidden layer; the output is a plain linear projection.",
        _ActivationTwice,
        fix="drop the outer F.gelu: return self.down(F.gelu(self.up(x)))",
    ),
    Mistake(
        "no-biases",
        "your linear layers have no biases. The chapter's MLP keeps them, one per output "
        "feature: 4·d_model in the first layer and d_model in the second.",
        _NoBiases,
        fix="nn.Linear's default bias=True (leave bias=False out)",
    ),
)


MLP_LAYERS = ("up", "down")


def load_mlp_weights(
    module: nn.Module, weights: dict[str, torch.Tensor], d_model: int, exercise: str
) -> None:
    """Copy gptlib's MLP weights into the student's module by name; a missing layer, an extra
    parameter or a wrong shape is a `CheckError` of `exercise` saying which. A hidden layer of
    width d is the catalogued mistake, reported as one (its fix the second time); the
    catalogue's own such module keeps its seeded weights and is matched by its output."""
    params = dict(module.named_parameters())
    missing = [f"{name}.weight" for name in MLP_LAYERS if f"{name}.weight" not in params]
    if missing:
        raise CheckError(
            exercise,
            f"your MLP has no {' or '.join(missing)}: it needs two nn.Linear layers named `up` "
            "(d_model → 4·d_model) and `down` (4·d_model → d_model), the names under which "
            f"notebook 07 loads gptlib's weights. Its parameters are {sorted(params)}.",
        )
    unexpected = sorted(set(params) - set(weights))
    if unexpected:
        raise CheckError(
            exercise,
            f"your MLP has parameters gptlib's does not: {unexpected}. It needs exactly "
            f"{sorted(weights)} (biases optional only if you mean to leave them out).",
        )
    if params["up.weight"].shape == (d_model, d_model):
        if running_a_mistake():
            return  # the catalogue's own module, matched by its output, not reported
        checked = exercise_named(exercise)
        raise mistake_error(
            checked, next(m for m in checked.mistakes if m.name == HIDDEN_WIDTH_D_NAME)
        )
    for name, p in params.items():
        if p.shape != weights[name].shape:
            raise CheckError(
                exercise,
                f"{name} has shape {list(p.shape)}, gptlib's MLP({d_model}) has "
                f"{list(weights[name].shape)} (nn.Linear stores weight as [out, in]).",
            )
    with torch.no_grad():
        for name, p in params.items():
            p.copy_(weights[name])


def run_mlp(cls: type, exercise: str = "mlp") -> Callable[..., torch.Tensor]:
    """`adapt` for the MLP exercise: build cls(d_model), load the given weights, run it on x.
    `exercise` names the exercise in messages (07 asks for the module again)."""

    def run(d_model: int, x: torch.Tensor, weights: dict[str, torch.Tensor]) -> torch.Tensor:
        module = cls(d_model)
        if not isinstance(module, nn.Module):
            raise CheckError(
                exercise,
                f"MLP({d_model}) should make an nn.Module, it made {type(module).__name__}",
            )
        load_mlp_weights(module, weights, d_model, exercise)
        with torch.no_grad():
            return module(x)

    return run


def same_vector_same_output(out, d_model, x, weights):
    if not torch.allclose(out[:, 0], out[:, 1], atol=1e-5):
        return (
            "positions 0 and 1 hold the same vector but got different outputs; the MLP must "
            "treat every position on its own, with the same weights"
        )
    return None


register(
    Exercise(
        name="mlp",
        notebook="05",
        reference=MLP,
        make_inputs=mlp_inputs,
        adapt=run_mlp,
        properties=(Property("position-wise", same_vector_same_output),),
        mistakes=MLP_MISTAKES,
        hints=(
            "Two linear layers with a GELU between them: the first widens each position's "
            "vector by a factor of four, the second brings it back to d_model.",
            "The check loads weights by name: `up` (d_model → 4·d_model) and `down` (4·d_model "
            "→ d_model), both with biases; forward applies up, the exact GELU (F.gelu's "
            "default), then down.",
        ),
    )
)


# ---------------------------------------------------------------- position_similarity


def _position_similarity(h):
    """Reference: mean cosine similarity between the centred vectors of different positions of
    the same sequence, averaged over the sequences. h [B, T, d] → a number."""
    centred = h - h.mean(dim=-1, keepdim=True)
    unit = centred / centred.norm(dim=-1, keepdim=True)
    cosines = unit @ unit.transpose(-2, -1)  # [B, T, T]
    T = h.shape[-2]
    others = ~torch.eye(T, dtype=torch.bool, device=h.device)
    return cosines[:, others].mean()


def similarity_inputs(g: torch.Generator) -> list[tuple]:
    """(h [B, T, d],): vectors with a shared offset (centring matters), of different sizes
    (normalising matters), sequences unlike each other (pairs across sequences matter), and
    the notebook's own kind: [8, 32, 64] in float64, every vector scaled to largest entry 1,
    nearly collapsed onto one direction."""
    offset = torch.randn(2, 4, 8, generator=g, dtype=torch.float64) + 3.0
    sizes = torch.rand(2, 4, 1, generator=g, dtype=torch.float64) * 5 + 0.2
    mixed = offset * sizes
    mixed[1] = mixed[1].flip(-1) - 6.0
    base = torch.randn(1, 1, 16, generator=g)
    alike = (base + 0.3 * torch.randn(3, 5, 16, generator=g)) * (
        1 + torch.rand(3, 5, 1, generator=g)
    )
    one_way = torch.randn(8, 1, 64, generator=g, dtype=torch.float64)
    stack = one_way + 0.05 * torch.randn(8, 32, 64, generator=g, dtype=torch.float64)
    stack = stack / stack.abs().amax(dim=-1, keepdim=True)
    return [(mixed,), (alike + 2.0,), (stack,)]


def _cosines(centred):
    unit = centred / centred.norm(dim=-1, keepdim=True)
    return unit @ unit.transpose(-2, -1)


def _off_diagonal_mean(cosines):
    T = cosines.shape[-1]
    return cosines[:, ~torch.eye(T, dtype=torch.bool)].mean()


def _centred(h):
    return h - h.mean(dim=-1, keepdim=True)


def _across_sequences(h):
    flat = _centred(h).reshape(1, -1, h.shape[-1])  # every position of every sequence
    return _off_diagonal_mean(_cosines(flat))


def _dot_products(h):
    c = _centred(h)
    return _off_diagonal_mean(c @ c.transpose(-2, -1))


def _normalised_over_positions(h):
    c = _centred(h)
    unit = c / c.norm(dim=-2, keepdim=True)
    return _off_diagonal_mean(unit @ unit.transpose(-2, -1))


def as_number(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`adapt` for the similarity exercise: a Python number, or a one-element tensor of any
    shape, is as good as a 0-d tensor."""

    def run(h: torch.Tensor) -> Any:
        out = fn(h)
        if isinstance(out, torch.Tensor) and out.numel() == 1:
            return out.reshape(())
        return torch.tensor(float(out)) if isinstance(out, int | float) else out

    return run


def a_mean_of_cosines(out, *_: object) -> str | None:
    if -1 - 1e-6 <= float(out) <= 1 + 1e-6:
        return None
    return f"{float(out):z.4g} cannot be a mean of cosines, which lie in [-1, 1]"


register(
    Exercise(
        name="position_similarity",
        notebook="05",
        reference=_position_similarity,
        make_inputs=similarity_inputs,
        adapt=as_number,
        atol=1e-6,
        rtol=1e-5,
        properties=(
            Property(
                "a-cosine",
                a_mean_of_cosines,
            ),
        ),
        mistakes=(
            Mistake(
                "not-centred",
                "you compared the vectors as they are. A part shared by every feature (the "
                "vector's mean over its features) makes any two vectors look alike; centre each "
                "vector over its own features first, as LayerNorm does before it looks.",
                lambda h: _off_diagonal_mean(_cosines(h)),
                fix="centred = h - h.mean(dim=-1, keepdim=True)",
            ),
            Mistake(
                "centred-over-positions",
                "you centred over the wrong axis: you removed each feature's mean over the "
                "positions, which makes the positions differ by construction. Remove each "
                "vector's own mean, taken over its d features.",
                lambda h: _off_diagonal_mean(_cosines(h - h.mean(dim=-2, keepdim=True))),
                fix="h.mean(dim=-1, keepdim=True), the last axis",
            ),
            Mistake(
                "self-pairs-included",
                "your average includes each position compared with itself, a cosine of exactly "
                "1 every time, which pulls the mean up. Average over pairs of different positions "
                "only: T·(T − 1) of them per sequence.",
                lambda h: _cosines(_centred(h)).mean(),
                fix="leave out the diagonal: cosines[:, ~torch.eye(T, dtype=torch.bool)].mean()",
            ),
            Mistake(
                "pairs-across-sequences",
                "you compared positions of different sequences with each other. Collapse is "
                "about the positions of one sequence becoming alike; compare within each "
                "sequence, then average over the sequences.",
                _across_sequences,
                fix="keep the batch axis: unit @ unit.transpose(-2, -1) is [B, T, T]",
            ),
            Mistake(
                "dot-not-cosine",
                "you averaged dot products, which grow with the vectors' sizes. A cosine divides "
                "each product by both vectors' lengths, so only their directions count.",
                _dot_products,
                fix="divide each centred vector by its norm over the last axis first",
            ),
            Mistake(
                "normalised-over-positions",
                "you divided by a length taken over the wrong axis (over the positions, for each "
                "feature). Each vector must be divided by its own length, over its d features.",
                _normalised_over_positions,
                fix="centred.norm(dim=-1, keepdim=True)",
            ),
        ),
        hints=(
            "Two positions hold the same vector up to size when the cosine of the angle "
            "between their vectors is 1. Centre each vector over its features first; then "
            "average that cosine over every pair of different positions of a sequence, and over "
            "the sequences.",
            "Divide each centred vector by its length; the products of every pair of positions "
            "of one sequence form a T × T matrix of cosines, whose diagonal (each position "
            "with itself) stays out of the average.",
        ),
    )
)

# ---------------------------------------------------------------- fan_in_init_


def _fan_in_init_(model, gain_after_gelu):
    """Reference: every linear weight N(0, gain²/fan_in), the gain only on the MLP's down
    projection (which reads the GELU's output), biases 0, embeddings N(0, 1); in place."""
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear):
            fan_in = module.weight.shape[1]  # nn.Linear stores [out, in]
            gain = gain_after_gelu if name.endswith("mlp.down") else 1.0
            nn.init.normal_(module.weight, mean=0.0, std=gain / math.sqrt(fan_in))
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=1.0)
    return model


def _init_with(std_of, *, embeddings=True, blocks_only=False, zero_biases=True, lm_head=True):
    """A catalogued initialisation: `std_of(name, linear, gain)` gives each linear layer's std;
    `lm_head=False` leaves the unembedding as it was."""

    def init(model, gain):
        root = model.blocks if blocks_only else model
        for name, module in root.named_modules():
            if isinstance(module, nn.Linear) and (lm_head or name != "lm_head"):
                nn.init.normal_(module.weight, std=std_of(name, module, gain))
                if zero_biases and module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding) and embeddings:
                nn.init.normal_(module.weight, std=1.0)

    return init


def _right_std(name, linear, gain):
    return (gain if name.endswith("mlp.down") else 1.0) / math.sqrt(linear.in_features)


@dataclass(frozen=True)
class InitModel:
    """A GPT for the initialisation exercise, built afresh for every call with its biases set
    to 0.1 (so that leaving them is seen)."""

    n_layers: int
    layer_norm: bool
    d_model: int = 64
    max_len: int = 64
    seed: int = 0

    def build(self) -> GPT:
        torch.manual_seed(self.seed)
        config = GPTConfig(
            vocab_size=65, d_model=self.d_model, n_heads=4, n_layers=self.n_layers,
            max_len=self.max_len,
        )  # fmt: skip
        model = build_gpt(config, Variant(residual=False, block_norms=self.layer_norm))
        with torch.no_grad():
            for module in model.modules():
                if isinstance(module, nn.Linear) and module.bias is not None:
                    module.bias.fill_(0.1)
        return model


INIT_STATISTICS = (
    "weight std × √fan_in of attn.qkv, attn.proj, mlp.up, mlp.down, lm_head",
    "largest |bias|",
    "std of tok_emb, pos_emb",
    "largest change to a LayerNorm's scale or shift",
)


def init_statistics(model: GPT) -> tuple[torch.Tensor, ...]:
    """What an initialisation drew, pooled over the blocks (`INIT_STATISTICS`)."""
    pooled: dict[str, list[torch.Tensor]] = {}
    biases = [torch.zeros(())]
    norms = [torch.zeros(())]
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear):
            kind = ".".join(name.split(".")[-2:]) if name.startswith("blocks.") else name
            scaled = module.weight.detach().flatten() * math.sqrt(module.in_features)
            pooled.setdefault(kind, []).append(scaled)
            if module.bias is not None:
                biases.append(module.bias.detach().abs().max())
        elif isinstance(module, nn.LayerNorm):
            norms += [(module.weight.detach() - 1).abs().max(), module.bias.detach().abs().max()]
    weights = torch.stack([torch.cat(pooled[k]).std() for k in INIT_KINDS])
    embeddings = torch.stack(
        [model.tok_emb.weight.detach().std(), model.pos_emb.weight.detach().std()]
    )
    return weights, torch.stack(biases).max(), embeddings, torch.stack(norms).max()


INIT_KINDS = ("attn.qkv", "attn.proj", "mlp.up", "mlp.down", "lm_head")


def run_init(fn: Callable[..., Any]) -> Callable[..., tuple[torch.Tensor, ...]]:
    """`adapt` for the initialisation exercise: build the model, seed torch's generator, let
    fn(model, gain) re-initialise it in place, and measure what it drew."""

    def run(spec: InitModel, gain: float) -> tuple[torch.Tensor, ...]:
        model = spec.build()
        torch.manual_seed(spec.seed + 1)
        fn(model, gain)
        return init_statistics(model)

    return run


register(
    Exercise(
        name="fan_in_init_",
        notebook="05",
        reference=_fan_in_init_,
        make_inputs=lambda g: [
            # a gain far from He's √2 first, so that every catalogued gain shows as itself
            (InitModel(2, layer_norm=True, seed=2), 1.8),
            (InitModel(2, layer_norm=True), 1.5335),
            (InitModel(24, layer_norm=False, max_len=32), 1.5335),
            (InitModel(3, layer_norm=False, seed=1), 1.0),
        ],
        adapt=run_init,
        atol=0.05,  # draws in another order give other samples: a few percent apart
        rtol=0.05,
        returns=INIT_STATISTICS,
        mistakes=(
            Mistake(
                "fan-out",
                "your standard deviations use each layer's number of outputs, not of inputs. "
                "What keeps an output's variance is the number of terms it sums, the layer's "
                "inputs; a linear layer stores its weight as [out, in].",
                _init_with(
                    lambda n, m, g: (
                        (g if n.endswith("mlp.down") else 1.0) / math.sqrt(m.out_features)
                    )
                ),
                fix="fan_in = module.weight.shape[1] (or module.in_features)",
            ),
            Mistake(
                "variance-for-std",
                "your weights are far too small: 1/fan_in is the variance the weights need; the "
                "standard deviation is its square root.",
                _init_with(lambda n, m, g: (g if n.endswith("mlp.down") else 1.0) / m.in_features),
                fix="std = gain / math.sqrt(fan_in)",
            ),
            Mistake(
                "gain-forgotten",
                "the layer after the GELU has no gain: GELU keeps only part of its input's "
                "second moment, so without the gain every MLP hands on a smaller signal than it "
                "received.",
                _init_with(lambda n, m, g: 1 / math.sqrt(m.in_features)),
                fix="std = gain_after_gelu / math.sqrt(fan_in) for the layer named ...mlp.down",
            ),
            Mistake(
                "he-default-gain",
                "every linear layer has a standard deviation of 1.41 over the square root of "
                "its fan-in, whatever it reads: the default gain of He (Kaiming) "
                "initialisation, √2, meant for a ReLU, which keeps half of its input's second "
                "moment. Here only the layer that reads the GELU's output needs a gain, the one "
                "you were given; the others read a signal of unit size already.",
                _init_with(lambda n, m, g: math.sqrt(2) / math.sqrt(m.in_features)),
                fix="kaiming_normal_'s default nonlinearity gives gain √2; draw "
                "std = gain_after_gelu / math.sqrt(fan_in) on mlp.down and 1 / math.sqrt(fan_in) "
                "elsewhere",
            ),
            Mistake(
                "gain-everywhere",
                "you applied the gain to every linear layer. Only the layer that reads the "
                "GELU's output needs it; the others read a signal of unit size already.",
                _init_with(lambda n, m, g: g / math.sqrt(m.in_features)),
                fix="the gain only where the module's name ends with mlp.down",
            ),
            Mistake(
                "gain-before-gelu",
                "the gain sits on the MLP's first layer, before the GELU. It must undo what the "
                "GELU takes away, so it belongs to the layer that reads the GELU's output.",
                _init_with(
                    lambda n, m, g: (g if n.endswith("mlp.up") else 1.0) / math.sqrt(m.in_features)
                ),
                fix="the gain on mlp.down, not mlp.up",
            ),
            Mistake(
                "embeddings-untouched",
                "the embedding tables kept their small initial values: the stream starts from "
                "them, so they must have unit size too.",
                _init_with(_right_std, embeddings=False),
                fix="nn.init.normal_(module.weight, std=1.0) for every nn.Embedding",
            ),
            Mistake(
                "blocks-only",
                "you re-initialised the blocks but not the embedding tables nor the "
                "unembedding, which sit outside them.",
                _init_with(_right_std, blocks_only=True),
                fix="loop over model.named_modules(), not the blocks' modules",
            ),
            Mistake(
                "lm-head-untouched",
                "the unembedding, the last linear layer that turns the stream into logits, kept "
                "its initial weights. It sits outside the blocks but is a linear layer like "
                "the others: its weights too get variance 1 over its fan-in (with no gain, as "
                "it reads the stream, not a GELU's output).",
                _init_with(_right_std, lm_head=False),
                fix="re-initialise every nn.Linear of model.named_modules(), lm_head included",
            ),
            Mistake(
                "biases-kept",
                "the biases kept what they held: set every linear layer's bias to zero, so that "
                "each output starts as the weighted sum alone.",
                _init_with(_right_std, zero_biases=False),
                fix="nn.init.zeros_(module.bias) where a layer has one",
            ),
            Mistake(
                "not-in-place",
                "the model you were given is unchanged. Re-initialise its own layers in place, "
                "as the experiment uses the model it handed to you.",
                lambda model, gain: None,
                fix="write into module.weight with the nn.init functions",
            ),
        ),
        hints=(
            "A linear layer's output entry sums fan_in products of weight and input; with "
            "weights of variance 1/fan_in and inputs of unit second moment, that sum has unit "
            "variance too. GELU keeps only part of its input's second moment, so the layer "
            "reading its output needs a gain on top.",
            "A linear layer stores its weight as [out_features, in_features]: the fan-in is the "
            "second size. Draw each linear weight from a normal distribution of standard "
            "deviation gain/√fan_in (the gain only on the MLP's down projection), set biases "
            "to 0, draw the embedding tables with standard deviation 1, and leave the "
            "LayerNorms alone.",
        ),
    )
)


# ---------------------------------------------------------------- stream_readout


def _streams(model, idx, chained=True, positions=True):
    """The stream at every stage: the embeddings, then after each block. [L+1] of [B, T, d]"""
    x = model.tok_emb(idx)
    if positions:
        x = x + model.pos_emb(torch.arange(idx.shape[1]))
    streams = [x]
    for block in model.blocks:
        streams.append(block(streams[-1] if chained else x))
    return streams


def _read(model, streams, targets, final_norm=True, reduction="mean", against=None):
    losses, accuracies = [], []
    for stream in streams:
        logits = model.lm_head(model.ln_f(stream) if final_norm else stream)  # [B, T, V]
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction=reduction)
        losses.append(loss)
        right = logits.argmax(dim=-1) == (targets if against is None else against)
        accuracies.append(right.float().mean())
    return torch.stack(losses), torch.stack(accuracies)


@torch.no_grad()
def _stream_readout(model, idx, targets):
    """Reference: the stream after the embeddings and after each block, each read through the
    final LayerNorm and the unembedding. idx, targets [B, T] → (losses [L+1], accuracies [L+1])"""
    return _read(model, _streams(model, idx), targets)


@torch.no_grad()
def _probabilities_scored(model, idx, targets):
    losses, accuracies = [], []
    for stream in _streams(model, idx):
        probs = model.lm_head(model.ln_f(stream)).softmax(dim=-1)
        losses.append(F.cross_entropy(probs.flatten(0, 1), targets.flatten()))
        accuracies.append((probs.argmax(dim=-1) == targets).float().mean())
    return torch.stack(losses), torch.stack(accuracies)


def readout_inputs(g: torch.Generator) -> list[tuple]:
    """(model, idx [B, T], targets [B, T]): small GPTs in eval mode with weights large enough
    that every stage predicts something different (GPT-2's 0.02 leaves every stage near a
    uniform guess), one tied and bias-free with windows shorter than its context, and one of
    the shipped model's shape fed windows of 128 as the notebook does."""
    cases = []
    shapes = (
        (GPTConfig(vocab_size=11, d_model=16, n_heads=2, n_layers=2, max_len=8), (2, 8)),
        (
            GPTConfig(vocab_size=13, d_model=16, n_heads=4, n_layers=3, max_len=16,
                      tie_weights=True, bias=False),
            (3, 5),
        ),
        (GPTConfig(vocab_size=65, d_model=128, n_heads=4, n_layers=4, max_len=128), (2, 128)),
    )  # fmt: skip
    for config, (B, T) in shapes:
        torch.manual_seed(int(torch.randint(0, 2**31, (1,), generator=g)))
        model = GPT(config).eval()
        with torch.no_grad():
            for p in model.parameters():
                if p.dim() == 2:
                    p.normal_(0.0, 0.5)
        ids = torch.randint(0, config.vocab_size, (B, T + 1), generator=g)
        cases.append((model, ids[:, :-1], ids[:, 1:]))
    return cases


def accuracies_are_shares(out, *_: object) -> str | None:
    if bool(((out[1] >= 0) & (out[1] <= 1)).all()):
        return None
    return "an accuracy is a share of positions, between 0 and 1"


register(
    Exercise(
        name="stream_readout",
        notebook="05",
        reference=_stream_readout,
        make_inputs=readout_inputs,
        atol=1e-5,
        rtol=1e-4,
        returns=("losses", "accuracies"),
        properties=(
            Property(
                "accuracies",
                accuracies_are_shares,
            ),
        ),
        mistakes=(
            Mistake(
                "no-final-norm",
                "you read each stream through the unembedding alone. The model reads its last "
                "stream through its final LayerNorm first; reading an earlier stream the way the "
                "model reads its last one means normalising it first as well.",
                torch.no_grad()(lambda m, i, t: _read(m, _streams(m, i), t, final_norm=False)),
                fix="logits = model.lm_head(model.ln_f(stream))",
            ),
            Mistake(
                "positions-forgotten",
                "your stream starts from the token embeddings alone: the model adds each "
                "position's learned vector to its token's before the first block.",
                torch.no_grad()(lambda m, i, t: _read(m, _streams(m, i, positions=False), t)),
                fix="x = model.tok_emb(idx) + model.pos_emb(torch.arange(idx.shape[1]))",
            ),
            Mistake(
                "blocks-not-chained",
                "each of your blocks read the embeddings rather than the stream the block before "
                "it left: the stream flows through the blocks in turn, each reading what the "
                "previous one returned.",
                torch.no_grad()(lambda m, i, t: _read(m, _streams(m, i, chained=False), t)),
                fix="x = block(x) inside the loop, keeping each x",
            ),
            Mistake(
                "embeddings-left-out",
                "your stages start after block 1. The first stage is the stream before any "
                "block, the embeddings, so there is one more stage than there are blocks.",
                torch.no_grad()(lambda m, i, t: _read(m, _streams(m, i)[1:], t)),
                fix="start the list of streams with the embeddings, before the loop over blocks",
            ),
            Mistake(
                "loss-summed",
                "your loss adds up the cross-entropy of every position: the model's loss is "
                "the mean over positions, which does not grow with the batch.",
                torch.no_grad()(lambda m, i, t: _read(m, _streams(m, i), t, reduction="sum")),
                fix="F.cross_entropy's default reduction, the mean",
            ),
            Mistake(
                "probabilities-scored",
                "you passed probabilities to the cross-entropy, which applies its own softmax: "
                "it wants the raw logits.",
                _probabilities_scored,
                fix="F.cross_entropy(logits.flatten(0, 1), targets.flatten()), without softmax",
            ),
            Mistake(
                "accuracy-against-inputs",
                "your accuracy compares each prediction with the token at its own position. "
                "Each position predicts the next character, which is what the targets hold.",
                torch.no_grad()(lambda m, i, t: _read(m, _streams(m, i), t, against=i)),
                fix="(logits.argmax(dim=-1) == targets).float().mean()",
            ),
        ),
        hints=(
            "The stream starts as each token's embedding plus its position's, and every block "
            "hands the next one the stream it returns. Keep every stage, the embeddings "
            "included: one more stage than blocks.",
            "Read each stage as the model reads its last one: its final LayerNorm, then its "
            "unembedding, giving logits [B, T, V]. Score them with the mean cross-entropy "
            "against the targets over every position, and count how often the largest logit "
            "sits on the target.",
        ),
    )
)
