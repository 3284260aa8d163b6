"""Exercises of notebook 06: LayerNorm written out, a block's forward pass in both norm
placements (Pre-LN is the block the capstone of notebook 07 asks for), and the two measurements
the lesson's section 3 runs on Pre-LN and Post-LN models at initialisation: each block's
gradient norm, and the size of the residual stream and of its gradient before and after
each block."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from gptlib.lessons.engine.checks.core import (
    Exercise,
    Mistake,
    Property,
    exercise_named,
    mistake_error,
    register,
)
from gptlib.lessons.engine.checks.delegation import Route
from gptlib.lessons.nb06 import experiments as npl
from gptlib.lessons.nb06.references import layer_norm
from gptlib.lessons.shared.references import loss_gradient_norms
from gptlib.lessons.shared.routes import BLOCK
from gptlib.model import MLP, CausalSelfAttention

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


def _normalise(x, mean, var, eps):
    return (x - mean) / torch.sqrt(var + eps)


def zero_mean_per_token(out, x, gamma, beta, eps):
    normalised = (out - beta) / gamma
    worst = normalised.mean(dim=-1).abs().max().item()
    if worst > 1e-3:
        return (
            f"after undoing γ and β, a token's features should average 0, but one averages "
            f"{worst:z.3g}; subtract each token's mean over its own d features (the last axis)"
        )
    return None


def nearly_unit_variance(out, x, gamma, beta, eps):
    normalised = ((out - beta) / gamma)[:, :-1]  # the last token is nearly constant: skip it
    variance = normalised.pow(2).mean(dim=-1)
    worst = (variance - 1).abs().max().item()
    if worst > 1e-3:
        return (
            f"after undoing γ and β, a token's features should have variance 1, but one is off "
            f"by {worst:z.3g}"
        )
    return None


register(
    Exercise(
        name="layer_norm",
        notebook="06",
        reference=layer_norm,
        forbidden=(
            Route(
                "aten::native_layer_norm",
                "torch's LayerNorm (`F.layer_norm`, `nn.LayerNorm`)",
                (
                    "the exercise asks for LayerNorm in plain tensor operations, so that you "
                    "place the mean, the variance and ε yourself."
                ),
            ),
            Route(
                "aten::native_group_norm",
                "torch's group norm",
                (
                    "with one group it is LayerNorm, which the exercise asks you to write in "
                    "plain tensor operations."
                ),
            ),
            Route(
                "aten::native_batch_norm",
                "torch's batch or instance norm",
                (
                    "on a reshaped input it is LayerNorm, which the exercise asks you to write in"
                    " plain tensor operations."
                ),
            ),
        ),
        make_inputs=_layer_norm_inputs,
        properties=(
            Property("zero mean", zero_mean_per_token),
            Property("unit variance", nearly_unit_variance),
        ),
        mistakes=(
            Mistake(
                "unbiased-variance",
                "you used the unbiased variance, dividing by d − 1. LayerNorm standardises the d "
                "numbers it is given rather than estimating a population's variance, so it divides "
                "by d: the mean of the squared deviations.",
                lambda x, g, b, eps: (
                    g * _normalise(x, x.mean(-1, keepdim=True), x.var(-1, keepdim=True), eps) + b
                ),
                fix="x.var(dim=-1, unbiased=False, keepdim=True), or ((x - mean) ** 2).mean(-1)",
            ),
            Mistake(
                "eps-outside-sqrt",
                "ε sits outside the square root. It belongs inside, added to the variance before "
                "the root is taken. The difference shows on a nearly constant token, whose "
                "variance is comparable to ε.",
                lambda x, g, b, eps: (
                    g
                    * (x - x.mean(-1, keepdim=True))
                    / (x.var(-1, unbiased=False, keepdim=True).sqrt() + eps)
                    + b
                ),
                fix="divide by torch.sqrt(var + eps), not torch.sqrt(var) + eps",
            ),
            Mistake(
                "no-eps",
                "ε is missing: without it a constant token, whose variance is 0, divides by "
                "zero. LayerNorm adds ε to the variance before taking the square root.",
                lambda x, g, b, eps: (
                    g
                    * (x - x.mean(-1, keepdim=True))
                    / x.var(-1, unbiased=False, keepdim=True).sqrt()
                    + b
                ),
                fix="divide by torch.sqrt(var + eps)",
            ),
            Mistake(
                "variance-floor",
                "you used ε as a floor under the variance; LayerNorm adds ε to it. The two "
                "differ whenever the variance is comparable to ε, as on a nearly constant token.",
                lambda x, g, b, eps: (
                    g
                    * (x - x.mean(-1, keepdim=True))
                    / x.var(-1, unbiased=False, keepdim=True).clamp_min(eps).sqrt()
                    + b
                ),
                fix="divide by torch.sqrt(var + eps), not var.clamp_min(eps).sqrt()",
            ),
            Mistake(
                "std-for-variance",
                "you added ε to the standard deviation and took another square root. ε goes "
                "with the variance, the mean squared deviation, under one square root.",
                lambda x, g, b, eps: (
                    g
                    * _normalise(
                        x, x.mean(-1, keepdim=True), x.std(-1, unbiased=False, keepdim=True), eps
                    )
                    + b
                ),
                fix="var = x.var(dim=-1, unbiased=False); divide by torch.sqrt(var + eps)",
            ),
            Mistake(
                "wrong-axis",
                "you normalised across positions. LayerNorm normalises each token over its own "
                "d features: the mean and the variance are taken over the feature axis.",
                lambda x, g, b, eps: (
                    g
                    * _normalise(
                        x, x.mean(-2, keepdim=True), x.var(-2, unbiased=False, keepdim=True), eps
                    )
                    + b
                ),
                fix="x.mean(dim=-1, keepdim=True) and x.var(dim=-1, unbiased=False, keepdim=True)",
            ),
            Mistake(
                "whole-tensor",
                "you took one mean and variance over the whole tensor. Each token gets its own, "
                "over its d features only, kept in a shape that broadcasts back.",
                lambda x, g, b, eps: g * _normalise(x, x.mean(), x.var(unbiased=False), eps) + b,
                fix="reduce over dim=-1 with keepdim=True",
            ),
            Mistake(
                "no-affine",
                "γ and β are missing: after normalising, LayerNorm scales each feature by its "
                "learned γ and shifts it by its β.",
                lambda x, g, b, eps: _normalise(
                    x, x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True), eps
                ),
                fix="return gamma * x_hat + beta",
            ),
            Mistake(
                "affine-before-normalise",
                "γ and β were applied before normalising, so normalising undid them. Normalise "
                "first, then scale and shift.",
                lambda x, g, b, eps: _normalise(
                    g * x + b,
                    (g * x + b).mean(-1, keepdim=True),
                    (g * x + b).var(-1, unbiased=False, keepdim=True),
                    eps,
                ),
                fix="x_hat = (x - mean) / torch.sqrt(var + eps); return gamma * x_hat + beta",
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


def _post_ln_wrong(wrong_post):
    """A mistake made in the Post-LN branch only; the Pre-LN branch is right."""
    return lambda x, ln1, attn, ln2, mlp, norm: (
        _pre(x, ln1, attn, ln2, mlp) if norm == "pre" else wrong_post(x, ln1, attn, ln2, mlp)
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
        forbidden=BLOCK,
        make_inputs=_block_inputs,
        mistakes=(
            Mistake(
                "post-ln-where-pre-ln",
                "with norm='pre' your block computes the Post-LN order, normalising the sum. "
                "Pre-LN normalises only what enters each sublayer and adds the sublayer's output "
                "to the untouched stream.",
                lambda x, ln1, attn, ln2, mlp, norm: _post(x, ln1, attn, ln2, mlp),
                fix="x = x + attn(ln1(x)); return x + mlp(ln2(x))",
            ),
            Mistake(
                "pre-ln-where-post-ln",
                "with norm='post' your block computes the Pre-LN order. Post-LN (the original "
                "Transformer) lets each sublayer read the stream itself and normalises after "
                "adding its output.",
                lambda x, ln1, attn, ln2, mlp, norm: _pre(x, ln1, attn, ln2, mlp),
                fix="x = ln1(x + attn(x)); return ln2(x + mlp(x))",
            ),
            Mistake(
                "no-residual-pre",
                "with norm='pre' (Pre-LN) your block adds neither sublayer's output to the "
                "stream: each output replaces the stream. Both sublayers sit inside a residual "
                "connection: the stream goes around each one, and the sublayer's output is added "
                "to it.",
                _pre_ln_wrong(lambda x, ln1, attn, ln2, mlp: mlp(ln2(attn(ln1(x))))),
                fix="x = x + attn(ln1(x)); return x + mlp(ln2(x))",
            ),
            Mistake(
                "no-residual-post",
                "with norm='post' (Post-LN) your block normalises each sublayer's output alone, "
                "so the stream is lost: both sublayers sit inside a residual connection, and "
                "Post-LN normalises the sum of the stream and the sublayer's output.",
                _post_ln_wrong(lambda x, ln1, attn, ln2, mlp: ln2(mlp(ln1(attn(x))))),
                fix="x = ln1(x + attn(x)); return ln2(x + mlp(x))",
            ),
            Mistake(
                "no-residual-around-attention-pre",
                "with norm='pre' (Pre-LN) the residual connection around attention is missing: "
                "attention's output replaces the stream instead of being added to it.",
                _pre_ln_wrong(
                    lambda x, ln1, attn, ln2, mlp: (lambda h: h + mlp(ln2(h)))(attn(ln1(x)))
                ),
                fix="x = x + attn(ln1(x))",
            ),
            Mistake(
                "no-residual-around-attention-post",
                "with norm='post' (Post-LN) the residual connection around attention is "
                "missing: the first norm gets attention's output alone instead of the stream "
                "plus attention's output.",
                _post_ln_wrong(
                    lambda x, ln1, attn, ln2, mlp: (lambda h: ln2(h + mlp(h)))(ln1(attn(x)))
                ),
                fix="x = ln1(x + attn(x))",
            ),
            Mistake(
                "no-residual-around-mlp-pre",
                "with norm='pre' (Pre-LN) the residual connection around the MLP is missing: "
                "its output replaces the stream instead of being added to it.",
                _pre_ln_wrong(lambda x, ln1, attn, ln2, mlp: mlp(ln2(x + attn(ln1(x))))),
                fix="return x + mlp(ln2(x))",
            ),
            Mistake(
                "no-residual-around-mlp-post",
                "with norm='post' (Post-LN) the residual connection around the MLP is missing: "
                "the second norm gets the MLP's output alone instead of the stream plus the "
                "MLP's output.",
                _post_ln_wrong(lambda x, ln1, attn, ln2, mlp: ln2(mlp(ln1(x + attn(x))))),
                fix="return ln2(x + mlp(x))",
            ),
            Mistake(
                "post-ln-norms-swapped",
                "with norm='post' (Post-LN) the two norms are swapped: the sum after attention "
                "goes through the MLP's norm and the sum after the MLP through attention's. "
                "Each norm belongs to its own sublayer, the first to attention, the second to "
                "the MLP, in both placements.",
                _post_ln_wrong(
                    lambda x, ln1, attn, ln2, mlp: (lambda h: ln1(h + mlp(h)))(ln2(x + attn(x)))
                ),
                fix="x = ln1(x + attn(x)); return ln2(x + mlp(x))",
            ),
            Mistake(
                "pre-ln-norms-swapped",
                "with norm='pre' (Pre-LN) the two norms are swapped: attention reads the MLP's "
                "norm of the stream and the MLP reads attention's. Each norm belongs to its own "
                "sublayer, the first to attention, the second to the MLP, in both placements.",
                _pre_ln_wrong(
                    lambda x, ln1, attn, ln2, mlp: (lambda h: h + mlp(ln1(h)))(x + attn(ln2(x)))
                ),
                fix="x = x + attn(ln1(x)); return x + mlp(ln2(x))",
            ),
            Mistake(
                "norm-after-sublayer-inside-residual",
                "with norm='post' your block normalises each sublayer's output inside the "
                "residual branch and adds it to the stream, which is never normalised (the "
                "OLMo 2 placement, x ← x + LN(F(x))). Post-LN, the original Transformer's, "
                "normalises the stream itself after each addition: the norm wraps the sum.",
                _post_ln_wrong(
                    lambda x, ln1, attn, ln2, mlp: (lambda h: h + ln2(mlp(h)))(x + ln1(attn(x)))
                ),
                fix="x = ln1(x + attn(x)); return ln2(x + mlp(x))",
            ),
            Mistake(
                "norm-on-sublayer-output",
                "with norm='pre' (Pre-LN) your block applies LayerNorm to each sublayer's output "
                "(the OLMo 2 placement, x ← x + LN(F(x))). Pre-LN normalises the sublayer's "
                "input, and the output goes into the stream as it is.",
                _pre_ln_wrong(
                    lambda x, ln1, attn, ln2, mlp: (lambda h: h + ln2(mlp(h)))(x + ln1(attn(x)))
                ),
                fix="x = x + attn(ln1(x)), not x + ln1(attn(x))",
            ),
            Mistake(
                "normalised-stream",
                "with norm='pre' (Pre-LN) you added the sublayer's output to the normalised "
                "stream. In Pre-LN the residual path carries the stream itself; only the "
                "sublayer reads the norm.",
                _pre_ln_wrong(
                    lambda x, ln1, attn, ln2, mlp: (lambda h: ln2(h) + mlp(ln2(h)))(
                        ln1(x) + attn(ln1(x))
                    )
                ),
                fix="x = x + attn(ln1(x)), not ln1(x) + attn(ln1(x))",
            ),
            Mistake(
                "one-norm-for-both",
                "both sublayers use the same LayerNorm. Each has its own, with its own γ and β: "
                "the first for attention, the second for the MLP.",
                _both_wrong(
                    lambda x, ln1, attn, ln2, mlp: (lambda h: h + mlp(ln1(h)))(x + attn(ln1(x))),
                    lambda x, ln1, attn, ln2, mlp: (lambda h: ln1(h + mlp(h)))(ln1(x + attn(x))),
                ),
                fix="ln1 for attention, ln2 for the MLP",
            ),
            Mistake(
                "mlp-reads-old-stream",
                "with norm='pre' (Pre-LN) the MLP reads the stream from before attention wrote "
                "into it. The two sublayers run one after the other: the MLP reads the stream "
                "attention updated.",
                _pre_ln_wrong(lambda x, ln1, attn, ln2, mlp: x + attn(ln1(x)) + mlp(ln2(x))),
                fix="x = x + attn(ln1(x)) first, then x = x + mlp(ln2(x)) on the new x",
            ),
        ),
        hints=(
            "Both placements add each sublayer's output to the stream it read. They differ in "
            "where the LayerNorm sits: Pre-LN normalises what enters each sublayer and never "
            "the stream itself; Post-LN normalises the stream after each addition.",
            "Pre-LN: each sublayer reads its own norm of the stream, and its output is added to "
            "the unnormalised stream. Post-LN: each sublayer reads the stream itself, and the "
            "norm is applied to the sum.",
            "Write one branch per placement, each with one step per sublayer, attention first. "
            "In both, the first norm goes with attention and the second with the MLP, and each "
            "step adds the sublayer's output to the stream it read (in Post-LN, inside the "
            "norm).",
        ),
    )
)

# ------------------------------------------ block_gradient_norms and stream_profile
# Both take a GPT of notebook 06 (`norm_placement.build_model`: Pre-LN or Post-LN, d = 32) and a
# batch. The checks build a fresh model for every call (through `adapt`), so that what one
# answer leaves in the parameters' .grad never reaches the next.


def _batch(g: torch.Generator, B: int, T: int) -> tuple[torch.Tensor, torch.Tensor]:
    ids = torch.randint(npl.VOCAB_SIZE, (B, T + 1), generator=g)
    return ids[:, :-1], ids[:, 1:]  # inputs, targets [B, T]


def _gradient_inputs(g: torch.Generator) -> list[tuple]:
    """(norm, n_layers, seed, stale, inputs, targets); `stale`: the model already holds the
    gradient of an earlier backward pass. The last case has the notebook's batch, [16, 32]."""
    return [
        ("pre", 2, 1, False, *_batch(g, 4, 8)),
        ("post", 3, 2, True, *_batch(g, 4, 8)),
        ("pre", 4, 3, True, *_batch(g, npl.BATCH_SIZE, npl.BLOCK_SIZE)),
    ]


