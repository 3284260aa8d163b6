"""Exercises of notebook 03 (the causal mask): build the mask, and apply it to attention scores."""

from __future__ import annotations

import torch

from gptlib.lessons.checks.core import Exercise, Mistake, Property, register
from gptlib.model import causal_mask

# --- Exercise 1: the boolean mask ------------------------------------------------------------


def _mask_inputs(generator: torch.Generator) -> list[tuple]:
    return [(4,), (7,), (1,)]


def _is_bool(out: torch.Tensor, T: int) -> str | None:
    if out.dtype != torch.bool:
        return (
            f"the mask has dtype {out.dtype}; make it torch.bool (True = may attend) so that "
            "masked_fill and indexing accept it"
        )
    return None


def _no_peeking(out: torch.Tensor, T: int) -> str | None:
    if out.to(torch.bool).triu(diagonal=1).any():
        return "some query may see a key after it (True above the diagonal)"
    return None


def _sees_itself(out: torch.Tensor, T: int) -> str | None:
    if not out.to(torch.bool).diagonal().all():
        return "some query may not see its own key (False on the diagonal)"
    return None


register(
    Exercise(
        name="causal-mask",
        notebook="03_the_causal_mask",
        reference=lambda T: causal_mask(T),
        make_inputs=_mask_inputs,
        properties=(
            Property("boolean mask", _is_bool),
            Property("causality", _no_peeking),
            Property("every token sees itself", _sees_itself),
        ),
        mistakes=(
            Mistake(
                "triu-instead-of-tril",
                "your mask allows the upper triangle (keys after the query) and blocks the past. "
                "Row i is query i and column j is key j; query i may see keys j <= i, which is "
                "the lower triangle: torch.tril.",
                lambda T: torch.ones(T, T, dtype=torch.bool).triu(),
            ),
            Mistake(
                "diagonal-excluded",
                "your mask blocks the diagonal, so no token may look at itself (j < i instead "
                "of j <= i). Token 0 is then left with no key at all and its softmax row "
                "becomes NaN. Keep the diagonal: torch.tril with the default diagonal=0.",
                lambda T: torch.ones(T, T, dtype=torch.bool).tril(diagonal=-1),
            ),
            Mistake(
                "blocked-positions",
                "you returned the positions to block (True above the diagonal, the form "
                "masked_fill wants), but this function returns where attention is allowed "
                "(True on and below the diagonal, as gptlib.causal_mask and the boolean "
                "attn_mask of F.scaled_dot_product_attention do). Invert it with ~, or use tril.",
                lambda T: torch.ones(T, T, dtype=torch.bool).triu(diagonal=1),
            ),
        ),
        hints=(
            "Row i is the query at position i and column j the key at position j; a query may "
            "read its own position and every earlier one, never a later one.",
            "The allowed entries are the lower triangle, diagonal included: a [T, T] tensor of "
            "booleans, True where reading is allowed.",
        ),
    )
)

# --- Exercise 2: masked softmax --------------------------------------------------------------


def _scores_inputs(generator: torch.Generator) -> list[tuple]:
    # The last case is the lesson's edge: the future scores tower 150 above the allowed ones.
    # Masking before the softmax ignores them; zeroing and renormalising after the softmax
    # finds the allowed weights already underflowed to 0 and divides 0 by 0.
    towering_future = 150.0 * torch.ones(5, 5).triu(diagonal=1)
    return [
        (2.0 * torch.randn(5, 5, generator=generator),),
        (2.0 * torch.randn(2, 3, 4, 4, generator=generator),),
        (torch.randn(5, 5, generator=generator) + towering_future,),
    ]


def _masked_softmax(scores: torch.Tensor, fill: float, allowed: torch.Tensor) -> torch.Tensor:
    return torch.softmax(scores.masked_fill(~allowed, fill), dim=-1)


def _reference_weights(scores: torch.Tensor) -> torch.Tensor:
    return _masked_softmax(scores, float("-inf"), causal_mask(scores.shape[-1]))


