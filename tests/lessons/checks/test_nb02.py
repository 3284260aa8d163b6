"""The references behind the exercises of notebooks 01 and 02 agree with independent ones."""

import torch
import torch.nn.functional as F

from gptlib.attention import scaled_dot_product_attention
from gptlib.lessons.checks import REGISTRY


def test_softmax_reference_is_torch_softmax():
    exercise = REGISTRY["softmax-rows"]
    for (scores,) in exercise.inputs():
        torch.testing.assert_close(exercise.reference(scores), torch.softmax(scores, dim=-1))


def test_attention_reference_is_torch_sdpa_and_gptlib():
    exercise = REGISTRY["attention"]
    for q, k, v in exercise.inputs():
        out, weights = exercise.reference(q, k, v)
        torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v))
        ours_out, ours_weights = scaled_dot_product_attention(q, k, v)
        torch.testing.assert_close(weights, ours_weights)
