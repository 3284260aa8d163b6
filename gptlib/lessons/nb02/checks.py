"""Exercise checks of notebook 02 (scaled dot-product attention).

- `softmax-rows`: a numerically stable softmax over the last axis, written out; its inputs
  include rows near 1000 and a row whose scores spread over 300, where only the shift by each
  row's max keeps exp from overflowing.
- `attention`: softmax(q kᵀ / √d_k) v with an optional boolean mask (True = may attend),
  returning (output, weights): the attention the GPT of notebook 07 runs, masked causally.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from gptlib.lessons.engine.checks.core import Exercise, Mistake, Property, register
from gptlib.lessons.engine.checks.delegation import Route
from gptlib.lessons.nb02.experiments import RetrievalHead, RetrievalTask
from gptlib.model import causal_mask


def _softmax_rows(scores: torch.Tensor) -> torch.Tensor:
    shifted = scores - scores.max(dim=-1, keepdim=True).values
    e = shifted.exp()
    return e / e.sum(dim=-1, keepdim=True)


def _softmax_inputs(g: torch.Generator) -> list[tuple]:
    # Square first (a missing keepdim broadcasts silently there), then a batch (dim=1 is not
    # the last axis), then the lesson, stability: a row near 1000 (a plain exp overflows), an
    # ordinary row beside it (a max over the whole tensor underflows it), and a row spread over
    # 300 (shifting by the row's mean or min leaves an exponent above 88, where float32's exp
    # overflows; only the max shift keeps every exponent <= 0).
    return [
        (torch.randn(5, 5, generator=g) * 3,),
        (torch.randn(2, 3, 4, generator=g),),
        (
            torch.tensor(
                [
                    [1000.0, 1001.0, 999.0, 1000.5],
                    [0.5, -0.3, 0.1, 0.2],
                    [-100.0, 0.0, 100.0, 200.0],
                ]
            ),
        ),
    ]


def _shifted_softmax(shift):
    """A softmax that subtracts shift(scores) from each row: right when shift is the max."""

    def softmax(s: torch.Tensor) -> torch.Tensor:
        e = (s - shift(s)).exp()
        return e / e.sum(dim=-1, keepdim=True)

    return softmax


def sums_to_one(weights: torch.Tensor, *inputs: object) -> str | None:
    sums = weights.sum(dim=-1)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-5):
        return f"each row must sum to 1 over the last axis, got sums {sums.flatten()[:4]}"
    if (weights < 0).any():
        return "weights must be non-negative"
    return None


register(
    Exercise(
        name="softmax-rows",
        notebook="02_scaled_dot_product_attention",
        reference=_softmax_rows,
        forbidden=(
            Route(
                "aten::_softmax",
                "torch's softmax (`torch.softmax`, `F.softmax`, `Tensor.softmax`, `nn.Softmax`)",
                (
                    "the exercise asks for the softmax written out, from a maximum, `exp` and a "
                    "sum, so that you see what keeps it finite."
                ),
            ),
            Route(
                "aten::_log_softmax",
                "torch's log-softmax",
                "its exponential is torch's softmax, which the exercise asks you to write out.",
            ),
            Route(
                "aten::_safe_softmax",
                "torch's softmax (`torch._safe_softmax`)",
                "the exercise asks for the softmax written out, from a maximum, `exp` and a sum.",
            ),
        ),
        make_inputs=_softmax_inputs,
        mistakes=(
            Mistake(
                "no-max-subtraction",
                "exp overflows: the check's rows hold scores near 1000 and a row spread from -100 "
                "to 200, and in float32 exp of anything above about 88 is inf, so the division "
                "gives inf/inf = NaN. Softmax does not change when one constant is subtracted "
                "from a whole row: choose the constant that keeps every exponent at or below 0.",
                lambda s: s.exp() / s.exp().sum(dim=-1, keepdim=True),
                fix="shifted = scores - scores.max(dim=-1, keepdim=True).values; exponentiate that",
            ),
            Mistake(
                "row-mean-subtracted",
                "you subtracted each row's mean. On paper the softmax is the same, but in a row "
                "like -100, 0, 100, 200 the largest score still sits 150 above the mean, exp(150) "
                "overflows float32 (anything above about 88 does) and inf/inf is NaN. The "
                "constant to subtract is the one that leaves every exponent at or below 0.",
                _shifted_softmax(lambda s: s.mean(dim=-1, keepdim=True)),
                fix="subtract scores.max(dim=-1, keepdim=True).values, not the mean",
            ),
            Mistake(
                "row-min-subtracted",
                "you subtracted each row's minimum, which makes every exponent at least 0: in a "
                "row whose scores spread by more than about 88, such as -100, 0, 100, 200, exp "
                "overflows to inf and inf/inf is NaN. Subtract the row's largest score instead, "
                "so that the largest term is e^0 = 1.",
                _shifted_softmax(lambda s: s.amin(dim=-1, keepdim=True)),
                fix="subtract scores.max(dim=-1, keepdim=True).values, not the minimum",
            ),
            Mistake(
                "global-max",
                "you subtracted the largest score of the whole tensor: a row whose scores all sit "
                "far below it underflows to 0/0. Each row needs its own largest score.",
                lambda s: (s - s.max()).exp() / (s - s.max()).exp().sum(dim=-1, keepdim=True),
                fix="scores.max(dim=-1, keepdim=True).values, one maximum per row",
            ),
            Mistake(
                "no-keepdim",
                "the row sums lost their axis, so the division broadcast them across the columns "
                "instead of down each row. Keep the summed axis, so that each row is divided by "
                "its own sum.",
                lambda s: (
                    (s - s.max(-1, keepdim=True).values).exp()
                    / (s - s.max(-1, keepdim=True).values).exp().sum(dim=-1)
                ),
                fix="e.sum(dim=-1, keepdim=True)",
            ),
            Mistake(
                "max-without-keepdim",
                "you did subtract each row's largest score, but the maxima lost their axis: a "
                "vector of one maximum per row lines up with the columns, so each column got "
                "another row's maximum, a different constant for every entry of a row, which "
                "changes the softmax. On a square score matrix this runs and is silently wrong; "
                "on any other it fails to broadcast. Keep the reduced axis, so that each row's "
                "maximum is subtracted across that same row.",
                _shifted_softmax(lambda s: s.max(dim=-1).values),
                fix="scores - scores.max(dim=-1, keepdim=True).values",
            ),
            Mistake(
                "max-and-sum-without-keepdim",
                "the row maxima and the row sums both lost their axis: each vector of one value "
                "per row lines up with the columns, so every column was shifted by another "
                "row's maximum and divided by another row's sum. On a square score matrix this "
                "runs and is silently wrong; on any other it fails to broadcast. Keep the "
                "reduced axis in both, so that each row's own value is used across that row.",
                lambda s: (
                    (s - s.max(dim=-1).values).exp() / (s - s.max(dim=-1).values).exp().sum(dim=-1)
                ),
                fix="scores.max(dim=-1, keepdim=True).values and e.sum(dim=-1, keepdim=True)",
            ),
            Mistake(
                "columns",
                "you normalised down the columns, the first axis. Attention weights are a "
                "distribution over the keys: the last axis of the scores.",
                lambda s: torch.softmax(s, dim=0),
                fix="normalise over dim=-1",
            ),
            Mistake(
                "dim-1",
                "you normalised over axis 1, which is the last axis only for a 2-D tensor; with a "
                "batch of score matrices it is the query axis. Normalise over the last axis, "
                "whatever the number of dimensions.",
                lambda s: torch.softmax(s, dim=1),
                fix="dim=-1, not dim=1",
            ),
            Mistake(
                "whole-tensor",
                "you divided by the sum over the whole tensor; each row must be normalised by its "
                "own sum.",
                lambda s: (s - s.max()).exp() / (s - s.max()).exp().sum(),
                fix="e / e.sum(dim=-1, keepdim=True)",
            ),
            Mistake(
                "no-exp",
                "you normalised the raw scores without exponentiating them. Softmax divides the "
                "exponentials by their sum, which keeps every weight positive.",
                lambda s: s / s.sum(dim=-1, keepdim=True),
                fix="e = shifted.exp(), then e / e.sum(dim=-1, keepdim=True)",
            ),
        ),
        properties=(Property("rows sum to 1", sums_to_one),),
        hints=(
            "Softmax does not change when the same number is subtracted from every score of a "
            "row. Pick the number that keeps every exponent at or below 0, so that exp cannot "
            "overflow: the check's rows include scores near 1000 and rows spread by more than "
            "100.",
            "Subtract each row's largest score (keep its dimension, so that it broadcasts back "
            "over the row), exponentiate, and divide by each row's sum over the last axis.",
        ),
    )
)


def _attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def _attention_inputs(g: torch.Generator) -> list[tuple]:
    # d_k != d_v so that scaling by the wrong width shows; square first (T_q == T_k), where a
    # transposed score matrix still has the right shape, called without a mask (the default).
    # Then the causal mask, and a mask that is not causal (each query may see a few keys,
    # never none), with T_q != T_k: an answer that ignores the mask it is given, or builds
    # its own triangle, differs there.
    allowed = torch.rand(3, 6, generator=g) < 0.5
    allowed[torch.arange(3), torch.randint(0, 6, (3,), generator=g)] = True
    return [
        (
            torch.randn(2, 5, 16, generator=g),
            torch.randn(2, 5, 16, generator=g),
            torch.randn(2, 5, 4, generator=g),
        ),
        (
            torch.randn(2, 5, 16, generator=g),
            torch.randn(2, 5, 16, generator=g),
            torch.randn(2, 5, 4, generator=g),
            causal_mask(5),
        ),
        (
            torch.randn(1, 3, 9, generator=g),
            torch.randn(1, 6, 9, generator=g),
            torch.randn(1, 6, 2, generator=g),
            allowed,
        ),
    ]


def _attention_with(scores_of, weights_of=None):
    """A wrong attention: scores_of(q, k, v, mask) are the softmax's input, and weights_of
    (default: softmax over the keys) turns them into weights."""

    def attention(q, k, v, mask=None):
        scores = scores_of(q, k, v, mask)
        weights = torch.softmax(scores, dim=-1) if weights_of is None else weights_of(scores, mask)
        return weights @ v, weights

    return attention


def _masked(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    return scores if mask is None else scores.masked_fill(~mask, float("-inf"))


def _scaled_by(factor):
    """Scores q kᵀ times factor(q, v) instead of 1/√d_k, masked correctly."""
    return _attention_with(lambda q, k, v, m: _masked(q @ k.transpose(-2, -1) * factor(q, v), m))


def _right_scores(q, k, v, mask):
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


def attention_weights_ok(output: tuple, q, k, v, mask=None) -> str | None:
    if not isinstance(output, tuple | list) or len(output) != 2:
        return "return a pair (output, weights)"
    problem = sums_to_one(output[1])
    if problem is None and mask is not None:
        leaked = output[1].detach().float().masked_fill(mask, 0.0).abs().max().item()
        if leaked > 1e-6:
            problem = (
                f"a key the mask blocks (mask False) got weight {leaked:z.3g}; blocked keys must "
                "get weight 0"
            )
    return problem


register(
    Exercise(
        name="attention",
        notebook="02_scaled_dot_product_attention",
        reference=_attention,
        forbidden=(
            Route(
                "gptlib.model:attention_with_weights",
                "gptlib's `attention_with_weights`",
                "it computes the whole of what this exercise asks you to write.",
            ),
            Route(
                "aten::_scaled_dot_product_flash_attention_for_cpu",
                "`F.scaled_dot_product_attention`",
                "it computes the whole attention in one call; the exercise is to write its steps.",
            ),
            Route(
                "aten::_safe_softmax",
                "`F.scaled_dot_product_attention`",
                "it computes the whole attention in one call; the exercise is to write its steps.",
            ),
        ),
        make_inputs=_attention_inputs,
        mistakes=(
            Mistake(
                "divided-by-dk",
                "you divided the scores by d_k. Their variance is d_k, so the division that "
                "brings their spread back to 1 is by its square root.",
                _scaled_by(lambda q, v: 1 / q.shape[-1]),
                fix="scores / math.sqrt(d_k), with d_k = q.shape[-1]",
            ),
            Mistake(
                "no-scaling",
                "the scores are not scaled: their spread grows like the square root of the key "
                "width, and the softmax saturates as it grows. Divide them by that square root.",
                _scaled_by(lambda q, v: 1.0),
                fix="q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])",
            ),
            Mistake(
                "multiplied-by-sqrt-dk",
                "you multiplied the scores by the square root of d_k; the scaling divides by it.",
                _scaled_by(lambda q, v: math.sqrt(q.shape[-1])),
                fix="/ math.sqrt(d_k), not * math.sqrt(d_k)",
            ),
            Mistake(
                "scaled-by-dv",
                "you scaled by the square root of the values' width. The scores are dot products "
                "of queries and keys, whose width is d_k.",
                _scaled_by(lambda q, v: 1 / math.sqrt(v.shape[-1])),
                fix="math.sqrt(q.shape[-1]), the width of q and k",
            ),
            Mistake(
                "softmax-over-queries",
                "the softmax ran over the queries. Each query's weights over the keys must sum to "
                "1, so normalise along the keys, the last axis.",
                _attention_with(
                    lambda q, k, v, m: _masked(_right_scores(q, k, v, m), m),
                    lambda scores, m: torch.softmax(scores, dim=-2),
                ),
                fix="torch.softmax(scores, dim=-1), not dim=-2",
            ),
            Mistake(
                "keys-times-queries",
                "your score matrix is transposed: row i must hold query i's scores against every "
                "key, and column j those of key j. You computed the keys against the queries.",
                _attention_with(
                    lambda q, k, v, m: _masked(k @ q.transpose(-2, -1) / math.sqrt(q.shape[-1]), m)
                ),
                fix="q @ k.transpose(-2, -1), not k @ q.transpose(-2, -1)",
            ),
            Mistake(
                "mask-ignored",
                "you ignored the mask. Where it is False the score must become minus infinity "
                "before the softmax, so that the weight comes out exactly 0.",
                _attention_with(_right_scores),
                fix="scores = scores.masked_fill(~mask, float('-inf'))",
            ),
            Mistake(
                "mask-inverted",
                "you blocked the keys the mask allows. Here, as in gptlib's causal mask and in "
                "PyTorch's boolean attention masks, True means may attend (the chapter's picture "
                "marks the blocked scores instead).",
                _attention_with(
                    lambda q, k, v, m: (
                        _right_scores(q, k, v, m).masked_fill(m, float("-inf"))
                        if m is not None
                        else _right_scores(q, k, v, m)
                    )
                ),
                fix="fill where ~mask, not where mask",
            ),
            Mistake(
                "mask-filled-with-zero",
                "you set the blocked scores to 0, and e^0 = 1, so those keys still get weight. A "
                "blocked score needs a value whose exponential is exactly 0.",
                _attention_with(
                    lambda q, k, v, m: (
                        _right_scores(q, k, v, m).masked_fill(~m, 0.0)
                        if m is not None
                        else _right_scores(q, k, v, m)
                    )
                ),
                fix="fill with float('-inf'), not 0",
            ),
            Mistake(
                "mask-after-softmax",
                "you zeroed the blocked weights after the softmax, so the rows no longer sum to "
                "1. Mask the scores before the softmax, which then shares all the weight among "
                "the allowed keys.",
                _attention_with(
                    _right_scores,
                    lambda scores, m: (
                        torch.softmax(scores, dim=-1)
                        if m is None
                        else torch.softmax(scores, dim=-1).masked_fill(~m, 0.0)
                    ),
                ),
                fix="scores.masked_fill(~mask, float('-inf')) before torch.softmax",
            ),
            Mistake(
                "own-causal-mask",
                "you applied a causal triangle of your own instead of the mask you were given: "
                "use the mask argument as it is, and none at all when it is None.",
                _attention_with(
                    lambda q, k, v, m: _masked(
                        _right_scores(q, k, v, m), causal_mask(q.shape[-2], T_k=k.shape[-2])
                    )
                ),
                fix="if mask is not None: scores = scores.masked_fill(~mask, float('-inf'))",
            ),
        ),
        properties=(Property("weights", attention_weights_ok),),
        returns=("the output", "the weights"),
        hints=(
            "Three steps: compare every query with every key (a dot product, divided by the "
            "square root of the key width), turn each query's row of scores into weights, and "
            "mix the values with those weights. A blocked position must end with weight exactly "
            "0.",
            "The scores are [..., T_q, T_k]: q against k with k's last two axes swapped. A "
            "blocked score becomes −∞ before the softmax over the keys (the last axis), so that "
            "exp gives 0. Return the output and the weights, in that order.",
        ),
    )
)


def _measure_softmax(
    q: torch.Tensor, k: torch.Tensor, upstream: torch.Tensor, scaled: bool
) -> tuple[float, float, float, float]:
    scores = (k @ q[:, :, None])[..., 0]  # [N, n_keys]: each query against its own keys
    if scaled:
        scores = scores / math.sqrt(q.shape[-1])
    z = scores.detach().requires_grad_(True)
    weights = torch.softmax(z, dim=-1)
    (weights * upstream).sum().backward()
    entropy = -(weights * torch.log_softmax(z, dim=-1)).sum(dim=-1)
    return (
        scores.std().item(),
        weights.max(dim=-1).values.mean().item(),
        entropy.mean().item(),
        z.grad.norm(dim=-1).mean().item(),
    )


def _measure_inputs(g: torch.Generator) -> list[tuple]:
    # The shapes notebook 02's sweep feeds (256 queries, 16 keys each). Scaled first, at a width
    # where dividing by √d_k, by d_k or not at all give three different answers; then unscaled
    # at d_k = 1024, where some weights underflow to exactly 0 in float32 (0 · ln 0 is NaN);
    # then a narrow unscaled case, d_k = 1, the sweep's first width.
    def rows(d_k: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        q = torch.randn(256, d_k, generator=g)
        k = torch.randn(256, 16, d_k, generator=g)
        return q, k, torch.randn(256, 16, generator=g)

    return [(*rows(64), True), (*rows(1024), False), (*rows(1), False)]


def _measured(
    scores_of=None,
    *,
    std_of=None,
    max_of=None,
    entropy_of=None,
    loss_of=None,
    grad_norm_of=None,
    grad_at_raw: bool = False,
):
    """A measure_softmax with one step done wrong; every argument left out is done right.

    scores_of(q, k, scaled) -> (q·k, the scores into the softmax); std_of(raw, scores);
    max_of(p); entropy_of(p, z); loss_of(p, g); grad_norm_of(grad); grad_at_raw: the gradient
    read on q·k, before the division by √d_k.
    """

    def right_scores(q, k, scaled):
        raw = (k @ q[:, :, None])[..., 0]
        return raw, raw / math.sqrt(q.shape[-1]) if scaled else raw

    def measure(q, k, upstream, scaled):
        raw, scores = (scores_of or right_scores)(q, k, scaled)
        leaf = (raw if grad_at_raw else scores).detach().requires_grad_(True)
        z = leaf / math.sqrt(q.shape[-1]) if grad_at_raw and scaled else leaf
        p = torch.softmax(z, dim=-1)
        (loss_of or (lambda p, g: (p * g).sum()))(p, upstream).backward()
        p, z = p.detach(), z.detach()
        entropy_of_ = entropy_of or (lambda p, z: -(p * torch.log_softmax(z, -1)).sum(-1).mean())
        return (
            float(std_of(raw, scores) if std_of else scores.std()),
            float(max_of(p) if max_of else p.max(-1).values.mean()),
            float(entropy_of_(p, z)),
            float((grad_norm_of or (lambda g: g.norm(dim=-1).mean()))(leaf.grad)),
        )

    return measure


def _gradient_at_the_weights(q, k, upstream, scaled):
    """measure_softmax with the gradient read on the weights: ∂(Σ p·g)/∂p is g itself."""
    score_std, max_weight, entropy, _ = _measure_softmax(q, k, upstream, scaled)
    return score_std, max_weight, entropy, upstream.norm(dim=-1).mean().item()


def _gradient_without_the_coupling(q, k, upstream, scaled):
    """measure_softmax with the gradient written by hand as p·g, the Jacobian's diagonal only."""
    score_std, max_weight, entropy, _ = _measure_softmax(q, k, upstream, scaled)
    scores = (k @ q[:, :, None])[..., 0] / (math.sqrt(q.shape[-1]) if scaled else 1.0)
    grad = torch.softmax(scores, dim=-1) * upstream
    return score_std, max_weight, entropy, grad.norm(dim=-1).mean().item()


