"""Notebook 03's explorer: the pure perturbation function and the controls around it."""

import ipywidgets as widgets
import matplotlib
import pytest
import torch

from gptlib import GPT, GPTConfig
from gptlib.widgets.causal_mask import causal_mask_explorer, mask_twins, perturb, show_perturbation

matplotlib.use("Agg")


@pytest.fixture
def model():
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=9, d_model=16, n_heads=4, n_layers=2, max_len=12))


@pytest.fixture
def idx():
    return torch.tensor([[1, 2, 3, 4, 5, 6, 7, 8]])


def test_twins_share_weights_and_differ_in_the_mask(model):
    twins = mask_twins(model)
    assert twins[True].config.causal and not twins[False].config.causal
    assert not twins[True].training and not twins[False].training
    torch.testing.assert_close(twins[True].head.weight, twins[False].head.weight)


@pytest.mark.parametrize("position", [0, 3, 7])
def test_perturb_reports_who_moved(model, idx, position):
    twins = mask_twins(model)
    on = perturb(twins, idx, position, causal=True)
    assert on.changed == list(range(position, 8)) and on.unchanged == list(range(position))
    assert f"changed positions = {on.changed}" in on.lines()
    assert "causal mask = on" in on.lines()
    assert "earlier positions unchanged = True" in on.lines()
    off = perturb(twins, idx, position, causal=False)
    assert off.changed == list(range(8)) and off.unchanged == []
    assert "causal mask = off" in off.lines()
    assert ("earlier positions unchanged = True" in off.lines()) == (position == 0)


def test_show_prints_the_lines(model, idx, capsys):
    result = show_perturbation(mask_twins(model), idx, 2, True, "abcdefgh")
    printed = capsys.readouterr().out.splitlines()
    assert printed == result.lines()


def test_explorer_has_a_mask_toggle_and_a_position_slider(model, idx):
    box = causal_mask_explorer(model, idx, "abcdefgh", position=3)
    toggle, slider = box.children[0].children
    assert isinstance(toggle, widgets.ToggleButton) and toggle.value is True
    assert isinstance(slider, widgets.IntSlider)
    assert (slider.min, slider.max, slider.value) == (0, 7, 3)
