"""Attention against the chapter's worked example and against torch's own implementations."""

import math

import pytest
import torch
import torch.nn.functional as F

from gptlib import CausalSelfAttention, KVCache, causal_mask, scaled_dot_product_attention
from gptlib.hooks import attention_weights


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
    with pytest.raises(ValueError, match=r"got q \[4, 8\], k \[4, 6\], v \[4, 6\]"):
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
    fast = attn(x)
    attn.impl = "explicit"
    explicit = attn(x)
    mha = _copy_into_multihead(attn).eval()
    reference, _ = mha(x, x, x, attn_mask=~causal_mask(10), need_weights=False)
    torch.testing.assert_close(explicit, reference, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(fast, reference, atol=1e-5, rtol=1e-5)


def test_hooked_weights_match_multihead_per_head_weights():
    torch.manual_seed(1)
    attn = CausalSelfAttention(16, 2).eval()
    x = torch.randn(1, 6, 16)
    with attention_weights(attn) as recorded:
        attn(x)
    assert attn.impl == "sdpa"  # the explicit path was only borrowed for the recording
    (weights,) = recorded
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
            y, y2 = attn(x), attn(x2)
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


def test_dropout_on_the_explicit_path_drops_weights_once():
    torch.manual_seed(3)
    q, k, v = (torch.randn(2, 5, 8) for _ in range(3))
    torch.manual_seed(4)
    out, weights = scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    torch.manual_seed(4)
    expected = F.dropout(torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(8), -1), 0.5) @ v
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 5))  # the weights before dropout


def test_cache_appends_and_refuses_to_overflow():
    cache = KVCache.empty(1, 2, 4, 3, torch.device("cpu"), torch.float32)
    k, v = torch.randn(1, 2, 3, 3), torch.randn(1, 2, 3, 3)
    keys, values = cache.append(k, v)
    assert cache.filled == 3 and torch.equal(keys, k) and torch.equal(values, v)
    with pytest.raises(ValueError, match=r"positions 3..4 exceed max_len=4"):
        cache.append(k[:, :, :2], v[:, :, :2])


# --- causal=False: the switch that removes the mask (notebook 03's pitfall) ---


def _pair(impl: str) -> tuple[CausalSelfAttention, CausalSelfAttention]:
    torch.manual_seed(0)
    masked = CausalSelfAttention(16, 4, impl=impl)
    unmasked = CausalSelfAttention(16, 4, impl=impl, causal=False)
    unmasked.load_state_dict(masked.state_dict())
    return masked, unmasked


@pytest.mark.parametrize("impl", ["sdpa", "explicit"])
def test_unmasked_attention_matches_torch_without_mask(impl):
    _, attn = _pair(impl)
    x = torch.randn(2, 5, 16)
    q, k, v = (attn.split_heads(t) for t in attn.qkv(x).split(16, dim=-1))
    expected = attn.proj(attn.merge_heads(F.scaled_dot_product_attention(q, k, v)))
    torch.testing.assert_close(attn(x), expected)


@pytest.mark.parametrize("impl", ["sdpa", "explicit"])
def test_masked_attention_is_the_default_and_differs_from_unmasked(impl):
    masked, unmasked = _pair(impl)
    assert masked.causal and not unmasked.causal
    x = torch.randn(2, 5, 16)
    # The last position sees everything either way; earlier ones see more without the mask.
    torch.testing.assert_close(masked(x)[:, -1], unmasked(x)[:, -1])
    assert not torch.allclose(masked(x)[:, 0], unmasked(x)[:, 0])


def test_unmasked_weights_fill_the_upper_triangle():
    _, attn = _pair("explicit")
    with attention_weights(attn) as recorded:
        attn(torch.randn(1, 4, 16))
    assert (recorded[0] > 0).all()  # every query sees every key, the later ones included
    torch.testing.assert_close(recorded[0].sum(-1), torch.ones(1, 4, 4))
