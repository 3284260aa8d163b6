"""Notebook 06's experiments: the original Transformer's init, gradient profiles, training."""

import math

import pytest
import torch
from torch import nn

from gptlib.blocks import LayerNorm
from gptlib.data.batches import BatchSampler
from gptlib.lessons.experiments import norm_placement as npl


@pytest.fixture(scope="module")
def data():
    return npl.toy_data()


def test_transformer_init_is_xavier_with_unit_embeddings():
    model = npl.build_model("post", 2)
    for module in model.modules():
        if isinstance(module, nn.Linear):
            fan_out, fan_in = module.weight.shape
            bound = math.sqrt(6 / (fan_in + fan_out))
            assert module.weight.abs().max() <= bound
            assert module.weight.std().item() == pytest.approx(bound / math.sqrt(3), rel=0.15)
            assert module.bias is None or torch.all(module.bias == 0)
        elif isinstance(module, nn.Embedding):
            assert module.weight.std().item() == pytest.approx(1.0, rel=0.1)
        elif isinstance(module, LayerNorm):
            assert torch.all(module.weight == 1) and torch.all(module.bias == 0)


def test_build_model_uses_the_requested_placement_and_is_seeded():
    a, b = npl.build_model("pre", 3, seed=1), npl.build_model("pre", 3, seed=1)
    assert a.config.norm == "pre" and a.config.n_layers == 3 and a.config.d_model == npl.D_MODEL
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))


def test_unigram_entropy_by_hand():
    expected = -(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3))
    assert npl.unigram_entropy(torch.tensor([0, 0, 1])) == pytest.approx(expected)


def test_stream_sizes_post_ln_renormalises_pre_ln_grows(data):
    idx, _ = BatchSampler(data, 4, 16).sample()
    post = npl.stream_sizes(npl.build_model("post", 4), idx)
    pre = npl.stream_sizes(npl.build_model("pre", 4), idx)
    assert post.shape == pre.shape == (5,)
    torch.testing.assert_close(post[1:], torch.full((4,), npl.D_MODEL**0.5), rtol=1e-3, atol=0)
    assert (pre[1:] > pre[:-1]).all()


def test_init_profiles_post_ln_larger_near_the_output(data):
    pre = npl.init_gradient_profile("pre", 8, data)
    post = npl.init_gradient_profile("post", 8, data)
    assert pre.shape == post.shape == (8,)
    assert pre.max() / pre.min() < 2  # Pre-LN level within a factor of 2
    assert post[-1] / pre[-1] > 2  # Post-LN's last block gets several times more gradient
    assert post.min() > pre.max()
    torch.testing.assert_close(pre, npl.init_gradient_profile("pre", 8, data))  # seeded


def test_init_profile_rejects_empty_average(data):
    with pytest.raises(ValueError, match="n_models"):
        npl.init_gradient_profile("pre", 2, data, n_models=0)


@pytest.mark.slow
def test_training_post_ln_stalls_without_warmup_and_warmup_rescues_it(data):
    runs = npl.training_comparison(data, n_layers=8, steps=60, warmup_steps=20)
    assert list(runs) == ["Pre-LN, no warmup", "Post-LN, no warmup", "Post-LN, warmup 20"]
    pre, post, post_warm = (npl.final_loss(losses) for losses in runs.values())
    floor = npl.unigram_entropy(data)
    assert abs(post - floor) < 0.1  # stuck at the letter frequencies
    assert pre < floor - 1.0
    assert post_warm < post - 0.5


def test_final_loss():
    assert npl.final_loss(torch.tensor([5.0, 3.0, 1.0]), last=2) == pytest.approx(2.0)
    assert npl.final_loss(torch.tensor([1.0, math.nan]), last=2) == math.inf