def _stream_inputs(g: torch.Generator) -> list[tuple]:
    """(norm, n_layers, seed, stale, inputs, targets): Pre-LN first, where the final norm acts."""
    return [
        ("pre", 3, 1, False, *_batch(g, 4, 8)),
        ("post", 2, 2, False, *_batch(g, 2, 8)),
        ("pre", 4, 3, True, *_batch(g, npl.BATCH_SIZE, npl.BLOCK_SIZE)),
    ]


def _whole(grads: list[torch.Tensor]) -> torch.Tensor:
    """The norm of a block's gradients laid end to end."""
    return torch.cat(grads).norm()


def _per_block(model, size=_whole, of=lambda p: p.grad, keep=lambda p: True) -> torch.Tensor:
    """[L]: `size` of the list of each block's parameters' gradients (`of` each parameter,
    flattened, in float64), for the parameters `keep` accepts."""
    return torch.stack(
        [
            size([of(p).double().flatten() for p in block.parameters() if keep(p)])
            for block in model.blocks
        ]
    )


def _backward(model: nn.Module, inputs, targets) -> None:
    _, loss = model(inputs, targets)
    loss.backward()


def _fresh_backward(**measured):
    """A wrong measurement (`_per_block`'s arguments) taken after a right backward pass."""

    def answer(model, inputs, targets):
        model.zero_grad(set_to_none=True)
        _backward(model, inputs, targets)
        return _per_block(model, **measured)

    return answer


