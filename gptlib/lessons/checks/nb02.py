"""Exercise checks of notebook 02 (scaled dot-product attention).

- `softmax-rows`: a numerically stable softmax over the last axis, written out; its inputs
  include rows near 1000 and a row whose scores spread over 300, where only the shift by each
  row's max keeps exp from overflowing.
- `attention`: softmax(q kᵀ / √d_k) v with an optional boolean mask (True = may attend),
  returning (output, weights): the attention the GPT of notebook 07 runs, masked causally.
"""

from __future__ import annotations

import math

import torch

from gptlib.attention import causal_mask
from gptlib.lessons.checks.core import Exercise, Mistake, Property, register


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


def _sums_to_one(weights: torch.Tensor, *inputs: object) -> str | None:
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
        make_inputs=_softmax_inputs,
        mistakes=(
            Mistake(
                "no-max-subtraction",
                "the check feeds rows of scores near 1000 and a row spread by more than 100 "
                "(-100, 0, 100, 200): exp(1000) overflows to inf (float32 overflows above about "
                "88) and inf/inf is NaN. Subtract each row's max before exp (softmax(x) = "
                "softmax(x - c) for any constant c in a row), so every exponent is <= 0.",
                lambda s: s.exp() / s.exp().sum(dim=-1, keepdim=True),
            ),
            Mistake(
                "row-mean-subtracted",
                "you subtracted each row's mean. That leaves the softmax unchanged on paper but "
                "not its safety: in a row like (-100, 0, 100, 200) the largest score sits 150 "
                "above the mean, exp(150) overflows float32 (anything above about 88 does) and "
                "inf/inf is NaN. Subtract each row's max, so that every exponent is <= 0.",
                _shifted_softmax(lambda s: s.mean(dim=-1, keepdim=True)),
            ),
            Mistake(
                "row-min-subtracted",
                "you subtracted each row's minimum, which makes every exponent >= 0: in a row "
                "whose scores spread by more than about 88, such as (-100, 0, 100, 200), exp "
                "overflows to inf and inf/inf is NaN. Subtract each row's max instead, so that "
                "every exponent is <= 0 and the largest term is e^0 = 1.",
                _shifted_softmax(lambda s: s.amin(dim=-1, keepdim=True)),
            ),
            Mistake(
                "global-max",
                "you subtracted the max of the whole tensor; a row far below it underflows to "
                "0/0. Subtract each row's own max: scores.max(dim=-1, keepdim=True).values.",
                lambda s: (s - s.max()).exp() / (s - s.max()).exp().sum(dim=-1, keepdim=True),
            ),
            Mistake(
                "no-keepdim",
                "sum(dim=-1) without keepdim=True drops the axis, so the division broadcasts "
                "the row sums across columns. Use keepdim=True.",
                lambda s: (
                    (s - s.max(-1, keepdim=True).values).exp()
                    / (s - s.max(-1, keepdim=True).values).exp().sum(dim=-1)
                ),
            ),
            Mistake(
                "columns",
                "you normalised over the first axis (columns). Attention weights are a "
                "distribution over keys, the last axis: use dim=-1.",
                lambda s: torch.softmax(s, dim=0),
            ),
            Mistake(
                "dim-1",
                "dim=1 is the last axis only for a 2-D tensor; with a batch [B, T, T] it is the "
                "query axis. Use dim=-1.",
                lambda s: torch.softmax(s, dim=1),
            ),
            Mistake(
                "whole-tensor",
                "you divided by the sum over the whole tensor; each row must be normalised on "
                "its own (sum over dim=-1 with keepdim=True).",
                lambda s: (s - s.max()).exp() / (s - s.max()).exp().sum(),
            ),
            Mistake(
                "no-exp",
                "you normalised the raw scores without exponentiating; softmax is exp(x) / "
                "Σ exp(x), which keeps every weight positive.",
                lambda s: s / s.sum(dim=-1, keepdim=True),
            ),
        ),
        properties=(Property("rows sum to 1", _sums_to_one),),
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


