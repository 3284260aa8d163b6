"""Attention against the chapter's worked example and against torch's own implementations."""

import math

import pytest
import torch
import torch.nn.functional as F

import gptlib.model
from gptlib import CausalSelfAttention, KVCache, attention_with_weights, causal_mask


def test_chapter_worked_example():
    q = torch.tensor([[1.0, 0.0]])
    k = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    v = torch.tensor([[1.0, 0.0], [0.0, 2.0], [3.0, 1.0]])
    out, weights = attention_with_weights(q, k, v)
    # by hand: scores (1, 0, 1)/√2; e^0.707 = 2.028; weights (2.028, 1, 2.028) / 5.056
    e = math.exp(1 / math.sqrt(2))
    expected = torch.tensor([[e, 1.0, e]]) / (2 * e + 1)
    torch.testing.assert_close(weights, expected)
    assert [round(w, 3) for w in weights[0].tolist()] == [0.401, 0.198, 0.401]
    assert [round(o, 3) for o in out[0].tolist()] == [1.604, 0.797]


def test_unscaled_option_skips_the_division():
    q, k, v = torch.randn(3, 4, 8).unbind(0)
    _, w = attention_with_weights(q, k, v, scaled=False)
    torch.testing.assert_close(w, torch.softmax(q @ k.T, -1))


def test_matches_torch_sdpa_with_and_without_mask():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 7, 16, generator=g) for _ in range(3))
    out, w = attention_with_weights(q, k, v)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v))
    out, w = attention_with_weights(q, k, v, mask=causal_mask(7))
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True))
    assert torch.all(w.triu(1) == 0)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3, 7))


def test_causal_mask_with_cache_offset():
    assert causal_mask(3).tolist() == [
        [True, False, False],
        [True, True, False],
        [True, True, True],
    ]
    assert causal_mask(2, T_k=4).tolist() == [
        [True, True, True, False],
        [True, True, True, True],
    ]


def _copy_into_multihead(attn: CausalSelfAttention) -> torch.nn.MultiheadAttention:
    d = attn.d_model
    mha = torch.nn.MultiheadAttention(d, attn.n_heads, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(attn.qkv.weight)
        mha.in_proj_bias.copy_(attn.qkv.bias)
        mha.out_proj.weight.copy_(attn.proj.weight)
        mha.out_proj.bias.copy_(attn.proj.bias)
    return mha


@pytest.mark.parametrize("n_heads", [1, 4, 8])
def test_the_layer_and_torch_multihead_agree(n_heads):
    torch.manual_seed(0)
    attn = CausalSelfAttention(32, n_heads).eval()
    x = torch.randn(3, 10, 32)
    mha = _copy_into_multihead(attn).eval()
    reference, _ = mha(x, x, x, attn_mask=~causal_mask(10), need_weights=False)
    torch.testing.assert_close(attn(x), reference, atol=1e-5, rtol=1e-5)


def test_the_layer_written_out_by_hand():
    """The chapter's forward pass, with the −∞ mask on the upper triangle, step by step."""
    torch.manual_seed(1)
    attn = CausalSelfAttention(12, 3).eval()
    x = torch.randn(2, 5, 12)
    q, k, v = (t.view(2, 5, 3, 4).transpose(1, 2) for t in attn.qkv(x).split(12, dim=-1))
    scores = (q @ k.transpose(-2, -1) / 2.0).masked_fill(torch.ones(5, 5).triu(1) > 0, -math.inf)
    out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(2, 5, 12)
    torch.testing.assert_close(attn(x), attn.proj(out))


def test_the_full_triangle_takes_the_fused_is_causal_path(monkeypatch):
    calls, fused = [], F.scaled_dot_product_attention

    def recording(q, k, v, **kwargs):
        calls.append(kwargs)
        return fused(q, k, v, **kwargs)

    monkeypatch.setattr(gptlib.model.F, "scaled_dot_product_attention", recording)
    attn = CausalSelfAttention(8, 2).eval()
    attn(torch.randn(1, 6, 8))  # T == T_k: no mask tensor, is_causal
    cache = KVCache.empty((1, 2, 8, 4), device=torch.device("cpu"), dtype=torch.float32)
    attn(torch.randn(1, 3, 8), cache)  # the prompt fills an empty cache: T == T_k again
    attn(torch.randn(1, 1, 8), cache)  # one new token reads every cached position
    attn(torch.randn(1, 2, 8), cache)  # two new after four cached: the shifted band
    assert calls[0] == calls[1] == {"dropout_p": 0.0, "is_causal": True}
    assert calls[2] == {"attn_mask": None, "dropout_p": 0.0}
    assert torch.equal(calls[3]["attn_mask"], causal_mask(2, T_k=6))


def test_split_and_merge_heads_are_inverse_and_keep_tokens_apart():
    attn = CausalSelfAttention(12, 3)
    x = torch.arange(2 * 5 * 12, dtype=torch.float32).view(2, 5, 12)
    heads = attn.split_heads(x)
    assert heads.shape == (2, 3, 5, 4)
    # head 1, token 2 holds features 4..7 of token 2
    torch.testing.assert_close(heads[0, 1, 2], x[0, 2, 4:8])
    torch.testing.assert_close(attn.merge_heads(heads), x)


def test_causality_changing_token_j_changes_no_output_before_j():
    torch.manual_seed(2)
    attn = CausalSelfAttention(16, 4).eval()
    x = torch.randn(1, 8, 16)
    for j in range(8):
        x2 = x.clone()
        x2[0, j] += 1.0
        y, y2 = attn(x), attn(x2)
        assert torch.equal(y[0, :j], y2[0, :j]), j
        assert not torch.allclose(y[0, j], y2[0, j])


def test_dropout_on_the_written_out_path_drops_weights_once():
    torch.manual_seed(3)
    q, k, v = (torch.randn(2, 5, 8) for _ in range(3))
    torch.manual_seed(4)
    out, weights = attention_with_weights(q, k, v, dropout_p=0.5)
    torch.manual_seed(4)
    expected = F.dropout(torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(8), -1), 0.5) @ v
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 5))  # the weights before dropout


def test_cache_appends_after_what_it_holds():
    cache = KVCache.empty((1, 2, 4, 3), device=torch.device("cpu"), dtype=torch.float32)
    k, v = torch.randn(1, 2, 3, 3), torch.randn(1, 2, 3, 3)
    keys, values = cache.append(k, v)
    assert cache.filled == 3 and torch.equal(keys, k) and torch.equal(values, v)
    keys, values = cache.append(k[:, :, :1], v[:, :, :1])
    assert cache.filled == 4 and torch.equal(keys[:, :, 3:], k[:, :, :1])
    assert torch.equal(values, torch.cat([v, v[:, :, :1]], dim=2))