def measures_in_range(output: tuple, q, k, upstream, scaled) -> str | None:
    if not isinstance(output, tuple | list) or len(output) != 4:
        return "return four numbers: (score std, max weight, entropy, grad norm)"
    n_keys = k.shape[1]
    # detached: a right answer may return tensors still attached to autograd
    max_weight, entropy = (float(torch.as_tensor(x).detach()) for x in output[1:3])
    if not 1 / n_keys - 1e-6 <= max_weight <= 1 + 1e-6:
        return (
            f"the mean largest weight of a row of {n_keys} weights lies between 1/{n_keys} "
            f"(uniform) and 1 (one-hot); yours is {max_weight:z.4g}"
        )
    if not -1e-6 <= entropy <= math.log(n_keys) + 1e-6:
        return (
            f"the entropy of a row of {n_keys} weights lies between 0 (one-hot) and ln "
            f"{n_keys} = {math.log(n_keys):z.3f} nats (uniform); yours is {entropy:z.4g}"
        )
    return None


register(
    Exercise(
        name="measure-softmax",
        notebook="02_scaled_dot_product_attention",
        reference=_measure_softmax,
        make_inputs=_measure_inputs,
        mistakes=(
            Mistake(
                "scaled-ignored",
                "your numbers are those of the raw scores even when scaled is True. With the "
                "flag set, the scores that enter the softmax are the dot products divided by the "
                "square root of the key width, and every measure is taken on those.",
                _measured(lambda q, k, scaled: ((k @ q[:, :, None])[..., 0],) * 2),
                fix="if scaled: scores = scores / math.sqrt(q.shape[-1])",
            ),
            Mistake(
                "divided-by-dk",
                "you divided the scores by d_k. Their variance is d_k, so the division that "
                "brings their spread back to 1 is by the square root of d_k; dividing by d_k "
                "shrinks them towards 0 and every row towards uniform.",
                _measured(
                    lambda q, k, s: (
                        (k @ q[:, :, None])[..., 0],
                        (k @ q[:, :, None])[..., 0] / (q.shape[-1] if s else 1),
                    )
                ),
                fix="scores / math.sqrt(d_k), not scores / d_k",
            ),
            Mistake(
                "std-of-raw-scores",
                "you reported the spread of the raw dot products although the softmax received "
                "the divided ones. The score std describes what enters the softmax: measure it "
                "after the division.",
                _measured(std_of=lambda raw, scores: raw.std()),
                fix="take .std() of the scores after dividing by √d_k",
            ),
            Mistake(
                "std-per-row",
                "you averaged each query's own standard deviation over its 16 keys. The spread "
                "asked for is that of all the scores together, one standard deviation over "
                "every entry of the [N, n_keys] table.",
                _measured(std_of=lambda raw, scores: scores.std(dim=-1).mean()),
                fix="scores.std() over every entry, not scores.std(dim=-1).mean()",
            ),
            Mistake(
                "every-query-every-key",
                "each query was scored against every query's keys, giving N × N rows of "
                "scores instead of N. Query n has its own keys, k[n]: pair each query only with "
                "those, one row of n_keys scores per query.",
                _measured(
                    lambda q, k, s: (
                        q @ k.transpose(-2, -1),  # [N, N, n_keys]: broadcast over queries
                        q @ k.transpose(-2, -1) / (math.sqrt(q.shape[-1]) if s else 1),
                    )
                ),
                fix="(k @ q[:, :, None])[..., 0], or torch.einsum('nd,nkd->nk', q, k)",
            ),
            Mistake(
                "max-over-queries",
                "you took the largest weight over the wrong axis, across queries. Each row (one "
                "query, its keys) is a distribution: take the largest weight within each row, "
                "then average over the rows.",
                _measured(max_of=lambda p: p.max(0).values.mean()),
                fix="weights.max(dim=-1).values.mean()",
            ),
            Mistake(
                "entropy-nan",
                "your entropy is NaN on widely spread scores: some weights underflow to exactly "
                "0 in float32, and 0 · ln 0 computes as 0 · (−∞) = NaN, although its limit, "
                "and its share of the entropy, is 0. Take the logarithm in a form that stays "
                "finite where a weight is 0.",
                _measured(entropy_of=lambda p, z: -(p * p.log()).sum(-1).mean()),
                fix="ln p = torch.log_softmax(z, dim=-1), or torch.special.xlogy(p, p)",
            ),
            Mistake(
                "entropy-in-bits",
                "your entropy is in bits (log base 2). The lesson measures it in nats, with the "
                "natural logarithm, so that a uniform row of 16 has ln 16 = 2.77.",
                _measured(
                    entropy_of=lambda p, z: (
                        -(p * torch.log_softmax(z, -1)).sum(-1).mean() / math.log(2)
                    )
                ),
                fix="use the natural log: torch.log, not torch.log2",
            ),
            Mistake(
                "entropy-sign",
                "your entropy is negative: the entropy is minus the sum of p ln p, and each "
                "p ln p is at most 0.",
                _measured(entropy_of=lambda p, z: (p * torch.log_softmax(z, -1)).sum(-1).mean()),
                fix="entropy = -(p * log_p).sum(dim=-1)",
            ),
            Mistake(
                "gradient-at-the-weights",
                "you measured the gradient on the softmax's output, the weights, which is the "
                "upstream gradient itself. The gradient asked for is on the softmax's input, "
                "the scores: what the softmax lets through to them.",
                _gradient_at_the_weights,
                fix="make the scores require grad and read their .grad after backward",
            ),
            Mistake(
                "gradient-without-the-coupling",
                "your gradient keeps only how each weight depends on its own score. The weights "
                "of a row sum to 1, so raising one score also lowers every other weight: each "
                "entry of the gradient also loses its weight times the row's weighted mean of "
                "the upstream gradient. Let autograd differentiate, or write both terms.",
                _gradient_without_the_coupling,
                fix="dL/dz = p * (g - (p * g).sum(dim=-1, keepdim=True))",
            ),
            Mistake(
                "gradient-before-the-division",
                "you read the gradient on the dot products before the division by √d_k, so "
                "with scaled True it is √d_k times smaller than on the softmax's own input. "
                "Measure it on the scores that enter the softmax.",
                _measured(grad_at_raw=True),
                fix="z = (scores after the division).detach().requires_grad_(); read z.grad",
            ),
            Mistake(
                "loss-averaged",
                "you averaged the loss over the rows (and keys) instead of summing: every "
                "gradient came out divided by their number. The loss is the sum of p · g, so "
                "each query's row receives its own gradient unchanged.",
                _measured(loss_of=lambda p, g: (p * g).mean()),
                fix="(weights * upstream).sum().backward()",
            ),
            Mistake(
                "gradient-norm-of-the-batch",
                "you took one norm over the whole [N, n_keys] gradient. The measure is per "
                "query: the norm of each row's gradient, averaged over the rows.",
                _measured(grad_norm_of=lambda grad: grad.norm()),
                fix="grad.norm(dim=-1).mean()",
            ),
        ),
        properties=(Property("measures", measures_in_range),),
        returns=("the score std", "the mean max weight", "the mean entropy", "the mean grad norm"),
        rtol=1e-3,
        hints=(
            "Four numbers from one table of scores [N, n_keys]: its spread, and three averages "
            "over its rows after the softmax (the largest weight, the entropy in nats, and the "
            "size of the gradient that reaches the scores). For the gradient, let autograd "
            "differentiate the sum of weights times upstream with respect to the scores.",
            "Scores: pair query n with its own keys k[n] (a batched product or an einsum), "
            "then divide by the square root of the key width when scaled. Entropy: use the "
            "log-softmax of the scores for ln p, which stays finite where a weight underflows "
            "to 0. Gradient: a detached copy of the scores that requires grad, softmax, "
            "backward of the weighted sum, then the norm of each row of its grad, averaged.",
        ),
    )
)