def _accumulated(model, inputs, targets):
    _backward(model, inputs, targets)
    return _per_block(model)


def _read_before_backward(model, inputs, targets):
    model.zero_grad(set_to_none=True)
    norms = _per_block(model)
    _backward(model, inputs, targets)
    return norms


def fresh_model(norm: str, n_layers: int, seed: int, stale: bool, inputs, targets) -> nn.Module:
    """The input's model; `stale`: an earlier backward pass, on other targets, left its
    gradient in .grad."""
    model = npl.build_model(norm, n_layers, seed=seed)
    if stale:
        _, loss = model(inputs, targets.roll(1, dims=1))
        loss.backward()
    return model


def _on_a_fresh_model(name: str, empty_grad: str, answer: Callable[..., Any]) -> Callable[..., Any]:
    def run(norm, n_layers, seed, stale, inputs, targets):
        model = fresh_model(norm, n_layers, seed, stale, inputs, targets)
        try:
            return answer(model, inputs, targets)
        except (AttributeError, TypeError) as exc:
            if "NoneType" not in str(exc):
                raise
            exercise = exercise_named(name)
            mistake = next(m for m in exercise.mistakes if m.name == empty_grad)
            raise mistake_error(exercise, mistake) from exc

    return run


def on_a_fresh_model(name: str, empty_grad: str) -> Callable[[Any], Callable[..., Any]]:
    """`adapt` of the two exercises: build the input's model, then call the answer on it; an
    answer that reads a gradient that is still None is named as mistake `empty_grad`."""
    return functools.partial(_on_a_fresh_model, name, empty_grad)