def _attention_weights_ok(output: tuple, q, k, v, mask=None) -> str | None:
    if not isinstance(output, tuple | list) or len(output) != 2:
        return "return a pair (output, weights)"
    problem = _sums_to_one(output[1])
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
        make_inputs=_attention_inputs,
        mistakes=(
            Mistake(
                "divided-by-dk",
                "you divided the scores by d_k; divide by √d_k (math.sqrt(d_k)). Var(q·k) = d_k, "
                "so √d_k is what brings the spread back to 1.",
                _scaled_by(lambda q, v: 1 / q.shape[-1]),
            ),
            Mistake(
                "no-scaling",
                "the scores are not scaled: divide q kᵀ by √d_k, or the softmax saturates as "
                "d_k grows.",
                _scaled_by(lambda q, v: 1.0),
            ),
            Mistake(
                "multiplied-by-sqrt-dk",
                "you multiplied the scores by √d_k; divide by it.",
                _scaled_by(lambda q, v: math.sqrt(q.shape[-1])),
            ),
            Mistake(
                "scaled-by-dv",
                "you scaled by √d_v, the width of the values; the scores are dot products of "
                "width d_k = q.shape[-1], so divide by √d_k.",
                _scaled_by(lambda q, v: 1 / math.sqrt(v.shape[-1])),
            ),
            Mistake(
                "softmax-over-queries",
                "softmax over the wrong axis: each query's weights over the keys must sum to 1, "
                "so normalise over the last axis (dim=-1), not dim=-2.",
                _attention_with(
                    lambda q, k, v, m: _masked(_right_scores(q, k, v, m), m),
                    lambda scores, m: torch.softmax(scores, dim=-2),
                ),
            ),
            Mistake(
                "keys-times-queries",
                "the scores are q @ kᵀ (row i = query i, column j = key j); you computed "
                "k @ qᵀ, its transpose.",
                _attention_with(
                    lambda q, k, v, m: _masked(k @ q.transpose(-2, -1) / math.sqrt(q.shape[-1]), m)
                ),
            ),
            Mistake(
                "mask-ignored",
                "you ignored the mask: where it is False the score must become -inf before the "
                "softmax (scores.masked_fill(~mask, float('-inf'))), so that the weight is 0.",
                _attention_with(_right_scores),
            ),
            Mistake(
                "mask-inverted",
                "you blocked the keys the mask allows. Here, as in gptlib.causal_mask and the "
                "boolean attn_mask of F.scaled_dot_product_attention, True means *may attend* "
                "(the chapter's picture marks the blocked scores instead): fill where ~mask.",
                _attention_with(
                    lambda q, k, v, m: (
                        _right_scores(q, k, v, m).masked_fill(m, float("-inf"))
                        if m is not None
                        else _right_scores(q, k, v, m)
                    )
                ),
            ),
            Mistake(
                "mask-filled-with-zero",
                "you set the blocked scores to 0; exp(0) = 1, so those keys still get weight. "
                "Fill them with float('-inf'), whose exp is exactly 0.",
                _attention_with(
                    lambda q, k, v, m: (
                        _right_scores(q, k, v, m).masked_fill(~m, 0.0)
                        if m is not None
                        else _right_scores(q, k, v, m)
                    )
                ),
            ),
            Mistake(
                "mask-after-softmax",
                "you zeroed the blocked weights after the softmax, so the rows no longer sum to "
                "1. Mask the scores before the softmax (fill with -inf): the softmax then shares "
                "all the weight among the allowed keys.",
                _attention_with(
                    _right_scores,
                    lambda scores, m: (
                        torch.softmax(scores, dim=-1)
                        if m is None
                        else torch.softmax(scores, dim=-1).masked_fill(~m, 0.0)
                    ),
                ),
            ),
            Mistake(
                "own-causal-mask",
                "you applied a causal (lower-triangular) mask of your own instead of the `mask` "
                "argument: use the mask you are given, and no mask at all when it is None.",
                _attention_with(
                    lambda q, k, v, m: _masked(
                        _right_scores(q, k, v, m), causal_mask(q.shape[-2], T_k=k.shape[-2])
                    )
                ),
            ),
        ),
        properties=(Property("weights", _attention_weights_ok),),
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


def _measures_in_range(output: tuple, q, k, upstream, scaled) -> str | None:
    if not isinstance(output, tuple | list) or len(output) != 4:
        return "return four numbers: (score std, max weight, entropy, grad norm)"
    n_keys = k.shape[1]
    max_weight, entropy = float(output[1]), float(output[2])
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
        properties=(Property("measures", _measures_in_range),),
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
