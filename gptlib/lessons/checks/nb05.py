"""Exercises of notebook 05: the MLP as a module (notebook 07 restates it for the capstone)
and its parameter count."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from gptlib.lessons.checks.core import CheckError, Exercise, Mistake, Property, register
from gptlib.model import MLP

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
    def __init__(self, d_model):
        super().__init__()
        self.up, self.down = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


HIDDEN_WIDTH_D = Mistake(
    "hidden-width-d",
    "your hidden layer is d_model wide. The MLP widens each vector to 4·d_model and narrows it "
    "back: up = nn.Linear(d_model, 4 * d_model), down = nn.Linear(4 * d_model, d_model).",
    _HiddenWidthD,
)
MLP_LAYERS = ("up", "down")


def _load_weights(
    module: nn.Module, weights: dict[str, torch.Tensor], d_model: int, exercise: str
) -> None:
    """Copy gptlib's MLP weights into the student's module by name; a missing layer, an extra
    parameter or a wrong shape is a `CheckError` of `exercise` saying which."""
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
        raise CheckError(exercise, HIDDEN_WIDTH_D.message, HIDDEN_WIDTH_D.name)
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
        _load_weights(module, weights, d_model, exercise)
        with torch.no_grad():
            return module(x)

    return run


def _same_vector_same_output(out, d_model, x, weights):
    if not torch.allclose(out[:, 0], out[:, 1], atol=1e-5):
        return (
            "positions 0 and 1 hold the same vector but got different outputs; the MLP must "
            "treat every position on its own, with the same weights"
        )
    return None


# The module's catalogue: notebook 07 asks for the MLP again and meets the same mistakes.
MLP_MISTAKES = (
    Mistake(
        "no-activation",
        "there is no nonlinearity between the two layers, so they collapse into one "
        "linear map. Apply F.gelu to the 4·d_model-wide hidden layer: "
        "self.down(F.gelu(self.up(x))).",
        _NoActivation,
    ),
    Mistake(
        "relu",
        "you used ReLU, the original Transformer's choice. The chapter's GPT (like "
        "GPT-2 and gptlib) uses GELU: F.gelu, which lets small negative values through "
        "smoothly where ReLU sets them to exactly 0.",
        _ReLU,
    ),
    Mistake(
        "gelu-tanh",
        "close, and not wrong in itself: you used GELU's tanh approximation, "
        "0.5·h·(1 + tanh(√(2/π)·(h + 0.044715·h³))), the one GPT-2 was trained with. It "
        "differs from the exact GELU by at most 4.7e-4 (near h = ±2.7), more than this check "
        "allows. The chapter's code and gptlib use the exact form, F.gelu with its default "
        "approximate='none'; gptlib.GPTConfig(gelu=\"tanh\") is there to load GPT-2's weights.",
        _TanhGELU,
    ),
    HIDDEN_WIDTH_D,
    Mistake(
        "activation-after-down",
        "GELU is applied after the down projection. It belongs between the two layers, "
        "on the 4·d_model-wide hidden vector; the output goes back into the residual "
        "stream as a plain linear projection: self.down(F.gelu(self.up(x))).",
        _ActivationAfterDown,
    ),
    Mistake(
        "activation-on-output",
        "you also applied GELU after the down projection. The nonlinearity belongs only "
        "to the hidden layer; the output is a plain linear projection.",
        _ActivationTwice,
    ),
    Mistake(
        "no-biases",
        "your linear layers have no biases. The chapter's MLP keeps them (nn.Linear's "
        "default bias=True): 4·d_model in `up` and d_model in `down`.",
        _NoBiases,
    ),
)


register(
    Exercise(
        name="mlp",
        notebook="05",
        reference=MLP,
        make_inputs=mlp_inputs,
        adapt=run_mlp,
        properties=(Property("position-wise", _same_vector_same_output),),
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

# ---------------------------------------------------------------- ffn_parameter_count


def _ffn_count(d_model: int, bias: bool) -> int:
    """Reference: two matrices d×4d and 4d×d (8d²), plus biases 4d and d when bias=True."""
    return 8 * d_model**2 + (5 * d_model if bias else 0)


register(
    Exercise(
        name="ffn_parameter_count",
        notebook="05",
        reference=_ffn_count,
        make_inputs=lambda g: [(8, True), (128, True), (64, False)],
        atol=0.5,
        rtol=0.0,
        mistakes=(
            Mistake(
                "hidden-2d",
                "your count uses a hidden width of 2d. The classic MLP widens to d_ff = 4d: "
                "W_up is d × 4d and W_down is 4d × d.",
                lambda d, bias: 4 * d**2 + (3 * d if bias else 0),
            ),
            Mistake(
                "no-biases",
                "you left out the biases: with bias=True the hidden layer has 4d of them and "
                "the output layer d, 5d in all.",
                lambda d, bias: 8 * d**2,
            ),
            Mistake(
                "biases-ignore-flag",
                "with bias=False there are no bias vectors: return 8d² alone.",
                lambda d, bias: 8 * d**2 + 5 * d,
            ),
            Mistake(
                "both-biases-d",
                "the hidden layer's bias has 4d entries (one per hidden unit), not d: "
                "the biases total 4d + d = 5d.",
                lambda d, bias: 8 * d**2 + (2 * d if bias else 0),
            ),
            Mistake(
                "one-matrix",
                "that is 4d² (+4d): one d × 4d matrix, or attention's four d × d projections. "
                "The MLP has two matrices, d × 4d and 4d × d.",
                lambda d, bias: 4 * d**2 + (4 * d if bias else 0),
            ),
        ),
        hints=(
            "Count each linear layer as its weight matrix plus, when it has one, its bias "
            "vector; the MLP has two layers, d → 4d and 4d → d.",
            "A layer from m to n features has m·n weights and n biases; without biases only the "
            "two matrices count.",
        ),
    )
)
