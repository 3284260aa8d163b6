"""The references of notebooks 03 and 04's exercises agree with gptlib, and a few answers that
are wrong in ways the catalogue does not list still get a useful message."""

import pytest
import torch

from gptlib import causal_mask
from gptlib.lessons.checks import REGISTRY, CheckError, check


def test_mask_reference_is_gptlibs():
    for (T,) in REGISTRY["causal-mask"].inputs():
        assert torch.equal(REGISTRY["causal-mask"].reference(T), causal_mask(T))


def test_a_float_mask_is_refused_with_its_dtype():
    with pytest.raises(CheckError, match="dtype torch.float32"):
        check("causal-mask", lambda T: torch.ones(T, T).tril())


def test_attention_weights_reference_matches_scaled_dot_product_attention():
    from gptlib import scaled_dot_product_attention

    for (scores,) in REGISTRY["causal-attention-weights"].inputs():
        T = scores.shape[-1]
        # q = scores, k = identity·√T reproduces the scores inside gptlib's attention.
        _, weights = scaled_dot_product_attention(
            scores, torch.eye(T) * T**0.5, torch.eye(T), mask=causal_mask(T)
        )
        torch.testing.assert_close(REGISTRY["causal-attention-weights"].reference(scores), weights)


def test_large_negative_fill_is_accepted():
    """-1e9 instead of -inf gives the same weights in float32: not a mistake here."""

    def student(scores):
        return torch.softmax(scores.masked_fill(~causal_mask(scores.shape[-1]), -1e9), dim=-1)

    check("causal-attention-weights", student, quiet=True)