def _first_step_gradients(
    head: torch.nn.Module, keys: torch.Tensor, values: torch.Tensor, queried: torch.Tensor
) -> tuple[float, float, torch.Tensor]:
    logits, scores = head(keys, values, queried)
    scores.retain_grad()  # an intermediate result: autograd keeps its gradient only if asked
    answers = values.gather(1, queried[:, None])[:, 0]  # the value stored in the queried pair
    loss = F.cross_entropy(logits, answers)  # the training loss, a mean over the batch
    head.zero_grad()
    loss.backward()
    per_example = scores.grad * len(queried)  # example b's own loss, not the mean, on its scores
    return head.W_Q.weight.grad.norm().item(), head.W_K.weight.grad.norm().item(), per_example


def _gradient_inputs(g: torch.Generator) -> list[tuple]:
    # (d_k, scaled, seed) of the head, then a batch. First what notebook 02 feeds: d_k = 512,
    # 32 examples, unscaled then scaled; then a narrow head and a batch of 5. Every head
    # arrives with stale gradients in .grad, as after a training step.
    task = RetrievalTask()
    return [
        ((512, False, 0), *task.batch(32, g)),
        ((512, True, 0), *task.batch(32, g)),
        ((8, True, 3), *task.batch(5, g)),
    ]


def _gradients_with(*, target=None, zero_grad=True, keep=True, reduction="mean", times_b=True):
    """A first_step_gradients with one step done wrong (every argument left out is right):
    target(keys, values, queried) is the answer; zero_grad, keep (retain the scores' grad),
    reduction of the loss, times_b (scale the scores' grad by B)."""

    def answer(head, keys, values, queried):
        logits, scores = head(keys, values, queried)
        if keep:
            scores.retain_grad()
        y = (
            values.gather(1, queried[:, None])[:, 0]
            if target is None
            else target(keys, values, queried)
        )
        loss = F.cross_entropy(logits, y, reduction=reduction)
        if zero_grad:
            head.zero_grad()
        loss.backward()
        with warnings.catch_warnings():  # reading a non-leaf's .grad warns: not the student's
            warnings.simplefilter("ignore")
            grad = scores.grad
        per_example = grad * len(queried) if times_b else grad
        return head.W_Q.weight.grad.norm().item(), head.W_K.weight.grad.norm().item(), per_example

    return answer


