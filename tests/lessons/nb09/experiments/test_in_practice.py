"""The "in practice" counts of notebook 09 against hand counts and independent constructions."""

import pytest
import torch
from torch import nn

from gptlib.lessons.nb09.experiments.in_practice import (
    mixture_of_experts_parameters,
    qkv_bias_parameters,
    rotate,
)
from gptlib.lessons.nb09.experiments.llama_shape import LlamaShaped


def test_qkv_biases_are_one_per_output_feature_of_the_three_projections():
    assert qkv_bias_parameters(32, 4096, 32, 32) == 32 * 3 * 4096  # multi-head: all d wide
    q, k, v = nn.Linear(64, 64), nn.Linear(64, 16), nn.Linear(64, 16)  # 2 heads of 8 for k, v
    biases = q.bias.numel() + k.bias.numel() + v.bias.numel()
    assert qkv_bias_parameters(2, 64, 8, 2) == 2 * biases


def test_rope_keeps_norms_and_makes_scores_depend_on_the_offset_only():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 1, 64, generator=g, dtype=torch.float64)

    def score(m, n):
        return (rotate(q, torch.tensor([m])) @ rotate(k, torch.tensor([n])).T).item()

    assert score(7, 3) == pytest.approx(score(1007, 1003), abs=1e-9)
    assert score(7, 3) != pytest.approx(score(7, 4), abs=1e-3)
    torch.testing.assert_close(rotate(q, torch.tensor([0])), q)  # position 0: no turn
    torch.testing.assert_close(rotate(q, torch.tensor([5])).norm(), q.norm())


def test_rope_turns_the_first_pair_by_the_position_itself():
    x = torch.zeros(1, 4)
    x[0, 0] = 1.0
    turned = rotate(x, torch.tensor([1]))  # θ_0 = 1: one radian
    one = torch.tensor(1.0)
    torch.testing.assert_close(turned[0, :2], torch.stack([one.cos(), one.sin()]))


def test_rope_refuses_odd_widths_and_mismatched_positions():
    with pytest.raises(ValueError, match="d_h=5 must be even"):
        rotate(torch.zeros(2, 5), torch.arange(2))
    with pytest.raises(ValueError, match=r"positions \[3\] must give one position per row"):
        rotate(torch.zeros(2, 4), torch.arange(3))


def test_one_expert_chosen_of_one_is_the_dense_llama_plus_its_router():
    with torch.device("meta"):
        dense = LlamaShaped(2, 64, 8, 50, 96, n_kv_heads=2)
    count = mixture_of_experts_parameters(2, 64, 8, 2, 96, 50, n_experts=1, top_k=1)
    n_dense = sum(p.numel() for p in dense.parameters())
    assert count.total == count.active == n_dense + 2 * 64  # a 64 → 1 router per layer


def test_experts_multiply_the_ffn_and_top_k_sets_what_a_token_uses():
    one = mixture_of_experts_parameters(2, 64, 8, 2, 96, 50, n_experts=1, top_k=1)
    eight = mixture_of_experts_parameters(2, 64, 8, 2, 96, 50, n_experts=8, top_k=2)
    expert = 3 * 64 * 96
    assert eight.total - one.total == 2 * (7 * expert + 7 * 64)
    assert eight.active - one.active == 2 * (expert + 7 * 64)
    with pytest.raises(ValueError, match="top_k=3 experts per token, but there are only 2"):
        mixture_of_experts_parameters(2, 64, 8, 2, 96, 50, n_experts=2, top_k=3)
