"""Exercises of notebook 06: LayerNorm written out, and a Pre-LN block."""

from __future__ import annotations

import torch
from torch import nn

from gptlib.attention import CausalSelfAttention
from gptlib.blocks import MLP, LayerNorm, layer_norm
from gptlib.lessons.checks.core import Exercise, Mistake, Property, register

# ---------------------------------------------------------------- layer_norm


def _layer_norm_inputs(g: torch.Generator) -> list[tuple]:
    """float64, so that any correct formula agrees with the reference to ~1e-12.

    The last token is the lesson's edge: nearly constant in the first case (variance ~1e-6,
    comparable to eps, so where and how eps enters shows), exactly constant in the second
    (variance 0: only eps keeps the division finite).
    """
    cases = []
    for (B, T, d), spread in (((2, 3, 8), 1e-3), ((1, 4, 16), 0.0)):
        x = 3.0 * torch.randn(B, T, d, generator=g, dtype=torch.float64) + 1.0
        x[:, -1] = spread * torch.randn(B, d, generator=g, dtype=torch.float64) + 2.0
        gamma = 1.0 + 0.5 * torch.randn(d, generator=g, dtype=torch.float64)
        beta = 0.5 * torch.randn(d, generator=g, dtype=torch.float64)
        cases.append((x, gamma, beta, 1e-5))
    return cases


def _zero_mean_per_token(out, x, gamma, beta, eps):
    normalised = (out - beta) / gamma
    worst = normalised.mean(dim=-1).abs().max().item()
    if worst > 1e-3:
        return (
            f"after undoing γ and β, a token's features should average 0, but one averages "
            f"{worst:.3g}; subtract each token's mean over its own d features (the last axis)"
        )
    return None


def _nearly_unit_variance(out, x, gamma, beta, eps):
    normalised = ((out - beta) / gamma)[:, :-1]  # the last token is nearly constant: skip it
    variance = normalised.pow(2).mean(dim=-1)
    worst = (variance - 1).abs().max().item()
    if worst > 1e-3:
        return (
            f"after undoing γ and β, a token's features should have variance 1, but one is off "
            f"by {worst:.3g}"
        )
    return None


def _normalise(x, mean, var, eps):
    return (x - mean) / torch.sqrt(var + eps)


register(
    Exercise(
        name="layer_norm",
        notebook="06",
        reference=layer_norm,
        make_inputs=_layer_norm_inputs,
        properties=(
            Property("zero mean", _zero_mean_per_token),
            Property("unit variance", _nearly_unit_variance),
        ),
        mistakes=(
            Mistake(
                "unbiased-variance",
                "you used the unbiased variance (dividing by d − 1). LayerNorm divides by d: "
                "use x.var(dim=-1, unbiased=False, keepdim=True) or ((x - mean)**2).mean(-1).",
                lambda x, g, b, eps: (
                    g * _normalise(x, x.mean(-1, keepdim=True), x.var(-1, keepdim=True), eps) + b
                ),
            ),
            Mistake(
                "eps-outside-sqrt",
                "ε sits outside the square root. It belongs inside: divide by "
                "sqrt(var + eps), not sqrt(var) + eps. The difference shows on a nearly "
                "constant token, whose variance is comparable to ε.",
                lambda x, g, b, eps: (
                    g
                    * (x - x.mean(-1, keepdim=True))
                    / (x.var(-1, unbiased=False, keepdim=True).sqrt() + eps)
                    + b
                ),
            ),
            Mistake(
                "no-eps",
                "ε is missing: divide by sqrt(var + eps). Without it a constant token divides "
                "by zero.",
                lambda x, g, b, eps: (
                    g
                    * (x - x.mean(-1, keepdim=True))
                    / x.var(-1, unbiased=False, keepdim=True).sqrt()
                    + b
                ),
            ),
            Mistake(
                "variance-floor",
                "you used max(var, eps) as a floor under the variance; LayerNorm adds eps: "
                "divide by sqrt(var + eps). The two differ whenever var is comparable to eps, "
                "as on a nearly constant token.",
                lambda x, g, b, eps: (
                    g
                    * (x - x.mean(-1, keepdim=True))
                    / x.var(-1, unbiased=False, keepdim=True).clamp_min(eps).sqrt()
                    + b
                ),
            ),
            Mistake(
                "std-for-variance",
                "you added ε to the standard deviation and took another square root: "
                "divide by sqrt(var + eps), where var is the mean squared deviation.",
                lambda x, g, b, eps: (
                    g
                    * _normalise(
                        x, x.mean(-1, keepdim=True), x.std(-1, unbiased=False, keepdim=True), eps
                    )
                    + b
                ),
            ),
            Mistake(
                "wrong-axis",
                "you normalised across positions (axis -2). LayerNorm normalises each token "
                "over its own d features: take mean and variance over the last axis (dim=-1).",
                lambda x, g, b, eps: (
                    g
                    * _normalise(
                        x, x.mean(-2, keepdim=True), x.var(-2, unbiased=False, keepdim=True), eps
                    )
                    + b
                ),
            ),
            Mistake(
                "whole-tensor",
                "you took one mean and variance over the whole tensor. Each token gets its own: "
                "reduce over the last axis only (dim=-1, keepdim=True).",
                lambda x, g, b, eps: g * _normalise(x, x.mean(), x.var(unbiased=False), eps) + b,
            ),
            Mistake(
                "no-affine",
                "γ and β are missing: after normalising, scale by gamma and shift by beta.",
                lambda x, g, b, eps: _normalise(
                    x, x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True), eps
                ),
            ),
            Mistake(
                "affine-before-normalise",
                "γ and β were applied before normalising, so normalising undid them. "
                "Normalise first, then gamma * x_hat + beta.",
                lambda x, g, b, eps: _normalise(
                    g * x + b,
                    (g * x + b).mean(-1, keepdim=True),
                    (g * x + b).var(-1, unbiased=False, keepdim=True),
                    eps,
                ),
            ),
        ),
        hint="mean and biased variance over the last axis; (x − mean) / sqrt(var + eps); "
        "then gamma * x_hat + beta.",
    )
)