def _read_before_backward(head, keys, values, queried):
    logits, scores = head(keys, values, queried)
    scores.retain_grad()
    loss = F.cross_entropy(logits, values.gather(1, queried[:, None])[:, 0])
    norms = head.W_Q.weight.grad.norm().item(), head.W_K.weight.grad.norm().item()
    head.zero_grad()
    loss.backward()
    return *norms, scores.grad * len(queried)


def _weight_norms(head, keys, values, queried):
    _, _, per_example = _first_step_gradients(head, keys, values, queried)
    return head.W_Q.weight.norm().item(), head.W_K.weight.norm().item(), per_example


def head_with_stale_gradients(d_k: int, scaled: bool, seed: int) -> RetrievalHead:
    """A retrieval head of width d_k whose .grad fields hold the gradient of another batch, as
    after an earlier training step."""
    task = RetrievalTask()
    head = RetrievalHead(task, d_k, scaled, 32, torch.Generator().manual_seed(seed))
    keys, values, queried = task.batch(8, torch.Generator().manual_seed(seed + 100))
    logits, _ = head(keys, values, queried)
    F.cross_entropy(logits, values.gather(1, queried[:, None])[:, 0]).backward()
    return head


def on_a_head(answer: Callable[..., Any]) -> Callable[..., Any]:
    """The answer called on a freshly built head (with stale gradients) for each input, whose
    first item is the head's (d_k, scaled, seed)."""

    def run(spec: tuple[int, bool, int], keys, values, queried):
        return answer(head_with_stale_gradients(*spec), keys, values, queried)

    return run


