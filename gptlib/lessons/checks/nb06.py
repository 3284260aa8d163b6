"""Exercises of notebook 06: LayerNorm written out, and a block's forward pass in both norm
placements (Pre-LN is the block the capstone of notebook 07 asks for)."""

from __future__ import annotations

import torch
from torch import nn

from gptlib.lessons.checks.core import Exercise, Mistake, Property, register
from gptlib.model import MLP, CausalSelfAttention, layer_norm

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
            f"{worst:z.3g}; subtract each token's mean over its own d features (the last axis)"
        )
    return None


def _nearly_unit_variance(out, x, gamma, beta, eps):
    normalised = ((out - beta) / gamma)[:, :-1]  # the last token is nearly constant: skip it
    variance = normalised.pow(2).mean(dim=-1)
    worst = (variance - 1).abs().max().item()
    if worst > 1e-3:
        return (
            f"after undoing γ and β, a token's features should have variance 1, but one is off "
            f"by {worst:z.3g}"
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
        hints=(
            "Normalise each position's vector on its own: over the feature axis (the last one) "
            "only, to mean 0 and variance 1, then scale by the learned γ and shift by β.",
            "Use the biased variance (divide by d, not d − 1), as nn.LayerNorm does, and put "
            "eps inside the square root; keep the dimension of the mean and variance so that "
            "they broadcast back.",
        ),
    )
)

# ---------------------------------------------------------------- block_forward


def _randomise(module: nn.Module, g: torch.Generator, scale: float) -> nn.Module:
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(scale * torch.randn(p.shape, generator=g))
    return module


def _block_inputs(g: torch.Generator) -> list[tuple]:
    """(x, ln1, attn, ln2, mlp, norm): Pre-LN cases first, then Post-LN, random sublayers."""
    d, h = 16, 4
    cases = []
    for norm, (B, T) in (("pre", (2, 5)), ("pre", (1, 7)), ("post", (2, 5)), ("post", (1, 7))):
        x = 2.0 * torch.randn(B, T, d, generator=g) + 0.5
        ln1 = _randomise(nn.LayerNorm(d), g, 0.5)
        ln2 = _randomise(nn.LayerNorm(d), g, 0.5)
        attn = _randomise(CausalSelfAttention(d, h), g, 0.3)
        mlp = _randomise(MLP(d), g, 0.3)
        cases.append((x, ln1, attn, ln2, mlp, norm))
    return cases


def _pre(x, ln1, attn, ln2, mlp):
    x = x + attn(ln1(x))
    return x + mlp(ln2(x))


def _post(x, ln1, attn, ln2, mlp):
    x = ln1(x + attn(x))
    return ln2(x + mlp(x))


def _block_forward(x, ln1, attn, ln2, mlp, norm):
    """Reference: one block, [B, T, d] → [B, T, d]. norm="pre": x + F(LN(x)) for each
    sublayer; norm="post": LN(x + F(x))."""
    if norm not in ("pre", "post"):
        raise ValueError(f"norm must be 'pre' or 'post', got {norm!r}")
    return (_pre if norm == "pre" else _post)(x, ln1, attn, ln2, mlp)


def _pre_ln_wrong(wrong_pre):
    """A mistake made in the Pre-LN branch only; the Post-LN branch is right."""
    return lambda x, ln1, attn, ln2, mlp, norm: (
        wrong_pre(x, ln1, attn, ln2, mlp) if norm == "pre" else _post(x, ln1, attn, ln2, mlp)
    )


def _both_wrong(wrong_pre, wrong_post):
    return lambda x, ln1, attn, ln2, mlp, norm: (wrong_pre if norm == "pre" else wrong_post)(
        x, ln1, attn, ln2, mlp
    )


