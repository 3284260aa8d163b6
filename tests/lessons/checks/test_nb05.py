"""Notebook 05's exercises: the references agree with gptlib's MLP, and right answers written
in other ways pass."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from gptlib import MLP
from gptlib.lessons.checks import REGISTRY, verify


def _via_module(x, w_up, b_up, w_down, b_down):
    mlp = MLP(x.shape[-1])
    with torch.no_grad():
        mlp.up.weight.copy_(w_up.T)
        mlp.up.bias.copy_(b_up)
        mlp.down.weight.copy_(w_down.T)
        mlp.down.bias.copy_(b_down)
    return mlp(x)


def _gelu_by_erf(x, w_up, b_up, w_down, b_down):
    h = torch.addmm(b_up, x.reshape(-1, x.shape[-1]), w_up)
    h = 0.5 * h * (1 + torch.erf(h / math.sqrt(2)))
    return (h @ w_down + b_down).view(x.shape)


def _by_f_linear_in_float64(x, w_up, b_up, w_down, b_down):
    h = torch.nn.GELU()(F.linear(x.double(), w_up.double().T, b_up.double()))
    return F.linear(h, w_down.double().T, b_down.double())


@pytest.mark.parametrize("answer", [_via_module, _gelu_by_erf, _by_f_linear_in_float64])
def test_other_right_feed_forwards_pass(answer):
    verify("feed_forward", answer)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("d", [8, 64, 128])
def test_parameter_count_reference_counts_a_real_mlp(d, bias):
    reference = REGISTRY["ffn_parameter_count"].reference
    assert reference(d, bias) == sum(p.numel() for p in MLP(d, bias=bias).parameters())


COUNTS = {
    "a real module": lambda d, bias: sum(p.numel() for p in MLP(d, bias=bias).parameters()),
    "a float": lambda d, bias: 2 * 4.0 * d * d + (5.0 * d if bias else 0.0),
    "a NumPy integer": lambda d, bias: np.int64(8 * d * d + 5 * d * bias),
    "a tensor": lambda d, bias: torch.tensor(8 * d**2 + 5 * d * int(bias)),
}


@pytest.mark.parametrize("answer", COUNTS.values(), ids=COUNTS)
def test_other_right_counts_pass(answer):
    verify("ffn_parameter_count", answer)
