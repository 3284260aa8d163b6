"""gptlib.lessons.answers: folded in HTML, readable as text, escaped."""

import pytest

from gptlib.lessons.answers import answer


def test_html_is_a_closed_details_block_with_escaped_paragraphs():
    html = answer("q·k < 2\n\nsecond", summary="Why?")._repr_html_()
    assert html == ("<details><summary>Why?</summary><p>q·k &lt; 2</p><p>second</p></details>")
    assert "open" not in html


def test_plain_text_carries_the_numbers():
    assert repr(answer(f"std = {8.0:.3f}")) == "Answer: std = 8.000"


def test_empty_answer_is_refused():
    with pytest.raises(ValueError, match="needs some text"):
        answer("  ")
