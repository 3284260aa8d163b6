"""Exercises of notebook 05: the feed-forward network and its parameter count."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from gptlib.lessons.checks.core import Exercise, Mistake, Property, register

# ---------------------------------------------------------------- feed_forward


def _ffn(x, w_up, b_up, w_down, b_down):
    """Reference: GELU(x W_up + b_up) W_down + b_down, x [B, T, d] → [B, T, d]."""
    return F.gelu(x @ w_up + b_up) @ w_down + b_down


def _ffn_inputs(g: torch.Generator) -> list[tuple]:
    cases = []
    for B, T, d in ((2, 3, 4), (1, 5, 8)):
        x = torch.randn(B, T, d, generator=g)
        x[:, 1] = x[:, 0]  # two positions hold the same vector
        w_up = torch.randn(d, 4 * d, generator=g) / d**0.5
        b_up = 0.5 * torch.randn(4 * d, generator=g)
        w_down = torch.randn(4 * d, d, generator=g) / (4 * d) ** 0.5
        b_down = 0.5 * torch.randn(d, generator=g)
        cases.append((x, w_up, b_up, w_down, b_down))
    return cases


def _same_vector_same_output(out, x, *_):
    if not torch.allclose(out[:, 0], out[:, 1], atol=1e-5):
        return (
            "positions 0 and 1 hold the same vector but got different outputs; the MLP must "
            "treat every position on its own, with the same weights"
        )
    return None


register(
    Exercise(
        name="feed_forward",
        notebook="05",
        reference=_ffn,
        make_inputs=_ffn_inputs,
        properties=(Property("position-wise", _same_vector_same_output),),
        mistakes=(
            Mistake(
                "relu",
                "you used ReLU. GPT-2's MLP uses GELU (F.gelu): ReLU sets every negative input "
                "to exactly 0, GELU lets small negative values through smoothly.",
                lambda x, wu, bu, wd, bd: F.relu(x @ wu + bu) @ wd + bd,
            ),
            Mistake(
                "gelu-tanh",
                "close: you used the tanh approximation of GELU. Use the exact form, "
                "F.gelu(h) with its default approximate='none' (what gptlib's MLP uses).",
                lambda x, wu, bu, wd, bd: F.gelu(x @ wu + bu, approximate="tanh") @ wd + bd,
            ),
            Mistake(
                "no-activation",
                "there is no nonlinearity between the two layers, so they collapse into one "
                "linear map (x W_up W_down). Apply F.gelu to the hidden layer.",
                lambda x, wu, bu, wd, bd: (x @ wu + bu) @ wd + bd,
            ),
            Mistake(
                "activation-on-output",
                "you also applied GELU after the second layer. The nonlinearity belongs only "
                "to the 4d-wide hidden layer; the output goes back into the residual stream "
                "as a plain linear projection.",
                lambda x, wu, bu, wd, bd: F.gelu(F.gelu(x @ wu + bu) @ wd + bd),
            ),
            Mistake(
                "no-biases",
                "the biases are missing: add b_up to the hidden layer (before GELU) and "
                "b_down to the output.",
                lambda x, wu, bu, wd, bd: F.gelu(x @ wu) @ wd,
            ),
            Mistake(
                "bias-after-activation",
                "b_up is added after GELU; it belongs inside: GELU(x W_up + b_up).",
                lambda x, wu, bu, wd, bd: (F.gelu(x @ wu) + bu) @ wd + bd,
            ),
        ),
        hint="hidden = GELU(x @ w_up + b_up), output = hidden @ w_down + b_down.",
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
        hint="count W_up (d × 4d), W_down (4d × d), and with bias=True b_up (4d) and b_down (d).",
    )
)
