"""Notebook 06's exercise references agree with PyTorch and gptlib's Block."""

import torch
import torch.nn.functional as F

from gptlib import Block
from gptlib.lessons.checks import REGISTRY, check


def test_torch_layer_norm_passes():
    check("layer_norm", lambda x, g, b, eps=1e-5: F.layer_norm(x, x.shape[-1:], g, b, eps))


def test_block_reference_equals_gptlib_pre_ln_block():
    torch.manual_seed(0)
    block = Block(16, 4, norm="pre")
    x = torch.randn(2, 5, 16)
    reference = REGISTRY["pre_ln_block"].reference
    got = reference(x, block.ln1, block.attn, block.ln2, block.mlp)
    torch.testing.assert_close(got, block(x))


def test_a_post_ln_block_is_named():
    import pytest

    from gptlib.lessons.checks import CheckError

    def post_ln(x, ln1, attn, ln2, mlp):
        x = ln1(x + attn(x))
        return ln2(x + mlp(x))

    with pytest.raises(CheckError, match="Post-LN order"):
        check("pre_ln_block", post_ln)
