"""LayerNorm, MLP and Block against torch's modules and hand-computed numbers."""

import math

import pytest
import torch

from gptlib import MLP, Block, LayerNorm, layer_norm


def test_written_out_layernorm_equals_torch():
    torch.manual_seed(0)
    ours, theirs = LayerNorm(24), torch.nn.LayerNorm(24)
    with torch.no_grad():
        for p in (ours.weight, ours.bias):
            p.normal_()
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(3, 5, 24) * 7 + 2
    torch.testing.assert_close(ours(x), theirs(x))


def test_layer_norm_by_hand():
    # x = (1, 2, 3, 6): mean 3, biased variance (4+1+0+9)/4 = 3.5
    y = layer_norm(torch.tensor([1.0, 2.0, 3.0, 6.0]), None, None, eps=0.0)
    expected = torch.tensor([-2.0, -1.0, 0.0, 3.0]) / math.sqrt(3.5)
    torch.testing.assert_close(y, expected)


def test_mlp_has_8d2_weights_and_uses_gelu():
    mlp = MLP(16, bias=False)
    assert sum(p.numel() for p in mlp.parameters()) == 8 * 16**2
    x = torch.randn(2, 3, 16)
    torch.testing.assert_close(mlp(x), mlp.down(torch.nn.functional.gelu(mlp.up(x))))


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_block_equations(norm):
    torch.manual_seed(0)
    block = Block(16, 4, norm=norm).eval()
    x = torch.randn(2, 5, 16)
    y = block(x)
    if norm == "pre":
        h = x + block.attn(block.ln1(x))
        expected = h + block.mlp(block.ln2(h))
    else:
        h = block.ln1(x + block.attn(x))
        expected = block.ln2(h + block.mlp(h))
    torch.testing.assert_close(y, expected)


def test_block_without_residuals_is_the_plain_composition():
    torch.manual_seed(0)
    block = Block(8, 2, residual=False).eval()
    x = torch.randn(1, 4, 8)
    torch.testing.assert_close(block(x), block.mlp(block.ln2(block.attn(block.ln1(x)))))


def test_bad_norm_name():
    with pytest.raises(ValueError, match=r"norm must be one of \('pre', 'post'\), got 'middle'"):
        Block(8, 2, norm="middle")
