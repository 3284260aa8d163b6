"""The cost-calculator widget: presets move the sliders, sliders change the printed report."""

from __future__ import annotations

import pytest

from gptlib.costs import PRESETS, calculator_report
from gptlib.widgets.costs import CostCalculator


def test_default_prints_the_llama2_7b_report():
    calc = CostCalculator()
    assert calc.lines == calculator_report("Llama 2 7B").lines()
    assert "total training FLOPs = 8.09e+22" in calc.lines
    assert calc.shape["d_ff"].value == 11_008


def test_sliders_and_presets_redraw():
    calc = CostCalculator()
    calc.shape["n_layers"].value = 16
    assert calc.lines[0].startswith("Llama 2 7B (modified): L=16")
    calc.mfu.value = 0.8
    assert calc.lines == calculator_report("Llama 2 7B", n_layers=16, mfu=0.8).lines()
    calc.preset.value = "GPT-2 small"
    assert calc.shape["n_layers"].value == 12 and calc.shape["d_ff"].value == 3072
    assert "parameters N = 124,439,808 (124.44M)" in calc.lines
    calc.shape["n_heads"].value = 7
    assert calc.lines[0].startswith("invalid setting: d_model=768 is not divisible by n_heads=7")


@pytest.mark.parametrize("preset", list(PRESETS))
def test_every_preset_fits_the_sliders(preset):
    calc = CostCalculator(preset)
    assert calc.lines == calculator_report(preset, mfu=0.4).lines()
    assert calc.lines[0].startswith(f"{preset}:")


def test_unknown_preset():
    with pytest.raises(ValueError, match="unknown preset"):
        CostCalculator("GPT-5")
