"""Notebook 06's exercises: the references agree with PyTorch and gptlib's Block, the LayerNorm
inputs separate where eps goes, and right answers written in other ways pass."""

import pytest
import torch
import torch.nn.functional as F

from gptlib import Block
from gptlib.lessons.checks import REGISTRY, CheckError, verify
from gptlib.lessons.experiments.variants import RewiredBlock


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_block_reference_equals_gptlibs_block_and_its_post_ln_variant(norm):
    torch.manual_seed(0)
    block = RewiredBlock(Block(16, 4), norm=norm)
    x = torch.randn(2, 5, 16)
    reference = REGISTRY["block_forward"].reference
    got = reference(x, block.ln1, block.attn, block.ln2, block.mlp, norm)
    torch.testing.assert_close(got, block(x))


def test_the_inputs_hold_both_placements_with_non_trivial_sublayers():
    cases = REGISTRY["block_forward"].inputs()
    assert [case[-1] for case in cases] == ["pre", "pre", "post", "post"]
    x, ln1, attn, ln2, mlp, _ = cases[0]
    assert not torch.allclose(ln1(x), ln2(x))  # the two norms differ, so swapping them shows
    assert attn(x).abs().mean() > 0.1 and mlp(x).abs().mean() > 0.1


def test_a_block_that_ignores_norm_is_named_by_the_placement_it_gets_wrong():
    def always_pre(x, ln1, attn, ln2, mlp, norm):
        x = x + attn(ln1(x))
        return x + mlp(ln2(x))

    with pytest.raises(CheckError, match="with norm='post' your block computes the Pre-LN"):
        verify("block_forward", always_pre)


def _through_gptlib_block(x, ln1, attn, ln2, mlp, norm):
    """A correct answer that borrows gptlib's Block (rewired Post-LN when asked), given pieces."""
    block = Block(16, 4)
    block.ln1, block.attn, block.ln2, block.mlp = ln1, attn, ln2, mlp
    return RewiredBlock(block, norm=norm)(x)


def _in_place(x, ln1, attn, ln2, mlp, norm):
    if norm == "pre":
        x += attn(ln1(x))
        x += mlp(ln2(x))
        return x
    return ln2((h := ln1(x + attn(x))) + mlp(h))


def _in_float64(x, ln1, attn, ln2, mlp, norm):
    def run(f, t):
        return f(t.float()).double()

    x = x.double()
    if norm == "post":
        x = run(ln1, x + run(attn, x))
        return run(ln2, x + run(mlp, x)).float()
    x = x + run(attn, run(ln1, x))
    return (x + run(mlp, run(ln2, x))).float()


BLOCKS = {
    "gptlib's Block": _through_gptlib_block,
    "in place": _in_place,
    "float64 stream": _in_float64,
}


@pytest.mark.parametrize("answer", BLOCKS.values(), ids=BLOCKS)
def test_other_right_blocks_pass(answer):
    assert verify("block_forward", answer) == 4


def _via_nn_layer_norm(x, gamma, beta, eps=1e-5):
    norm = torch.nn.LayerNorm(x.shape[-1], eps=eps).to(x.dtype)
    with torch.no_grad():
        norm.weight.copy_(gamma)
        norm.bias.copy_(beta)
    return norm(x)


def _by_var_mean_and_rsqrt(x, gamma, beta, eps=1e-5):
    var, mean = torch.var_mean(x, dim=-1, keepdim=True, correction=0)
    return torch.addcmul(beta, gamma, (x - mean) * torch.rsqrt(var + eps))


def _one_pass_variance(x, gamma, beta, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    var = (x * x).mean(-1, keepdim=True) - mean**2
    return gamma * (x - mean) / (var + eps).sqrt() + beta


LAYER_NORMS = {
    "F.layer_norm": lambda x, g, b, eps=1e-5: F.layer_norm(x, x.shape[-1:], g, b, eps),
    "nn.LayerNorm": _via_nn_layer_norm,
    "var_mean and rsqrt": _by_var_mean_and_rsqrt,
    "E[x²] − E[x]²": _one_pass_variance,
}


@pytest.mark.parametrize("answer", LAYER_NORMS.values(), ids=LAYER_NORMS)
def test_other_right_layer_norms_pass(answer):
    verify("layer_norm", answer)


def _normalised_by(std):
    return lambda x, g, b, eps=1e-5: g * (x - x.mean(-1, keepdim=True)) / std(x, eps) + b


def _variance(x):
    return x.var(-1, correction=0, keepdim=True)


FRAGILE = {
    "eps outside the sqrt": (
        _normalised_by(lambda x, eps: _variance(x).sqrt() + eps),
        "eps-outside-sqrt",
    ),
    "no eps": (_normalised_by(lambda x, eps: _variance(x).sqrt()), "no-eps"),
    "eps as a floor": (
        _normalised_by(lambda x, eps: _variance(x).clamp_min(eps).sqrt()),
        "variance-floor",
    ),
}


@pytest.mark.parametrize(("answer", "mistake"), FRAGILE.values(), ids=FRAGILE)
def test_where_eps_goes_shows_on_the_nearly_constant_token(answer, mistake):
    x, gamma, beta, eps = REGISTRY["layer_norm"].inputs()[0]
    ordinary = (x[:, :-1], gamma, beta, eps)  # without the nearly constant token: no difference
    torch.testing.assert_close(
        answer(*ordinary),
        F.layer_norm(x[:, :-1], x.shape[-1:], gamma, beta, eps),
        atol=1e-4,
        rtol=1e-4,
    )
    with pytest.raises(CheckError) as info:
        verify("layer_norm", answer)
    assert info.value.mistake == mistake


def test_without_eps_a_constant_token_divides_by_zero():
    x, gamma, beta, eps = REGISTRY["layer_norm"].inputs()[1]
    assert torch.equal(x[:, -1], x[:, -1, :1].expand_as(x[:, -1]))  # the constant token
    no_eps = FRAGILE["no eps"][0]
    assert torch.isnan(no_eps(x, gamma, beta, eps)[:, -1]).all()
    torch.testing.assert_close(
        REGISTRY["layer_norm"].reference(x, gamma, beta, eps)[:, -1],
        beta[None].expand(x.shape[0], -1),
    )