def _rows_sum_to_one(out: torch.Tensor, scores: torch.Tensor) -> str | None:
    sums = out.sum(dim=-1)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-5):
        return (
            f"rows should sum to 1, but some sum to {sums.flatten()[sums.flatten().argmin()]:z.3f}"
        )
    return None


def _future_is_zero(out: torch.Tensor, scores: torch.Tensor) -> str | None:
    if (out.triu(diagonal=1) != 0).any():
        return "weights above the diagonal (keys after the query) must be exactly 0"
    return None


def _after_softmax(scores: torch.Tensor) -> torch.Tensor:
    allowed = causal_mask(scores.shape[-1])
    return torch.softmax(scores, dim=-1).masked_fill(~allowed, 0.0)


def _renormalised_after_softmax(scores: torch.Tensor) -> torch.Tensor:
    kept = _after_softmax(scores)
    return kept / kept.sum(dim=-1, keepdim=True)


def _wrong_axis(scores: torch.Tensor) -> torch.Tensor:
    allowed = causal_mask(scores.shape[-1])
    return torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-2)


register(
    Exercise(
        name="causal-attention-weights",
        notebook="03_the_causal_mask",
        reference=_reference_weights,
        make_inputs=_scores_inputs,
        properties=(
            Property("rows sum to 1", _rows_sum_to_one),
            Property("no weight on the future", _future_is_zero),
        ),
        mistakes=(
            Mistake(
                "mask-after-softmax",
                "you zeroed the future weights after the softmax, so the rows no longer sum to "
                "1: the weight the future keys had is thrown away instead of shared among the "
                "allowed keys. Mask the scores with -inf before the softmax.",
                _after_softmax,
            ),
            Mistake(
                "renormalised-after-softmax",
                "you zeroed the future weights after the softmax and renormalised the rows. "
                "That is right on paper but breaks when a future score is much larger than "
                "the allowed ones (150 larger here): the allowed weights underflow to 0 inside "
                "the softmax, and renormalising divides 0 by 0. Mask the scores with -inf "
                "before the softmax, so that it only ever sees the allowed keys.",
                _renormalised_after_softmax,
            ),
            Mistake(
                "filled-with-zero",
                "you filled the masked scores with 0, but e^0 = 1: the future keys still get "
                "weight. Fill them with float('-inf'), whose exponential is exactly 0.",
                lambda s: _masked_softmax(s, 0.0, causal_mask(s.shape[-1])),
            ),
            Mistake(
                "triu-instead-of-tril",
                "your mask keeps the upper triangle, so each query attends to the keys after "
                "it and never to earlier ones. Allowed keys are j <= i: the lower triangle "
                "(torch.tril).",
                lambda s: _masked_softmax(
                    s, float("-inf"), torch.ones(s.shape[-1], s.shape[-1], dtype=torch.bool).triu()
                ),
            ),
            Mistake(
                "diagonal-excluded",
                "your mask also blocks the diagonal, so no token attends to itself; row 0 has "
                "no key left and softmax of all -inf is NaN. Allow j <= i, diagonal included.",
                lambda s: _masked_softmax(
                    s,
                    float("-inf"),
                    torch.ones(s.shape[-1], s.shape[-1], dtype=torch.bool).tril(diagonal=-1),
                ),
            ),
            Mistake(
                "softmax-wrong-axis",
                "the softmax runs down the columns (dim=-2); each query's row of weights over "
                "the keys must sum to 1, so take the softmax over the last axis (dim=-1).",
                _wrong_axis,
            ),
            Mistake(
                "no-mask",
                "there is no mask: every query still sees the keys after it. Fill the scores "
                "above the diagonal with -inf before the softmax.",
                lambda s: torch.softmax(s, dim=-1),
            ),
        ),
        hints=(
            "A later key must end with weight exactly 0 while each row still sums to 1: block "
            "it before the softmax, not after.",
            "Every score above the diagonal (a key later than its query) becomes −∞; then the "
            "softmax over the keys, the last axis.",
        ),
    )
)
