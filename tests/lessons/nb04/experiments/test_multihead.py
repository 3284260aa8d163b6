"""Multi-head attention taken apart: step shapes, the reshape pitfall, FLOPs, torch's layer."""

import functools
import math

import pytest
import torch
from torch import nn

from gptlib import GPT, CausalSelfAttention, GPTConfig, causal_mask
from gptlib.lessons.nb04.experiments.multihead import (
    HeadPatterns,
    count_flops,
    head_patterns,
    multi_head_by_loop,
    multi_head_flops,
    multi_head_steps,
    scramble_head_split,
    split_heads_without_transpose,
    to_torch_multihead,
)
from gptlib.lessons.shared.experiments.attention_maps import attention_maps, attention_weights
from gptlib.lessons.shared.experiments.variants import UnmaskedAttention


@pytest.fixture
def attn():
    torch.manual_seed(0)
    return CausalSelfAttention(16, 4)


@pytest.fixture
def x():
    return torch.randn(2, 8, 16, generator=torch.Generator().manual_seed(1))


def test_steps_have_the_chapter_shapes_and_end_at_the_layer_output(attn, x):
    steps = multi_head_steps(attn, x)
    sizes = {"B": 2, "T": 8, "d": 16, "h": 4, "d_h": 4}
    expected = [(2, 8, 16), (2, 8, 48), (2, 4, 8, 4), (2, 4, 8, 8), (2, 4, 8, 8), (2, 4, 8, 4)]
    expected += [(2, 8, 16), (2, 8, 16)]
    assert [tuple(s.tensor.shape) for s in steps] == expected
    assert [s.shape_of_symbols(sizes) for s in steps] == expected
    torch.testing.assert_close(steps[-1].tensor, attn(x))
    torch.testing.assert_close(steps[4].tensor, attention_weights(attn, x))


def test_steps_follow_the_mask_switch(attn, x):
    unmasked = UnmaskedAttention(16, 4)
    unmasked.load_state_dict(attn.state_dict())
    torch.testing.assert_close(multi_head_steps(unmasked, x)[-1].tensor, unmasked(x))


def test_wrong_split_is_a_plain_reshape_and_changes_the_output(attn, x):
    wrong = split_heads_without_transpose(x, 4)
    assert wrong.shape == attn.split_heads(x).shape
    assert torch.equal(wrong.flatten(), x.flatten())  # same numbers in memory order
    assert not torch.equal(wrong, attn.split_heads(x))
    y_wrong = multi_head_steps(attn, x, split=lambda t: split_heads_without_transpose(t, 4))
    assert not torch.allclose(y_wrong[-1].tensor, attn(x))


def test_scrambled_layer_is_the_layer_with_the_wrong_split(attn, x):
    scrambled = CausalSelfAttention(16, 4)
    scrambled.load_state_dict(attn.state_dict())
    assert scramble_head_split(scrambled) is scrambled
    by_steps = multi_head_steps(attn, x, split=lambda u: split_heads_without_transpose(u, 4))
    torch.testing.assert_close(scrambled(x), by_steps[-1].tensor)


def test_scramble_head_split_reaches_every_layer_of_a_gpt_and_only_multi_token_passes():
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=7, d_model=16, n_heads=4, n_layers=2, max_len=8)).eval()
    idx = torch.randint(0, 7, (1, 8))
    right_logits, _ = model(idx)
    right_one, _ = model(idx[:, :1])
    scramble_head_split(model)
    assert all(isinstance(b.attn.split_heads, functools.partial) for b in model.blocks)
    assert not torch.allclose(model(idx)[0], right_logits)
    torch.testing.assert_close(model(idx[:, :1])[0], right_one)  # one token splits the same


@pytest.mark.parametrize("bias", [True, False])
def test_loop_over_heads_equals_the_batched_layer(bias, x):
    torch.manual_seed(0)
    attn = CausalSelfAttention(16, 4, bias=bias)
    torch.testing.assert_close(multi_head_by_loop(attn, x), attn(x))


def test_count_flops_counts_matmuls():
    a, b = torch.randn(3, 5), torch.randn(5, 7)
    assert count_flops(torch.matmul, a, b) == 2 * 3 * 5 * 7
    assert count_flops(torch.relu, a) == 0


