"""experiments.saturation against the chapter's variance argument and a closed-form softmax
Jacobian."""

import math
from itertools import pairwise

import pytest
import torch

from gptlib.lessons.experiments.saturation import saturation, saturation_sweep

WIDTHS = [1, 4, 16, 64, 128, 256, 1024]


@pytest.mark.parametrize("d_k", WIDTHS)
def test_unscaled_std_is_sqrt_dk_and_scaled_std_is_one(d_k):
    # 4096 scores: the std estimate is within about 1% (5% is over four standard errors).
    assert saturation(d_k, scaled=False).score_std == pytest.approx(math.sqrt(d_k), rel=0.05)
    assert saturation(d_k, scaled=True).score_std == pytest.approx(1.0, rel=0.05)


def test_chapter_figures_for_64_and_128():
    assert saturation(64, scaled=False).score_std == pytest.approx(8.0, abs=0.3)
    assert saturation(128, scaled=False).score_std == pytest.approx(11.3, abs=0.4)


def test_unscaled_softmax_saturates_as_dk_grows():
    small, large = saturation(1, scaled=False), saturation(1024, scaled=False)
    assert large.max_weight > 0.95 and small.max_weight < 0.3
    assert large.entropy < 0.15 and small.entropy > 2.0
    assert large.grad_norm < 0.2 * small.grad_norm


def test_unscaled_measures_are_monotone_over_powers_of_two():
    runs = [saturation(2**p, scaled=False) for p in range(0, 11, 2)]
    assert all(a.max_weight < b.max_weight for a, b in pairwise(runs))
    assert all(a.entropy > b.entropy for a, b in pairwise(runs))
    assert runs[-1].grad_norm < runs[2].grad_norm < runs[0].grad_norm * 1.2


def test_scaling_keeps_the_softmax_the_same_at_every_width():
    runs = [saturation(d_k, scaled=True) for d_k in WIDTHS]
    for run in runs:
        assert run.max_weight == pytest.approx(runs[0].max_weight, abs=0.05)
        assert run.entropy == pytest.approx(runs[0].entropy, abs=0.1)
        assert run.grad_norm == pytest.approx(runs[0].grad_norm, rel=0.15)
    # 16 logits of unit variance are far from one-hot: the entropy stays near ln 16 = 2.77.
    assert 2.0 < runs[-1].entropy < math.log(16)


def test_shapes_and_weights_are_a_distribution():
    run = saturation(32, scaled=False, n_queries=64, n_keys=8)
    assert run.scores.shape == (64, 8)
    assert run.weights.shape == (8,)
    assert run.weights.sum().item() == pytest.approx(1.0, abs=1e-6)
    assert torch.allclose(run.weights, torch.softmax(run.scores[0], dim=-1))
    assert run.max_weight == pytest.approx(torch.softmax(run.scores, -1).max(-1).values.mean())


def test_scaled_scores_are_unscaled_scores_over_sqrt_dk():
    raw, scaled = saturation(100, scaled=False), saturation(100, scaled=True)
    assert torch.allclose(scaled.scores, raw.scores / 10.0)


def test_grad_norm_matches_the_closed_form_softmax_jacobian():
    # For L = sum_j p_j g_j: dL/dz = (diag(p) - p pᵀ) g. Recompute g from the same seed.
    run = saturation(8, scaled=True, seed=3, n_queries=32, n_keys=5)
    g = torch.randn(32, 5, generator=torch.Generator().manual_seed(3))
    p = torch.softmax(run.scores, dim=-1)
    jacobian = torch.diag_embed(p) - p[:, :, None] * p[:, None, :]
    grad = (jacobian @ g[:, :, None]).squeeze(-1)
    assert run.grad_norm == pytest.approx(grad.norm(dim=-1).mean().item(), rel=1e-5)


def test_entropy_is_in_nats_and_bounded_by_log_n_keys():
    run = saturation(2, scaled=True, n_keys=4)
    p = torch.softmax(run.scores, -1)
    assert run.entropy == pytest.approx(-(p * p.log()).sum(-1).mean().item(), rel=1e-5)
    assert 0 < run.entropy < math.log(4)


def test_same_seed_same_numbers_other_seed_other_numbers():
    a, b, c = saturation(16, False, seed=1), saturation(16, False, seed=1), saturation(16, False)
    assert torch.equal(a.scores, b.scores)
    assert not torch.equal(a.scores, c.scores)


def test_widths_beyond_the_cached_draw_work():
    run = saturation(2048, scaled=False, n_queries=16, n_keys=4)
    assert run.scores.shape == (16, 4)


def test_lines_name_the_numbers():
    lines = saturation(64, scaled=False).lines()
    assert "d_k = 64" in lines and "sqrt(d_k) = 8.000" in lines
    for name in ("max weight", "entropy", "grad norm", "score std"):
        assert any(line.startswith(f"{name} = ") for line in lines)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"d_k": 0}, "d_k must be a positive integer"),
        ({"d_k": 2.0}, "d_k must be a positive integer"),
        ({"d_k": 4, "n_keys": 1}, "n_keys >= 2"),
    ],
)
def test_bad_input_is_a_clear_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        saturation(scaled=False, **kwargs)


def test_sweep_runs_every_width_in_both_modes():
    sweep = saturation_sweep([2, 8], seed=5, n_queries=16, n_keys=4)
    assert sorted(sweep) == [False, True]
    for scaled, runs in sweep.items():
        assert [r.d_k for r in runs] == [2, 8]
        assert all(r.scaled is scaled for r in runs)
        single = saturation(8, scaled, seed=5, n_queries=16, n_keys=4)
        assert torch.equal(runs[1].scores, single.scores)
