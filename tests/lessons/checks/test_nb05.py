"""Notebook 05's exercises: the MLP module is checked against gptlib's with copied weights,
right answers written in other ways pass, and structural slips are explained."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from gptlib import MLP
from gptlib.lessons.checks import REGISTRY, CheckError, verify


class WithModules(nn.Module):
    """GELU and dropout as modules, the layers built in another order."""

    def __init__(self, d_model):
        super().__init__()
        self.down = nn.Linear(4 * d_model, d_model)
        self.up = nn.Linear(d_model, 4 * d_model)
        self.act = nn.GELU()
        self.drop = nn.Dropout(0.0)

    def forward(self, x):
        return self.drop(self.down(self.act(self.up(x))))


class ByHand(nn.Module):
    """GELU written with erf, the products with F.linear on flattened tokens, in float64."""

    def __init__(self, d_model, expansion=4):
        super().__init__()
        self.up = nn.Linear(d_model, expansion * d_model)
        self.down = nn.Linear(expansion * d_model, d_model)

    def forward(self, x):
        flat = x.reshape(-1, x.shape[-1]).double()
        h = F.linear(flat, self.up.weight.double(), self.up.bias.double())
        h = 0.5 * h * (1 + torch.erf(h / math.sqrt(2)))
        y = F.linear(h, self.down.weight.double(), self.down.bias.double())
        return y.view(x.shape).to(x.dtype)


class FromGptlib(MLP):
    """A subclass of gptlib's own MLP."""


@pytest.mark.parametrize("answer", [WithModules, ByHand, FromGptlib, MLP])
def test_other_right_mlps_pass(answer):
    assert verify("mlp", answer) == 2


def test_the_reference_is_gptlibs_mlp_and_inputs_use_gelus_bend():
    d, x, weights = REGISTRY["mlp"].inputs()[0]
    mlp = MLP(d)
    mlp.load_state_dict(weights)
    hidden = mlp.up(x)
    assert (hidden < -0.5).float().mean() > 0.2  # many inputs where GELU and ReLU differ
    assert all(w.abs().min() > 0 or w.dim() == 2 for w in weights.values())


class Sequential(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model)
        )

    def forward(self, x):
        return self.net(x)


class Extra(WithModules):
    def __init__(self, d_model):
        super().__init__(d_model)
        self.scale = nn.Parameter(torch.ones(d_model))


class HiddenTwoD(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.up, self.down = nn.Linear(d_model, 2 * d_model), nn.Linear(2 * d_model, d_model)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


STRUCTURAL = {
    "layers not named up and down": (Sequential, "no up.weight or down.weight"),
    "an extra parameter": (Extra, "parameters gptlib's does not: ['scale']"),
    "hidden width 2d": (HiddenTwoD, "up.weight has shape [16, 8], gptlib's MLP(8) has [32, 8]"),
}


@pytest.mark.parametrize(("answer", "said"), STRUCTURAL.values(), ids=STRUCTURAL)
def test_structural_slips_are_explained(answer, said):
    with pytest.raises(CheckError) as info:
        verify("mlp", answer)
    assert said in str(info.value)


def test_a_function_instead_of_a_module_is_explained():
    with pytest.raises(CheckError, match="should make an nn.Module"):
        verify("mlp", lambda d_model: lambda x: x)


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
