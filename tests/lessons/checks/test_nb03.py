"""Notebook 03's exercises: the references agree with gptlib, right answers written in other
ways pass, and masking after the softmax fails on scores where it underflows."""

import pytest
import torch
import torch.nn.functional as F

from gptlib import causal_mask
from gptlib.lessons.checks import REGISTRY, CheckError, verify


def test_mask_reference_allows_exactly_the_keys_at_or_before_each_query():
    """Against the definition (key j ≤ query i), not against gptlib's causal_mask, which the
    reference calls."""
    assert REGISTRY["causal-mask"].reference(3).tolist() == [
        [True, False, False],
        [True, True, False],
        [True, True, True],
    ]
    for (T,) in REGISTRY["causal-mask"].inputs():
        i, j = torch.meshgrid(torch.arange(T), torch.arange(T), indexing="ij")
        assert torch.equal(REGISTRY["causal-mask"].reference(T), j <= i)


def test_a_float_mask_is_refused_with_its_dtype():
    with pytest.raises(CheckError, match="dtype torch.float32"):
        verify("causal-mask", lambda T: torch.ones(T, T).tril())


MASKS = {
    "arange comparison": lambda T: torch.arange(T)[:, None] >= torch.arange(T)[None, :],
    "not the strict upper triangle": lambda T: ~torch.ones(T, T, dtype=torch.bool).triu(1),
    "float tril made boolean": lambda T: torch.tril(torch.ones(T, T)).bool(),
    "tril_indices": lambda T: torch.zeros(T, T, dtype=torch.bool).index_put(
        tuple(torch.tril_indices(T, T)), torch.tensor(True)
    ),
}


@pytest.mark.parametrize("answer", MASKS.values(), ids=MASKS)
def test_other_right_masks_pass(answer):
    verify("causal-mask", answer)


def test_attention_weights_reference_matches_gptlibs_attention():
    from gptlib import attention_with_weights

    for (scores,) in REGISTRY["causal-attention-weights"].inputs():
        T = scores.shape[-1]
        # q = scores, k = identity·√T reproduces the scores inside gptlib's attention.
        _, weights = attention_with_weights(
            scores, torch.eye(T) * T**0.5, torch.eye(T), mask=causal_mask(T)
        )
        torch.testing.assert_close(REGISTRY["causal-attention-weights"].reference(scores), weights)


def _exp_where_allowed(scores):
    allowed = causal_mask(scores.shape[-1])
    top = scores.masked_fill(~allowed, float("-inf")).amax(dim=-1, keepdim=True)
    e = torch.where(allowed, (scores - top).exp(), 0.0)
    return e / e.sum(dim=-1, keepdim=True)


WEIGHTS = {
    "-1e9 instead of -inf": lambda s: torch.softmax(
        s.masked_fill(~causal_mask(s.shape[-1]), -1e9), dim=-1
    ),
    "additive -inf mask": lambda s: torch.softmax(
        s + torch.full(s.shape[-2:], float("-inf")).triu(1), dim=-1
    ),
    "torch.where in float64": lambda s: F.softmax(
        torch.where(causal_mask(s.shape[-1]), s.double(), float("-inf")), dim=-1
    ),
    "exp of the allowed scores only": _exp_where_allowed,
}


@pytest.mark.parametrize("answer", WEIGHTS.values(), ids=WEIGHTS)
def test_other_right_masked_softmaxes_pass(answer):
    verify("causal-attention-weights", answer)


def test_zeroing_and_renormalising_after_the_softmax_fails_where_it_underflows():
    def after(scores):
        weights = torch.softmax(scores, dim=-1) * causal_mask(scores.shape[-1])
        return weights / weights.sum(dim=-1, keepdim=True)

    *ordinary, towering = REGISTRY["causal-attention-weights"].inputs()
    for (scores,) in ordinary:  # right on ordinary scores: only the edge case separates them
        torch.testing.assert_close(
            after(scores), REGISTRY["causal-attention-weights"].reference(scores)
        )
    with pytest.raises(CheckError, match="renormalising divides 0 by 0") as info:
        verify("causal-attention-weights", after)
    assert info.value.mistake == "renormalised-after-softmax"
