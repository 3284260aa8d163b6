"""Notebook 08's next-character bars: likeliest first, visible labels, the uniform line."""

import pytest
import torch
from matplotlib.figure import Figure

from gptlib.lessons.nb08.plots.sampling import NextCharView


def test_bars_show_the_most_likely_characters_first():
    view = NextCharView(Figure(), vocab_size=4, prompt="to be or\nnot", top=3)
    view.update("ab \n", torch.tensor([0.1, 0.2, 0.3, 0.4]))
    heights = [bar.get_height() for bar in view.bars]
    assert heights == pytest.approx([0.4, 0.3, 0.2])
    assert [t.get_text() for t in view.ax.get_xticklabels()] == ["⏎", "␣", "b"]
    (uniform,) = view.ax.get_lines()
    assert list(uniform.get_ydata()) == [0.25, 0.25] and uniform.get_label() == "uniform 1/4"
    assert view.ax.get_title() == "next character after “to be or⏎not”"


def test_a_long_prompt_is_shown_by_its_last_60_characters():
    prompt = "x" * 40 + "\n" + "y" * 39
    view = NextCharView(Figure(), vocab_size=3, prompt=prompt)
    assert view.ax.get_title() == "next character after “…" + "x" * 19 + "⏎" + "y" * 39 + "”"


def test_view_refuses_a_mismatched_vocabulary():
    view = NextCharView(Figure(), vocab_size=3, prompt="x")
    with pytest.raises(ValueError, match="one probability per character"):
        view.update("abc", torch.tensor([0.5, 0.5]))
