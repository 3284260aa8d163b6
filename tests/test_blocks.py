"""The MLP and the Pre-LN Block against torch's modules and hand-computed numbers."""

import torch

from gptlib import MLP, Block


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
