"""The references of notebooks 03 and 04's exercises agree with gptlib, and a few answers that
are wrong in ways the catalogue does not list still get a useful message."""

import pytest
import torch

from gptlib import CausalSelfAttention
from gptlib.lessons.checks import REGISTRY, CheckError, check


def test_split_and_merge_references_are_the_layers_own():
    attn = CausalSelfAttention(12, 3)
    for x, h in REGISTRY["split-heads"].inputs():
        layer = CausalSelfAttention(x.shape[-1], h)
        torch.testing.assert_close(REGISTRY["split-heads"].reference(x, h), layer.split_heads(x))
    for (out,) in REGISTRY["merge-heads"].inputs():
        torch.testing.assert_close(REGISTRY["merge-heads"].reference(out), attn.merge_heads(out))


def test_layer_reference_equals_causal_self_attention_with_those_weights():
    for x, w_qkv, b_qkv, w_o, b_o, h in REGISTRY["multi-head-attention"].inputs():
        layer = CausalSelfAttention(x.shape[-1], h)
        with torch.no_grad():
            layer.qkv.weight.copy_(w_qkv)
            layer.qkv.bias.copy_(b_qkv)
            layer.proj.weight.copy_(w_o)
            layer.proj.bias.copy_(b_o)
        expected = layer(x)
        got = REGISTRY["multi-head-attention"].reference(x, w_qkv, b_qkv, w_o, b_o, h)
        torch.testing.assert_close(got, expected)


def test_merge_with_view_reports_the_torch_error():
    def student(out):
        B, h, T, d_h = out.shape
        return out.transpose(1, 2).view(B, T, h * d_h)

    with pytest.raises(CheckError, match="raised RuntimeError"):
        check("merge-heads", student)