# ---------------------------------------------------------------- pre_ln_block


class _Sublayer(nn.Module):
    """Wraps CausalSelfAttention so it returns only its output [B, T, d]."""

    def __init__(self, attn: CausalSelfAttention) -> None:
        super().__init__()
        self.attn = attn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.attn(x)


def _randomise(module: nn.Module, g: torch.Generator, scale: float) -> nn.Module:
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(scale * torch.randn(p.shape, generator=g))
    return module


def _block_inputs(g: torch.Generator) -> list[tuple]:
    d, h = 16, 4
    cases = []
    for B, T in ((2, 5), (1, 7)):
        x = 2.0 * torch.randn(B, T, d, generator=g)
        ln1 = _randomise(LayerNorm(d), g, 0.5)
        ln2 = _randomise(LayerNorm(d), g, 0.5)
        attn = _Sublayer(_randomise(CausalSelfAttention(d, h), g, 0.3))
        mlp = _randomise(MLP(d), g, 0.3)
        cases.append((x, ln1, attn, ln2, mlp))
    return cases


def _pre_ln(x, ln1, attn, ln2, mlp):
    """Reference: x + attn(ln1(x)), then + mlp(ln2(·)); [B, T, d] → [B, T, d]."""
    x = x + attn(ln1(x))
    return x + mlp(ln2(x))


register(
    Exercise(
        name="pre_ln_block",
        notebook="06",
        reference=_pre_ln,
        make_inputs=_block_inputs,
        mistakes=(
            Mistake(
                "post-ln-order",
                "that is the Post-LN order, x = LN(x + F(x)). A Pre-LN block normalises only "
                "the sublayer's input and adds its output to the untouched stream: "
                "x = x + attn(ln1(x)), then x = x + mlp(ln2(x)).",
                lambda x, ln1, attn, ln2, mlp: (lambda h: ln2(h + mlp(h)))(ln1(x + attn(x))),
            ),
            Mistake(
                "residual-missing",
                "the residual connections are missing: add each sublayer's output to its "
                "input, x = x + attn(ln1(x)), then x = x + mlp(ln2(x)).",
                lambda x, ln1, attn, ln2, mlp: mlp(ln2(attn(ln1(x)))),
            ),
            Mistake(
                "normalised-stream",
                "you added the sublayer's output to the normalised x. The residual path must "
                "carry x itself: x = x + attn(ln1(x)), not ln1(x) + attn(ln1(x)).",
                lambda x, ln1, attn, ln2, mlp: (lambda h: ln2(h) + mlp(ln2(h)))(
                    ln1(x) + attn(ln1(x))
                ),
            ),
            Mistake(
                "one-norm-for-both",
                "both sublayers use ln1. Each has its own LayerNorm with its own γ and β: "
                "ln1 before attention, ln2 before the MLP.",
                lambda x, ln1, attn, ln2, mlp: (lambda h: h + mlp(ln1(h)))(x + attn(ln1(x))),
            ),
            Mistake(
                "mlp-reads-old-stream",
                "the MLP reads the stream from before attention wrote into it. Update x "
                "first (x = x + attn(ln1(x))), then feed the new x to ln2 and the MLP.",
                lambda x, ln1, attn, ln2, mlp: x + attn(ln1(x)) + mlp(ln2(x)),
            ),
            Mistake(
                "mlp-first",
                "the sublayers are in the wrong order: attention (tokens exchange information) "
                "comes first, then the MLP.",
                lambda x, ln1, attn, ln2, mlp: (lambda h: h + attn(ln1(h)))(x + mlp(ln2(x))),
            ),
        ),
        hint="two lines: x = x + attn(ln1(x)); then return x + mlp(ln2(x)).",
    )
)