@pytest.mark.parametrize("h", [1, 2, 4, 8])
def test_multi_head_flops_match_the_formulas_for_every_head_count(h):
    d, T, B = 32, 16, 2
    counts = multi_head_flops(d, h, T, B)
    assert counts["qkv projection"] == 6 * B * T * d * d
    assert counts["scores"] == 2 * B * T * T * d
    assert counts["weights @ v"] == 2 * B * T * T * d
    assert counts["output projection"] == 2 * B * T * d * d
    assert counts["total"] == 8 * B * T * d * d + 4 * B * T * T * d
    assert counts["score entries"] == B * h * T * T


@pytest.mark.parametrize("bias", [True, False])
def test_torch_multihead_with_copied_weights_is_the_same_layer(bias, x):
    torch.manual_seed(0)
    attn = CausalSelfAttention(16, 4, bias=bias)
    mha = to_torch_multihead(attn)
    assert isinstance(mha, nn.MultiheadAttention) and mha.batch_first
    y, w = mha(x, x, x, attn_mask=~causal_mask(8), average_attn_weights=False)
    torch.testing.assert_close(y, attn(x))
    torch.testing.assert_close(w, attention_weights(attn, x))
    assert sum(p.numel() for p in mha.parameters()) == sum(p.numel() for p in attn.parameters())


def _gpt(h: int, layers: int = 2) -> GPT:
    torch.manual_seed(h)
    return GPT(GPTConfig(vocab_size=9, d_model=16, n_heads=h, n_layers=layers, max_len=12)).eval()


IDX = torch.tensor([[1, 2, 3, 4, 5, 6]])


@pytest.mark.parametrize("h", [1, 2, 4, 8])
def test_head_patterns_are_causal_distributions_with_a_fixed_parameter_count(h):
    model = _gpt(h)
    result = head_patterns(model, IDX, layer=1)
    assert result.n_heads == h and result.d_head == 16 // h
    assert result.n_parameters == 4 * 16 * 16 + 4 * 16  # W_QKV, W_O and their biases
    assert result.weights.shape == (h, 6, 6)
    torch.testing.assert_close(result.weights.sum(-1), torch.ones(h, 6))
    assert (result.weights.triu(1) == 0).all()
    torch.testing.assert_close(result.weights, attention_maps(model, IDX)[1, 0])
    assert result.title() == f"{h} head(s) of width {16 // h}: 1,088 attention parameters"


def test_head_pattern_entropies_previous_token_weights_and_lines():
    uniform = torch.tril(torch.ones(3, 3))
    uniform = uniform / uniform.sum(-1, keepdim=True)
    sharp = torch.eye(3)
    result = HeadPatterns(2, 8, 1088, torch.stack([uniform, sharp]))
    expected = (0.0 + math.log(2.0) + math.log(3.0)) / 3
    torch.testing.assert_close(result.entropies(), torch.tensor([expected, 0.0]))
    torch.testing.assert_close(result.previous_token_weights(), torch.tensor([5 / 12, 0.0]))
    lines = result.lines()
    assert lines[:3] == ["n_heads = 2", "d_head = 8", "parameters = 1,088"]
    assert lines[3:] == [
        "head 0 mean entropy = 0.597",
        "head 0 weight on previous token = 0.417",
        "head 1 mean entropy = 0.000",
        "head 1 weight on previous token = 0.000",
    ]


def test_head_patterns_refuses_bad_input():
    with pytest.raises(ValueError, match=r"\[1, T\]"):
        head_patterns(_gpt(2), torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="layer"):
        head_patterns(_gpt(2), IDX, layer=2)


def test_steps_run_a_students_layer_with_its_own_split_and_merge(attn, x):
    """A module holding only `qkv` and `proj` (no split_heads of its own), run with a split and
    a merge written another way: the stages end at gptlib's layer's output for the same weights,
    and the merged stage is what goes into its output projection."""
    student = nn.Module()
    student.qkv, student.proj = attn.qkv, attn.proj
    steps = multi_head_steps(
        student,
        x,
        split=lambda t: torch.stack(t.chunk(4, dim=-1), dim=1),
        merge=lambda out: torch.cat(out.unbind(dim=1), dim=-1),
    )
    torch.testing.assert_close(steps[-1].tensor, attn(x))
    torch.testing.assert_close(attn.proj(steps[-2].tensor), steps[-1].tensor)
    assert [s.name for s in steps][-2:] == ["merge heads", "output projection"]
