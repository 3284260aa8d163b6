"""Notebook 00's parameter bars: one bar per group, labelled with its count."""

import pytest
from matplotlib.figure import Figure

from gptlib.lessons.nb00.plots import ModelSizeView


def test_bars_follow_the_counts():
    view = ModelSizeView(Figure(), ["a", "b"])
    view.update({"a": 1_000, "b": 250_000, "ignored": 1}, vocab_size=9)
    assert [bar.get_width() for bar in view.bars] == [1_000, 250_000]
    assert [text.get_text() for text in view.counts] == ["1,000", "250,000"]
    assert view.ax.get_xlim() == (0, 1.3 * 250_000) and view.title.get_text().endswith("V = 9")
    assert [t.get_text() for t in view.ax.get_yticklabels()] == ["a", "b"]


def test_a_missing_group_is_named():
    with pytest.raises(ValueError, match=r"no count for \['b'\]"):
        ModelSizeView(Figure(), ["a", "b"]).update({"a": 1}, vocab_size=2)
