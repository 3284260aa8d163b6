"""Notebook 02's d_k explorer: it shows the sweep it is given, one run per control setting."""

import pytest

from gptlib.lessons.engine.checks import REGISTRY
from gptlib.lessons.nb02.experiments import saturation, saturation_sweep
from gptlib.lessons.nb02.widgets import SaturationExplorer

MEASURE = REGISTRY["measure-softmax"].reference
WIDTHS = (1, 4, 128, 1024)
CURVES = saturation_sweep(WIDTHS, MEASURE)


def test_explorer_starts_at_its_default_and_follows_the_controls():
    explorer = SaturationExplorer(CURVES)
    assert explorer.lines == saturation(128, False, MEASURE).lines()
    first_png = bytes(explorer.image.value)
    explorer.d_k.value = 1024
    explorer.scaled.value = True
    assert explorer.lines == saturation(1024, True, MEASURE).lines()
    assert "scaled = True" in explorer.lines and "d_k = 1024" in explorer.lines
    assert bytes(explorer.image.value) != first_png


def test_the_slider_offers_the_sweeps_widths():
    assert tuple(SaturationExplorer(CURVES).d_k.options) == WIDTHS
    with pytest.raises(ValueError, match="one of the sweep's widths"):
        SaturationExplorer(CURVES, d_k=100)
