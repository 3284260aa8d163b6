"""Notebook 02's d_k explorer: every control change redraws from `saturation`."""

import pytest

from gptlib.lessons.experiments.saturation import saturation
from gptlib.lessons.widgets.saturation import DK_CHOICES, SaturationExplorer


def test_explorer_starts_at_its_default_and_follows_the_controls():
    explorer = SaturationExplorer()
    assert explorer.lines == saturation(128, scaled=False).lines()
    first_png = bytes(explorer.image.value)
    explorer.d_k.value = 1024
    explorer.scaled.value = True
    assert explorer.lines == saturation(1024, scaled=True).lines()
    assert "scaled = True" in explorer.lines and "d_k = 1024" in explorer.lines
    assert bytes(explorer.image.value) != first_png


def test_slider_offers_powers_of_two_up_to_1024():
    assert DK_CHOICES[0] == 1 and DK_CHOICES[-1] == 1024
    assert tuple(SaturationExplorer().d_k.options) == DK_CHOICES
    with pytest.raises(ValueError, match="d_k must be one of"):
        SaturationExplorer(d_k=100)
