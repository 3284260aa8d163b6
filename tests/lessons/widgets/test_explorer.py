"""The explorers of notebooks 01 and 02: every control change redraws from the pure function."""

import pytest

from gptlib.lessons.experiments.positions import position_summary
from gptlib.lessons.experiments.saturation import saturation
from gptlib.lessons.widgets.positions import position_explorer
from gptlib.lessons.widgets.saturation import DK_CHOICES, saturation_explorer

PNG_MAGIC = b"\x89PNG"


def _printed(explorer) -> str:
    (output,) = explorer.numbers.outputs
    return output["text"]


def test_saturation_explorer_starts_at_its_default_and_follows_the_controls():
    explorer = saturation_explorer()
    assert explorer.lines == saturation(128, scaled=False).summary_lines()
    assert bytes(explorer.image.value).startswith(PNG_MAGIC)
    first_png = bytes(explorer.image.value)

    explorer.d_k.value = 1024
    explorer.scaled.value = True
    assert explorer.lines == saturation(1024, scaled=True).summary_lines()
    assert "max weight = " in _printed(explorer) and "grad norm = " in _printed(explorer)
    assert bytes(explorer.image.value) != first_png


def test_saturation_explorer_slider_offers_powers_of_two_up_to_1024():
    assert DK_CHOICES[0] == 1 and DK_CHOICES[-1] == 1024
    assert tuple(saturation_explorer().d_k.options) == DK_CHOICES
    with pytest.raises(ValueError, match="d_k must be one of"):
        saturation_explorer(d_k=100)


def test_position_explorer_prints_the_summary_of_its_settings():
    explorer = position_explorer()
    assert explorer.lines == position_summary(128, 64, 10000.0).summary_lines()
    explorer.d_model.value = 4
    assert explorer.lines == position_summary(128, 4, 10000.0).summary_lines()
    assert "first rival offset = 6" in _printed(explorer)
    assert bytes(explorer.image.value).startswith(PNG_MAGIC)


def test_explorers_display_as_widgets():
    bundle = saturation_explorer()._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
