"""GPTConfig.causal / CausalSelfAttention(causal=...): the switch that removes the mask."""

import pytest
import torch
import torch.nn.functional as F

import gptlib.model
from gptlib import GPT, Block, CausalSelfAttention, GPTConfig
from gptlib.sampling import sample_next


def _pair(impl: str):
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
    torch.testing.assert_close(attn(x)[0], expected)


@pytest.mark.parametrize("impl", ["sdpa", "explicit"])
def test_masked_attention_is_the_default_and_differs_from_unmasked(impl):
    masked, unmasked = _pair(impl)
    assert masked.causal and not unmasked.causal
    x = torch.randn(2, 5, 16)
    # The last position sees everything either way; earlier ones see more without the mask.
    torch.testing.assert_close(masked(x)[0][:, -1], unmasked(x)[0][:, -1])
    assert not torch.allclose(masked(x)[0][:, 0], unmasked(x)[0][:, 0])


def test_unmasked_weights_fill_the_upper_triangle():
    _, attn = _pair("explicit")
    _, weights = attn(torch.randn(1, 4, 16), return_weights=True)
    assert (weights > 0).all()  # every query sees every key, the later ones included
    torch.testing.assert_close(weights.sum(-1), torch.ones(1, 4, 4))


def test_block_and_gpt_thread_the_switch():
    assert not Block(16, 4, causal=False).attn.causal
    model = GPT(GPTConfig(vocab_size=7, d_model=16, n_heads=4, n_layers=2, causal=False))
    assert all(not block.attn.causal for block in model.blocks)
    assert all(block.attn.causal for block in GPT(GPTConfig(vocab_size=7, d_model=16)).blocks)


def test_unmasked_gpt_generates_by_recomputing_the_window(monkeypatch):
    """A KV cache would freeze keys computed before later tokens existed: not valid unmasked."""
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=7, d_model=16, n_heads=4, n_layers=2, causal=False))
    seen = []

    def recording_sample_next(logits, *args):
        seen.append(logits)
        return sample_next(logits, *args)

    monkeypatch.setattr(gptlib.model, "sample_next", recording_sample_next)
    out = model.generate(torch.tensor([[1, 2, 3]]), 5)
    with torch.no_grad():
        expected = [model(out[:, :t])[0][:, -1] for t in range(3, 8)]
    torch.testing.assert_close(torch.stack(seen), torch.stack(expected))
