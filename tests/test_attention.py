"""Attention against the chapter's worked example and against torch's own implementations."""

import math

import pytest
import torch
import torch.nn.functional as F

from gptlib import CausalSelfAttention, causal_mask, scaled_dot_product_attention


def test_chapter_worked_example():
    q = torch.tensor([[1.0, 0.0]])
    k = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    v = torch.tensor([[1.0, 0.0], [0.0, 2.0], [3.0, 1.0]])
    out, weights = scaled_dot_product_attention(q, k, v)
    # by hand: scores (1, 0, 1)/√2; e^0.707 = 2.028; weights (2.028, 1, 2.028) / 5.056
    e = math.exp(1 / math.sqrt(2))
    expected = torch.tensor([[e, 1.0, e]]) / (2 * e + 1)
    torch.testing.assert_close(weights, expected)
    assert [round(w, 3) for w in weights[0].tolist()] == [0.401, 0.198, 0.401]
    assert [round(o, 3) for o in out[0].tolist()] == [1.604, 0.797]


def test_unscaled_option_skips_the_division():
    q, k, v = torch.randn(3, 4, 8).unbind(0)
    _, w = scaled_dot_product_attention(q, k, v, scale=False)
    torch.testing.assert_close(w, torch.softmax(q @ k.T, -1))


def test_matches_torch_sdpa_with_and_without_mask():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 7, 16, generator=g) for _ in range(3))
    out, w = scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v))
    out, w = scaled_dot_product_attention(q, k, v, mask=causal_mask(7))
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True))
    assert torch.all(w.triu(1) == 0)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3, 7))


def test_causal_mask_with_cache_offset():
    assert causal_mask(3).tolist() == [
        [True, False, False],
        [True, True, False],
        [True, True, True],
    ]
    assert causal_mask(2, 4).tolist() == [[True, True, True, False], [True, True, True, True]]
    with pytest.raises(ValueError, match="T_q=5, T_k=3"):
        causal_mask(5, 3)


def test_shape_errors_name_the_shapes():
    with pytest.raises(ValueError, match=r"q \[4, 8\] and k \[4, 6\]"):
        scaled_dot_product_attention(torch.randn(4, 8), torch.randn(4, 6), torch.randn(4, 6))
    with pytest.raises(ValueError, match="mask must be boolean"):
        scaled_dot_product_attention(*torch.randn(3, 4, 8), mask=torch.ones(4, 4))


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
def test_explicit_sdpa_and_torch_multihead_agree(n_heads):
    torch.manual_seed(0)
    attn = CausalSelfAttention(32, n_heads).eval()
    x = torch.randn(3, 10, 32)
    fast, _ = attn(x)
    attn.impl = "explicit"
    explicit, _ = attn(x)
    mha = _copy_into_multihead(attn).eval()
    reference, _ = mha(x, x, x, attn_mask=~causal_mask(10), need_weights=False)
    torch.testing.assert_close(explicit, reference, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(fast, reference, atol=1e-5, rtol=1e-5)


def test_returned_weights_match_multihead_per_head_weights():
    torch.manual_seed(1)
    attn = CausalSelfAttention(16, 2).eval()
    x = torch.randn(1, 6, 16)
    _, weights = attn(x, return_weights=True)
    mha = _copy_into_multihead(attn).eval()
    _, ref = mha(x, x, x, attn_mask=~causal_mask(6), average_attn_weights=False)
    torch.testing.assert_close(weights, ref)


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
        for impl in ("sdpa", "explicit"):
            attn.impl = impl
            y, _ = attn(x)
            y2, _ = attn(x2)
            assert torch.equal(y[0, :j], y2[0, :j]), (impl, j)
            assert not torch.allclose(y[0, j], y2[0, j])


def test_bad_head_count_and_bad_input_are_explained():
    with pytest.raises(ValueError, match=r"d_model=130 is not divisible by n_heads=4.*\[1, 2, 5"):
        CausalSelfAttention(130, 4)
    attn = CausalSelfAttention(16, 4)
    with pytest.raises(ValueError, match=r"shape \[B, T, 16\], got \[8, 16\]"):
        attn(torch.randn(8, 16))
    with pytest.raises(ValueError, match="floating-point"):
        attn(torch.ones(1, 8, 16, dtype=torch.long))
