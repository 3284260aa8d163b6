"""Notebook 01's positions explorer: every control change redraws from `position_summary`."""

from gptlib.lessons.nb01.experiments import position_summary
from gptlib.lessons.nb01.widgets import PositionExplorer


def test_explorer_prints_the_summary_of_its_settings():
    explorer = PositionExplorer()
    assert explorer.lines == position_summary(128, 64, 10000.0).lines()
    first_png = bytes(explorer.image.value)
    explorer.d_model.value = 4
    assert explorer.lines == position_summary(128, 4, 10000.0).lines()
    assert "first rival offset = 6" in explorer.lines
    explorer.length.value, explorer.base.value = 64, 10.0
    assert explorer.lines == position_summary(64, 4, 10.0).lines()
    assert bytes(explorer.image.value) != first_png
