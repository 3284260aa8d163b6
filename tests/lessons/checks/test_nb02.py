"""Notebook 02's exercises: the references agree with PyTorch, the softmax inputs separate a
stable softmax from fragile ones, right answers written in other ways pass, and a wrong half
of a tuple is named."""

import math
import re

import pytest
import torch
import torch.nn.functional as F

from gptlib.attention import attention_with_weights, causal_mask
from gptlib.lessons.checks import REGISTRY, CheckError, verify


def test_softmax_reference_is_torch_softmax():
    exercise = REGISTRY["softmax-rows"]
    for (scores,) in exercise.inputs():
        torch.testing.assert_close(exercise.reference(scores), torch.softmax(scores, dim=-1))


def test_attention_reference_is_torch_sdpa_and_gptlib():
    exercise = REGISTRY["attention"]
    masks_seen = []
    for q, k, v, *mask in exercise.inputs():
        out, weights = exercise.reference(q, k, v, *mask)
        attn_mask = mask[0] if mask else None
        masks_seen.append(attn_mask)
        torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask))
        ours_out, ours_weights = attention_with_weights(q, k, v, mask=attn_mask)
        torch.testing.assert_close(weights, ours_weights)
    # no mask; the causal mask; a mask that is not causal, every query seeing at least one key
    assert masks_seen[0] is None
    torch.testing.assert_close(masks_seen[1], causal_mask(5))
    assert masks_seen[2].any(-1).all() and masks_seen[2].triu(1).any()


def _shifted(shift):
    def softmax(s):
        e = (s - shift(s)).exp()
        return e / e.sum(dim=-1, keepdim=True)

    return softmax


FRAGILE_SOFTMAXES = {
    "plain exp": (_shifted(lambda s: 0.0), "exp(1000) overflows"),
    "plain exp in float64": (_shifted(lambda s: 0.0 * s.double()), "NaN or infinite"),
    "row mean": (_shifted(lambda s: s.mean(-1, keepdim=True)), "exp(150) overflows"),
    "row min": (_shifted(lambda s: s.amin(-1, keepdim=True)), "every exponent >= 0"),
    "row median": (_shifted(lambda s: s.median(-1, keepdim=True).values), "NaN or infinite"),
}


@pytest.mark.parametrize(("answer", "message"), FRAGILE_SOFTMAXES.values(), ids=FRAGILE_SOFTMAXES)
def test_a_softmax_without_the_max_shift_fails_on_a_wide_row(answer, message):
    with pytest.raises(CheckError, match=re.escape(message)) as info:
        verify("softmax-rows", answer)
    assert info.value.mistake is not None or "so that exp cannot overflow" in info.value.detail


SOFTMAXES = {
    "torch.softmax": lambda s: torch.softmax(s, dim=-1),
    "F.softmax": lambda s: F.softmax(s, -1),
    "log-sum-exp": lambda s: (s - s.logsumexp(dim=-1, keepdim=True)).exp(),
    "max shift in float64": _shifted(lambda s: s.double().max(dim=-1, keepdim=True)[0]),
    "over a transposed copy": lambda s: torch.softmax(s.transpose(-2, -1), dim=-2).transpose(
        -2, -1
    ),
    "nn.Softmax": torch.nn.Softmax(dim=-1),
}


@pytest.mark.parametrize("answer", SOFTMAXES.values(), ids=SOFTMAXES)
def test_other_right_softmaxes_pass(answer):
    verify("softmax-rows", answer)


def _by_einsum(q, k, v, mask=None):
    scores = torch.einsum("bqd,bkd->bqk", q, k).mul(q.shape[-1] ** -0.5)
    if mask is not None:
        scores = torch.where(mask, scores, float("-inf"))
    weights = scores.softmax(-1)
    return torch.einsum("bqk,bkd->bqd", weights, v), weights


def _by_sdpa(q, k, v, mask=None):
    scores = q @ k.mT / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask.logical_not(), -1e9)  # a large finite fill works too
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask), torch.softmax(scores, -1)


def _by_baddbmm_in_float64(q, k, v, mask=None):
    q, k, v = q.double(), k.double(), v.double()
    additive = torch.zeros(q.shape[1], k.shape[1], dtype=torch.float64)
    if mask is not None:
        additive = additive.masked_fill(~mask, float("-inf"))
    scores = torch.baddbmm(additive.expand(q.shape[0], -1, -1), q, k.transpose(1, 2))
    weights = (scores / math.sqrt(q.shape[-1])).softmax(-1)
    return [torch.bmm(weights, v), weights]  # a list is as good as a tuple


def _by_boolean_indexing(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores[..., ~mask] = float("-inf")
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def _renormalised_after_the_softmax(q, k, v, mask=None):
    # Equal to masking before the softmax on paper, and on these inputs in float32 too.
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    if mask is not None:
        weights = weights * mask
        weights = weights / weights.sum(-1, keepdim=True)
    return weights @ v, weights


@pytest.mark.parametrize(
    "answer",
    [
        _by_einsum,
        _by_sdpa,
        _by_baddbmm_in_float64,
        _by_boolean_indexing,
        _renormalised_after_the_softmax,
    ],
)
def test_other_right_attentions_pass(answer):
    verify("attention", answer)


def test_an_attention_without_a_mask_argument_is_told_what_raised():
    def attention(q, k, v):  # last round's signature
        return REGISTRY["attention"].reference(q, k, v)

    with pytest.raises(CheckError, match="your `attention` stopped: it raised TypeError"):
        verify("attention", attention)


def test_a_tuple_whose_second_item_is_off_names_the_weights_and_the_gap():
    def answer(q, k, v, mask=None):
        out, weights = REGISTRY["attention"].reference(q, k, v, mask)
        weights = weights.clone()
        weights[0, 1] = weights[0, 1].flip(-1)  # still a distribution: only the values tell
        return out, weights

    with pytest.raises(CheckError) as info:
        verify("attention", answer)
    assert info.value.mistake is None
    assert re.match(
        r"item 1 \(the weights\) differs from the reference: largest difference [\d.]+ at index "
        r"\[0, 1, \d\] \(yours [\d.]+, the reference's [\d.]+\)\. Hint [12] of 2: ",
        info.value.detail,
    ), info.value.detail