register(
    Exercise(
        name="block_gradient_norms",
        notebook="06",
        reference=loss_gradient_norms,
        make_inputs=_gradient_inputs,
        adapt=on_a_fresh_model("block_gradient_norms", "read-before-backward"),
        mistakes=(
            Mistake(
                "read-before-backward",
                "a parameter's gradient was still empty when your code read it. Gradients "
                "exist only once the backward pass has filled them: run the forward pass, then "
                "the backward pass, and read the gradients after that.",
                _read_before_backward,
                fix="call loss.backward() first, then read p.grad for p in block.parameters()",
            ),
            Mistake(
                "stale-gradients",
                "your norms include gradient left over from an earlier backward pass. Each "
                "backward pass adds its gradient to what the parameters already hold, so on a "
                "model that has been through one before, the old gradient must be cleared first.",
                _accumulated,
                fix="model.zero_grad() before the forward pass",
            ),
            Mistake(
                "weights-not-gradients",
                "you measured the size of the block's weights, not of their gradients: after "
                "the backward pass each parameter carries its gradient beside its value.",
                _fresh_backward(of=lambda p: p.detach()),
                fix="square p.grad, not p",
            ),
            Mistake(
                "sum-of-tensor-norms",
                "you added up the norms of the block's parameter tensors. A block's gradient norm "
                "is the length of one vector holding all of its parameters' gradients: the square "
                "root of the sum of every squared entry, which is smaller than the sum of the "
                "separate lengths.",
                _fresh_backward(size=lambda grads: sum(g.norm() for g in grads)),
                fix="torch.cat([p.grad.flatten() for p in block.parameters()]).norm()",
            ),
            Mistake(
                "squared-norm",
                "you returned the sum of the squared gradient entries, the norm squared: take its "
                "square root, so that the number has the gradient's own scale.",
                _fresh_backward(size=lambda grads: torch.cat(grads).pow(2).sum()),
                fix="torch.sqrt(sum of the squares) for each block",
            ),
            Mistake(
                "mean-not-norm",
                "you averaged the size of the gradient entries. The norm adds the squares of all "
                "entries before the square root, so a block with more parameters, or with a few "
                "large entries, weighs as it does in a gradient step.",
                _fresh_backward(size=lambda grads: torch.cat(grads).abs().mean()),
                fix="torch.linalg.vector_norm of the block's gradients laid end to end",
            ),
            Mistake(
                "matrices-only",
                "you left out the block's biases and LayerNorm parameters (the 1-D ones). Every "
                "parameter of the block counts, and in Post-LN the norms sit on the stream's path.",
                _fresh_backward(keep=lambda p: p.dim() == 2),
                fix="for p in block.parameters(), without a filter on p.dim()",
            ),
        ),
        hints=(
            "One forward pass with the targets gives the loss; one backward pass from it fills "
            "every parameter's gradient. Clear what an earlier pass left there before you start, "
            "and read the gradients only after the backward pass.",
            "Treat each block's parameters (weight matrices, biases, LayerNorm scales and shifts) "
            "as one long vector: square every entry of every gradient, add them all up, then one "
            "square root per block. Return the L numbers in one tensor, block 1 first.",
        ),
    )
)


