"""Notebook 06's written-out LayerNorm against torch's module and hand-computed numbers."""

import math

import pytest
import torch

from gptlib.lessons.nb06.references import layer_norm


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