def gradients_ok(output: tuple, spec, keys, values, queried) -> str | None:
    if not isinstance(output, tuple | list) or len(output) != 3:
        return (
            "return three things: (W_Q's gradient norm, W_K's gradient norm, the scores' gradients)"
        )
    return None


register(
    Exercise(
        name="first-step-gradients",
        notebook="02_scaled_dot_product_attention",
        reference=_first_step_gradients,
        make_inputs=_gradient_inputs,
        adapt=on_a_head,
        mistakes=(
            Mistake(
                "zero-grad-forgotten",
                "your gradients include those of an earlier batch: backward adds to whatever "
                "the parameters' gradients already hold, and this head arrives holding the "
                "gradients of a previous step. Clear them before the backward pass.",
                _gradients_with(zero_grad=False),
                fix="head.zero_grad() before loss.backward()",
            ),
            Mistake(
                "read-before-backward",
                "you read the weights' gradients before the backward pass, so you got what they "
                "held from an earlier step. Read them after backward has filled them.",
                _read_before_backward,
                fix="loss.backward() first, then head.W_Q.weight.grad.norm()",
            ),
            Mistake(
                "per-example-of-the-mean",
                "your scores' gradients are B times too small: they are gradients of the batch's "
                "mean loss, which divides every example's loss by B. Each example's own loss "
                "reaches only its own scores, so its gradient is B times what the mean gives.",
                _gradients_with(times_b=False),
                fix="per_example = scores.grad * len(queried)",
            ),
            Mistake(
                "summed-loss",
                "your weights' gradients are those of the summed loss, B times those of the "
                "training loss. Training minimises the batch's mean cross-entropy: measure the "
                "gradient the optimiser receives.",
                _gradients_with(reduction="sum", times_b=False),
                fix="F.cross_entropy(logits, answers) (the mean), then scale only the scores' "
                "gradient by B",
            ),
            Mistake(
                "pair-index-as-answer",
                "your targets are the positions of the queried pairs. The answer is the value "
                "stored in the queried pair: look it up in values at that position.",
                _gradients_with(target=lambda keys, values, queried: queried),
                fix="answers = values[torch.arange(len(queried)), queried]",
            ),
            Mistake(
                "key-as-answer",
                "your targets are the queried keys. The head must answer with the value stored "
                "next to the queried key: look it up in values, not in keys.",
                _gradients_with(
                    target=lambda keys, values, queried: keys.gather(1, queried[:, None])[:, 0]
                ),
                fix="answers = values[torch.arange(len(queried)), queried]",
            ),
            Mistake(
                "norms-of-the-weights",
                "you returned the size of the weights themselves, not of their gradients.",
                _weight_norms,
                fix="head.W_Q.weight.grad.norm(), not head.W_Q.weight.norm()",
            ),
            Mistake(
                "scores-grad-not-kept",
                "the scores' gradient is None: the scores are an intermediate result of the "
                "forward pass, not a parameter, and autograd frees the gradient of such a "
                "tensor unless it was asked to keep it before the backward pass.",
                _gradients_with(keep=False, reduction="sum", times_b=False),
                fix="scores.retain_grad() right after the forward pass",
            ),
            Mistake(
                "scores-grad-not-kept-then-scaled",
                "the scores' gradient is None, so multiplying it fails: the scores are an "
                "intermediate result of the forward pass, not a parameter, and autograd frees "
                "the gradient of such a tensor unless it was asked to keep it before the "
                "backward pass.",
                _gradients_with(keep=False),
                fix="scores.retain_grad() right after the forward pass",
            ),
        ),
        properties=(Property("three results", gradients_ok),),
        returns=("W_Q's gradient norm", "W_K's gradient norm", "the scores' gradients"),
        hints=(
            "One forward pass of the batch, the training loss (the cross-entropy of the logits "
            "against the value stored in each queried pair, averaged over the batch), one "
            "backward pass, then three gradients: of the two projection matrices, and of the "
            "scores. The head may hold gradients of an earlier step: start from clean ones.",
            "The scores come out of the forward pass; they are not parameters, so ask autograd "
            "to keep their gradient before the backward pass. With the batch-mean loss, example "
            "b's own gradient on its scores is B times what autograd stores, since the mean "
            "divides every loss by B. The projections' gradients sit on their weights after "
            "the backward pass; return their norms.",
        ),
    )
)
