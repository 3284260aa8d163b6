"""The written-out LayerNorm, the MLP and the Pre-LN Block against torch's modules and
hand-computed numbers."""

import math

import pytest
import torch

from gptlib import MLP, Block, layer_norm


@pytest.mark.parametrize("with_beta", [True, False])
def test_written_out_layer_norm_equals_torch_with_random_gamma_and_beta(with_beta):
    torch.manual_seed(0)
    theirs = torch.nn.LayerNorm(24, bias=with_beta)
    with torch.no_grad():  # γ and β far from their initial 1 and 0, so that both matter
        for p in theirs.parameters():
            p.copy_(3.0 * torch.randn_like(p))
    x = torch.randn(3, 5, 24) * 7 + 2
    ours = layer_norm(x, theirs.weight, theirs.bias if with_beta else None, eps=theirs.eps)
    torch.testing.assert_close(ours, theirs(x))
    assert not torch.allclose(ours, layer_norm(x, None, None))  # γ and β did something


def test_layer_norm_by_hand():
    # x = (1, 2, 3, 6): mean 3, biased variance (4+1+0+9)/4 = 3.5
    y = layer_norm(torch.tensor([1.0, 2.0, 3.0, 6.0]), None, None, eps=0.0)
    expected = torch.tensor([-2.0, -1.0, 0.0, 3.0]) / math.sqrt(3.5)
    torch.testing.assert_close(y, expected)
    # γ = 2, β = 1 scale and shift each normalised value: 2y + 1
    gamma, beta = torch.full((4,), 2.0), torch.ones(4)
    torch.testing.assert_close(
        layer_norm(torch.tensor([1.0, 2.0, 3.0, 6.0]), gamma, beta, eps=0.0), 2 * expected + 1
    )


def test_mlp_has_8d2_weights_and_uses_gelu():
    mlp = MLP(16, bias=False)
    assert sum(p.numel() for p in mlp.parameters()) == 8 * 16**2
    x = torch.randn(2, 3, 16)
    torch.testing.assert_close(mlp(x), mlp.down(torch.nn.functional.gelu(mlp.up(x))))


def test_pre_ln_block_equations():
    torch.manual_seed(0)
    block = Block(16, 4).eval()
    with torch.no_grad():  # norms that are not the identity, so that their place shows
        for ln in (block.ln1, block.ln2):
            ln.weight.uniform_(0.5, 1.5)
            ln.bias.normal_()
    x = torch.randn(2, 5, 16)
    h = x + block.attn(block.ln1(x))
    torch.testing.assert_close(block(x), h + block.mlp(block.ln2(h)))