register(
    Exercise(
        name="block_forward",
        notebook="06",
        reference=_block_forward,
        make_inputs=_block_inputs,
        mistakes=(
            Mistake(
                "post-ln-where-pre-ln",
                "with norm='pre' your block computes the Post-LN order, x = LN(x + F(x)). "
                "Pre-LN normalises only the sublayer's input and adds its output to the "
                "untouched stream: x = x + attn(ln1(x)), then x = x + mlp(ln2(x)).",
                lambda x, ln1, attn, ln2, mlp, norm: _post(x, ln1, attn, ln2, mlp),
            ),
            Mistake(
                "pre-ln-where-post-ln",
                "with norm='post' your block computes the Pre-LN order. Post-LN (the original "
                "Transformer) normalises after adding: x = ln1(x + attn(x)), then "
                "x = ln2(x + mlp(x)).",
                lambda x, ln1, attn, ln2, mlp, norm: _pre(x, ln1, attn, ln2, mlp),
            ),
            Mistake(
                "no-residual-around-attention",
                "the residual connection around attention is missing: attention's output "
                "replaces the stream instead of being added to it. Pre-LN: x = x + "
                "attn(ln1(x)); Post-LN: x = ln1(x + attn(x)).",
                _both_wrong(
                    lambda x, ln1, attn, ln2, mlp: (lambda h: h + mlp(ln2(h)))(attn(ln1(x))),
                    lambda x, ln1, attn, ln2, mlp: (lambda h: ln2(h + mlp(h)))(ln1(attn(x))),
                ),
            ),
            Mistake(
                "no-residual-around-mlp",
                "the residual connection around the MLP is missing: its output replaces the "
                "stream instead of being added to it. Pre-LN: x = x + mlp(ln2(x)); Post-LN: "
                "x = ln2(x + mlp(x)).",
                _both_wrong(
                    lambda x, ln1, attn, ln2, mlp: mlp(ln2(x + attn(ln1(x)))),
                    lambda x, ln1, attn, ln2, mlp: ln2(mlp(ln1(x + attn(x)))),
                ),
            ),
            Mistake(
                "norm-on-sublayer-output",
                "LayerNorm is applied to the sublayer's output, x = x + ln1(attn(x)). In Pre-LN "
                "it normalises the sublayer's input: x = x + attn(ln1(x)).",
                _pre_ln_wrong(
                    lambda x, ln1, attn, ln2, mlp: (lambda h: h + ln2(mlp(h)))(x + ln1(attn(x)))
                ),
            ),
            Mistake(
                "normalised-stream",
                "you added the sublayer's output to the normalised x. The residual path must "
                "carry x itself: x = x + attn(ln1(x)), not ln1(x) + attn(ln1(x)).",
                _pre_ln_wrong(
                    lambda x, ln1, attn, ln2, mlp: (lambda h: ln2(h) + mlp(ln2(h)))(
                        ln1(x) + attn(ln1(x))
                    )
                ),
            ),
            Mistake(
                "one-norm-for-both",
                "both sublayers use ln1. Each has its own LayerNorm with its own γ and β: "
                "ln1 for attention, ln2 for the MLP.",
                _both_wrong(
                    lambda x, ln1, attn, ln2, mlp: (lambda h: h + mlp(ln1(h)))(x + attn(ln1(x))),
                    lambda x, ln1, attn, ln2, mlp: (lambda h: ln1(h + mlp(h)))(ln1(x + attn(x))),
                ),
            ),
            Mistake(
                "mlp-reads-old-stream",
                "the MLP reads the stream from before attention wrote into it. Update x first "
                "(x = x + attn(ln1(x))), then feed the new x to ln2 and the MLP.",
                _pre_ln_wrong(lambda x, ln1, attn, ln2, mlp: x + attn(ln1(x)) + mlp(ln2(x))),
            ),
        ),
        hints=(
            "Both placements add each sublayer's output to the stream it read. They differ in "
            "where the LayerNorm sits: Pre-LN normalises what enters each sublayer and never "
            "the stream itself; Post-LN normalises the stream after each addition.",
            "Pre-LN: each sublayer reads its own norm of the stream, and its output is added to "
            "the unnormalised stream. Post-LN: each sublayer reads the stream itself, and the "
            "norm is applied to the sum.",
        ),
    )
)
