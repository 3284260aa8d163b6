"""Notebook 00's vocabulary explorer: the slider redraws the parameter counts and the bars."""

from gptlib.lessons.nb00.experiments import chapter_model_size
from gptlib.lessons.nb00.widgets import ModelSizeExplorer


def test_slider_redraws():
    explorer = ModelSizeExplorer(10)
    assert explorer.lines == chapter_model_size(10).lines()
    explorer.vocab_size.value = 65
    assert "total = 842,752" in explorer.lines
    assert explorer.vocab_size.description == "vocab size"
    bars = [bar.get_width() for bar in explorer.view.bars]
    assert bars == list(chapter_model_size(65).parts.values())