def _walk(model, inputs, positions=True):
    """The stream entering each block and leaving the last, [L + 1] tensors [B, T, d]."""
    x = model.tok_emb(inputs)
    if positions:
        x = x + model.pos_emb(torch.arange(inputs.shape[1]))
    stream = [x]
    for block in model.blocks:
        stream.append(block(stream[-1]))
    return stream


def _loss(model, x, targets, final_norm=True, reduction="mean"):
    logits = model.lm_head(model.ln_f(x) if final_norm else x)
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction=reduction)


def _profile(stream, grads, size=lambda t: t.norm(dim=-1).mean()):
    return (
        torch.stack([size(s.detach()) for s in stream]),
        torch.stack([size(g) for g in grads]),
    )


def _stream_profile(model, inputs, targets):
    """Reference: the stream x_l entering each block l (x_L: leaving the last) of `model` on
    inputs [B, T], and after one backward pass from the mean cross-entropy against targets
    [B, T], its gradient. Returns (sizes [L + 1], grads [L + 1]): the mean over the B·T tokens
    of |x_l| and of |∂loss/∂x_l|."""
    stream = _walk(model, inputs)
    return _profile(stream, torch.autograd.grad(_loss(model, stream[-1], targets), stream))


def _stream_mistake(*, positions=True, final_norm=True, reduction="mean", size=None, keep=None):
    def answer(model, inputs, targets):
        stream = _walk(model, inputs, positions)
        loss = _loss(model, stream[-1], targets, final_norm, reduction)
        grads = torch.autograd.grad(loss, stream)
        if keep is not None:
            stream, grads = stream[keep], grads[keep]
        return _profile(stream, grads) if size is None else _profile(stream, grads, size)

    return answer


