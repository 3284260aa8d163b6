"""The cost calculator: presets move the sliders, sliders change the printed report."""

from __future__ import annotations

import pytest

from gptlib.lessons.nb09.experiments.costs import PRESETS, calculator_report
from gptlib.lessons.nb09.plots import flop_shares, parameter_shares
from gptlib.lessons.nb09.widgets import CostCalculator, head_counts


def test_default_prints_the_llama2_7b_report():
    calc = CostCalculator()
    assert calc.lines == calculator_report("Llama 2 7B").lines()
    assert "total training FLOPs = 8.09e+22" in calc.lines
    assert calc.shape["d_ff"].value == 11_008


def test_sliders_and_presets_redraw():
    calc = CostCalculator()
    calc.shape["n_layers"].value = 16
    assert calc.lines[:2] == ["model = Llama 2 7B (modified)", "layers L = 16"]
    calc.mfu.value = 0.8
    assert calc.lines == calculator_report("Llama 2 7B", n_layers=16, mfu=0.8).lines()
    calc.preset.value = "GPT-2 small"
    assert calc.shape["n_layers"].value == 12 and calc.shape["d_ff"].value == 3072
    assert "parameters N = 124,439,808 (124.44M)" in calc.lines
    assert calc.shape["n_heads"].options == tuple(head_counts(768))


def test_a_preset_redraws_once(monkeypatch):
    calc = CostCalculator()
    calls = []
    monkeypatch.setattr(calc, "compute", lambda: calls.append(1) or calculator_report("GPT-3 175B"))
    calc.preset.value = "GPT-3 175B"
    assert len(calls) == 1


def test_heads_slider_offers_divisors_and_keeps_the_head_size():
    calc = CostCalculator("Llama 2 7B")  # d = 4096, h = 32, d_h = 128
    assert 7 not in calc.shape["n_heads"].options
    calc.shape["d_model"].value = 4160  # 65 × 64: 32 heads no longer divide it
    assert calc.shape["n_heads"].options == tuple(head_counts(4160))
    assert calc.shape["n_heads"].value == 32 and 4160 % 32 == 0
    assert "width d = 4,160" in calc.lines and "head size d_h = 130" in calc.lines
    calc.shape["d_model"].value = 4096 + 64 * 3  # 4288 = 2^6 × 67
    assert calc.shape["n_heads"].value == 32  # d_h = 134, the nearest to 130
    assert all(4288 % h == 0 for h in calc.shape["n_heads"].options)


def test_key_value_heads_follow_the_heads():
    calc = CostCalculator("Llama 2 7B")  # one key/value head per query head
    kv = calc.shape["n_kv_heads"]
    assert kv.value == 32 and kv.options == tuple(head_counts(32))
    calc.shape["n_heads"].value = 64  # still one per query head
    assert kv.value == 64 and "key/value heads = 64" in calc.lines
    kv.value = 8  # grouped: 8 heads of keys and values, each for 8 query heads
    assert calc.lines == calculator_report("Llama 2 7B", n_heads=64, n_kv_heads=8).lines()
    assert "KV cache (one sequence of T tokens, bf16) = 0.25 GiB (0.2684 GB)" in calc.lines
    calc.shape["n_heads"].value = 4  # 8 no longer divides: the nearest count that does
    assert kv.value == 4 and kv.options == (1, 2, 4)
    calc.shape["d_model"].value = 4160  # a new width keeps d_h; key/value heads stay valid
    assert calc.shape["n_heads"].value % kv.value == 0
    assert (
        calc.lines
        == calculator_report(
            "Llama 2 7B", d_model=4160, n_heads=calc.shape["n_heads"].value, n_kv_heads=kv.value
        ).lines()
    )


def test_a_grouped_preset_loads_its_key_value_heads():
    calc = CostCalculator("Llama 2 7B")
    calc.preset.value = "Llama 3 405B"
    assert calc.shape["n_heads"].value == 128 and calc.shape["n_kv_heads"].value == 8
    assert "parameters N = 405,853,388,800 (405.85B)" in calc.lines
    calc.shape["n_heads"].value = 64  # 8 still divides 64: grouped it stays
    assert calc.shape["n_kv_heads"].value == 8


@pytest.mark.parametrize("preset", list(PRESETS))
def test_every_preset_fits_the_sliders(preset):
    calc = CostCalculator(preset)
    assert calc.lines == calculator_report(preset, mfu=0.4).lines()
    assert calc.lines[0] == f"model = {preset}"


def test_the_figure_shows_the_shares_of_the_report():
    calc = CostCalculator()
    report = calculator_report("Llama 2 7B")
    (param_bars, _), (flop_bars, _) = calc.view.panels
    assert [b.get_width() for b in param_bars] == list(parameter_shares(report).values())
    assert [b.get_width() for b in flop_bars] == list(flop_shares(report).values())


def test_unknown_preset():
    with pytest.raises(ValueError, match="unknown preset"):
        CostCalculator("GPT-5")
