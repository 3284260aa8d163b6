"""Notebook 04's exercises: the references agree with gptlib's layer, right answers written in
other ways pass (other reshapes, PyTorch's own attention modules), a torch error is reported."""

import pytest
import torch
import torch.nn.functional as F

from gptlib import CausalSelfAttention, causal_mask
from gptlib.lessons.checks import REGISTRY, CheckError, verify


def test_split_and_merge_references_are_the_layers_own():
    attn = CausalSelfAttention(12, 3)
    for x, h in REGISTRY["split-heads"].inputs():
        layer = CausalSelfAttention(x.shape[-1], h)
        torch.testing.assert_close(REGISTRY["split-heads"].reference(x, h), layer.split_heads(x))
    for (out,) in REGISTRY["merge-heads"].inputs():
        torch.testing.assert_close(REGISTRY["merge-heads"].reference(out), attn.merge_heads(out))


def _with_weights(layer, w_qkv, b_qkv, w_o, b_o):
    with torch.no_grad():
        layer.qkv.weight.copy_(w_qkv)
        layer.qkv.bias.copy_(b_qkv)
        layer.proj.weight.copy_(w_o)
        layer.proj.bias.copy_(b_o)
    return layer


def test_layer_reference_equals_causal_self_attention_with_those_weights():
    for x, w_qkv, b_qkv, w_o, b_o, h in REGISTRY["multi-head-attention"].inputs():
        layer = _with_weights(CausalSelfAttention(x.shape[-1], h), w_qkv, b_qkv, w_o, b_o)
        got = REGISTRY["multi-head-attention"].reference(x, w_qkv, b_qkv, w_o, b_o, h)
        torch.testing.assert_close(got, layer(x))


def test_merge_with_view_reports_the_torch_error():
    def student(out):
        B, h, T, d_h = out.shape
        return out.transpose(1, 2).view(B, T, h * d_h)

    with pytest.raises(CheckError, match="raised RuntimeError"):
        verify("merge-heads", student)


SPLITS = {
    "reshape and permute": lambda x, h: x.reshape(*x.shape[:2], h, -1).permute(0, 2, 1, 3),
    "unflatten": lambda x, h: x.unflatten(-1, (h, -1)).transpose(1, 2),
    "stack of chunks": lambda x, h: torch.stack(x.chunk(h, dim=-1), dim=1),
}
MERGES = {
    "permute and reshape": lambda o: o.permute(0, 2, 1, 3).reshape(o.shape[0], o.shape[2], -1),
    "cat of heads": lambda o: torch.cat(o.unbind(1), dim=-1),
    "contiguous then view": lambda o: (
        o.transpose(1, 2).contiguous().view(o.shape[0], o.shape[2], -1)
    ),
    "flatten": lambda o: o.transpose(1, 2).flatten(2),
}


@pytest.mark.parametrize("answer", SPLITS.values(), ids=SPLITS)
def test_other_right_splits_pass(answer):
    verify("split-heads", answer)


@pytest.mark.parametrize("answer", MERGES.values(), ids=MERGES)
def test_other_right_merges_pass(answer):
    verify("merge-heads", answer)


def _by_sdpa(x, w_qkv, b_qkv, w_o, b_o, n_heads):
    B, T, d = x.shape
    q, k, v = (
        t.view(B, T, n_heads, -1).transpose(1, 2) for t in F.linear(x, w_qkv, b_qkv).chunk(3, -1)
    )
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return F.linear(out.transpose(1, 2).reshape(B, T, d), w_o, b_o)


def _by_nn_multihead_attention(x, w_qkv, b_qkv, w_o, b_o, n_heads):
    d = x.shape[-1]
    layer = torch.nn.MultiheadAttention(d, n_heads, batch_first=True)
    with torch.no_grad():
        layer.in_proj_weight.copy_(w_qkv)
        layer.in_proj_bias.copy_(b_qkv)
        layer.out_proj.weight.copy_(w_o)
        layer.out_proj.bias.copy_(b_o)
    blocked = ~causal_mask(x.shape[1])  # nn.MultiheadAttention's True means "may not attend"
    return layer(x, x, x, attn_mask=blocked, need_weights=False)[0]


def _by_gptlib_layer(x, w_qkv, b_qkv, w_o, b_o, n_heads):
    layer = CausalSelfAttention(x.shape[-1], n_heads)
    return _with_weights(layer, w_qkv, b_qkv, w_o, b_o)(x)


@pytest.mark.parametrize("answer", [_by_sdpa, _by_nn_multihead_attention, _by_gptlib_layer])
def test_other_right_attention_layers_pass(answer):
    verify("multi-head-attention", answer)