def _gradient_not_kept(model, inputs, targets):
    """Backward without keeping the stream's gradients: each stream tensor's .grad is None."""
    stream = _walk(model, inputs)
    _loss(model, stream[-1], targets).backward()
    return _profile(stream, [None] * len(stream))


register(
    Exercise(
        name="stream_profile",
        notebook="06",
        reference=_stream_profile,
        make_inputs=_stream_inputs,
        adapt=on_a_fresh_model("stream_profile", "gradient-not-kept"),
        atol=1e-8,
        returns=("sizes", "grads"),
        mistakes=(
            Mistake(
                "gradient-not-kept",
                "a stream tensor's gradient was empty. The stream tensors are computed from the "
                "weights, not leaves of the graph, so the backward pass uses their gradients and "
                "throws them away unless it was told beforehand to keep them; and it fills them "
                "only for tensors the loss was computed from.",
                _gradient_not_kept,
                fix="x.retain_grad() on each stream tensor before loss.backward(), or "
                "grads = torch.autograd.grad(loss, stream)",
            ),
            Mistake(
                "final-norm-skipped",
                "your loss skips the model's final LayerNorm: the last stream goes through ln_f "
                "before the unembedding, and in Pre-LN that norm is what scales the gradient "
                "reaching the stream.",
                _stream_mistake(final_norm=False),
                fix="logits = model.lm_head(model.ln_f(x))",
            ),
            Mistake(
                "no-positions",
                "the stream entering block 1 is the token embedding plus the position "
                "embedding of each position; yours leaves the positions out.",
                _stream_mistake(positions=False),
                fix="x = model.tok_emb(inputs) + model.pos_emb(torch.arange(T))",
            ),
            Mistake(
                "summed-loss",
                "your loss adds the B·T cross-entropies instead of averaging them, which "
                "multiplies every gradient by the number of tokens. The model's loss is the mean.",
                _stream_mistake(reduction="sum"),
                fix="F.cross_entropy(logits.flatten(0, 1), targets.flatten()) (mean by default)",
            ),
            Mistake(
                "norm-over-positions",
                "you took the length along the positions axis. A token's vector is its d "
                "features, the last axis: take each token's length, then average over the B·T "
                "tokens.",
                _stream_mistake(size=lambda t: t.norm(dim=1).mean()),
                fix="x.norm(dim=-1).mean()",
            ),
            Mistake(
                "whole-tensor-norm",
                "you took one length of the whole [B, T, d] tensor. The size wanted is a token's: "
                "the length of each token's d-vector, averaged over the B·T tokens.",
                _stream_mistake(size=lambda t: t.norm()),
                fix="x.norm(dim=-1).mean()",
            ),
            Mistake(
                "mean-abs-entry",
                "you averaged the size of single entries. The size of a token's vector is its "
                "length, the square root of the sum of its d squared features, averaged over "
                "the tokens.",
                _stream_mistake(size=lambda t: t.abs().mean()),
                fix="x.norm(dim=-1).mean()",
            ),
            Mistake(
                "block-outputs-only",
                "you recorded the stream after each block but not the stream entering block 1: "
                "there are L + 1 places, the embeddings' sum first.",
                _stream_mistake(keep=slice(1, None)),
                fix="record x once before the loop over the blocks, then after each block",
            ),
            Mistake(
                "block-inputs-only",
                "you recorded the stream entering each block but not the one leaving the last: "
                "there are L + 1 places, the last one the input of the final norm.",
                _stream_mistake(keep=slice(None, -1)),
                fix="record x once more after the loop over the blocks",
            ),
        ),
        hints=(
            "Run the model's forward pass yourself, piece by piece, keeping the stream before "
            "the first block, after each block, and after the last; the loss comes from the "
            "last one through the final norm and the unembedding. One backward pass from it "
            "then gives each kept tensor a gradient.",
            "The kept tensors are not leaves of the graph: autograd keeps their gradients only "
            "if asked to before the backward pass, or hands them back if you ask it for the "
            "gradient of the loss with respect to them. A size is each token's vector length "
            "over the last axis, averaged over all B·T tokens.",
        ),
    )
)
