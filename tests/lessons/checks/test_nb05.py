"""Notebook 05's exercise references agree with independent implementations."""

import pytest
import torch

from gptlib import MLP
from gptlib.lessons.checks import REGISTRY, check


def test_an_nn_module_solution_passes():
    def via_module(x, w_up, b_up, w_down, b_down):
        mlp = MLP(x.shape[-1])
        with torch.no_grad():
            mlp.up.weight.copy_(w_up.T)
            mlp.up.bias.copy_(b_up)
            mlp.down.weight.copy_(w_down.T)
            mlp.down.bias.copy_(b_down)
        return mlp(x)

    check("feed_forward", via_module)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("d", [8, 64, 128])
def test_parameter_count_reference_counts_a_real_mlp(d, bias):
    reference = REGISTRY["ffn_parameter_count"].reference
    assert reference(d, bias) == sum(p.numel() for p in MLP(d, bias=bias).parameters())
