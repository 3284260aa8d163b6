"""LayerNorm, MLP, Block and positions against torch's modules and hand-computed numbers."""

import math

import pytest
import torch

from gptlib import MLP, Block, LayerNorm, PositionalEmbedding, layer_norm, sinusoidal_positions


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
    y, _ = block(x)
    a = lambda t: block.attn(t)[0]  # noqa: E731
    if norm == "pre":
        h = x + a(block.ln1(x))
        expected = h + block.mlp(block.ln2(h))
    else:
        h = block.ln1(x + a(x))
        expected = block.ln2(h + block.mlp(h))
    torch.testing.assert_close(y, expected)


def test_block_without_residuals_is_the_plain_composition():
    torch.manual_seed(0)
    block = Block(8, 2, residual=False).eval()
    x = torch.randn(1, 4, 8)
    y, _ = block(x)
    torch.testing.assert_close(y, block.mlp(block.ln2(block.attn(block.ln1(x))[0])))


def test_bad_norm_name():
    with pytest.raises(ValueError, match="'pre' or 'post', got 'middle'"):
        Block(8, 2, norm="middle")


def test_sinusoidal_positions_by_hand():
    P = sinusoidal_positions(4, 4)
    # column pair 1 turns at rate 1/10000^(2/4) = 0.01
    torch.testing.assert_close(
        P[3], torch.tensor([math.sin(3), math.cos(3), math.sin(0.03), math.cos(0.03)])
    )
    with pytest.raises(ValueError, match="even d"):
        sinusoidal_positions(4, 5)


def test_positional_embedding_kinds_and_range_error():
    for kind in ("learned", "sinusoidal", "none"):
        assert PositionalEmbedding(kind, 8, 4)(2, 3, torch.device("cpu")).shape == (3, 4)
    assert not PositionalEmbedding("none", 8, 4)(0, 8, torch.device("cpu")).any()
    with pytest.raises(ValueError, match="exceed max_len=8"):
        PositionalEmbedding("learned", 8, 4)(6, 3, torch.device("cpu"))
    with pytest.raises(ValueError, match="positions must be one of"):
        PositionalEmbedding("rope", 8, 4)
