"""gptlib.lessons.answers: stored templates filled with a notebook's numbers, shown folded."""

import ast
import re
from pathlib import Path

import nbformat
import pytest

from gptlib.lessons.answers import (
    ANSWERS,
    KEY,
    NOTEBOOK_MODULES,
    FoldedAnswer,
    answer,
    placeholders,
)

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def test_html_is_a_closed_details_block_with_escaped_paragraphs():
    html = FoldedAnswer("q·k < 2\n\nsecond", summary="Why?")._repr_html_()
    assert html == ("<details><summary>Why?</summary><p>q·k &lt; 2</p><p>second</p></details>")
    assert "open" not in html


def test_a_stored_answer_is_filled_and_reflowed():
    shown = answer(
        "02.dk-64",
        sqrt_dk=8.0,
        std=7.97,
        max_weight=0.837,
        std_scaled=0.996,
        max_weight_scaled=0.241,
    )
    assert repr(shown) == (
        "Answer: √64 = 8; measured above: 7.97. Scores spread over about ±8 to ±16 push the "
        "softmax towards one-hot (mean max weight 0.837 over 16 keys). Dividing by √64 = 8 "
        "brings the spread back to 1 (measured 0.996) and the max weight down to 0.241."
    )
    assert shown._repr_html_().startswith("<details><summary>Answer</summary><p>√64 = 8;")


def test_paragraphs_survive_the_reflow(monkeypatch):
    monkeypatch.setitem(ANSWERS, "99.two-paragraphs", "  one\n  {x}\n\n  two\n   three  ")
    assert answer("99.two-paragraphs", x=1).text == "one 1\n\ntwo three"


def test_an_unknown_key_names_the_close_ones():
    with pytest.raises(ValueError, match=r"no stored answer '02\.dk64'; close: \['02\.dk-64'"):
        answer("02.dk64", std=1.0)


def test_missing_and_unused_values_are_named():
    with pytest.raises(ValueError, match=r"missing \['n_orderings'\], not used \['gaps'\]"):
        answer("01.set-of-tokens", gap=0.0, one_layer=0.0, two_layers=0.5, gaps=0.0)


def test_placeholders_are_plain_names():
    assert placeholders("{a:z.2f} and {b:,} and {a}") == {"a", "b"}
    for template in ("{}", "{0}", "{x.y}", "{x[0]}"):
        with pytest.raises(ValueError, match="not a plain name"):
            placeholders(template)
    with pytest.raises(ValueError, match="an answer needs some text"):
        FoldedAnswer("  ")


@pytest.mark.parametrize("key", sorted(ANSWERS))
def test_every_stored_template_is_well_formed(key):
    assert KEY.fullmatch(key), f"{key!r}: keys look like '02.dk-64'"
    (module,) = [m for m in NOTEBOOK_MODULES if key in m.ANSWERS]
    assert module.__name__.endswith(f".nb{key[:2]}"), f"{key!r} belongs in nb{key[:2]}.py"
    names = placeholders(ANSWERS[key])
    assert names, f"{key!r} has no placeholder: its numbers must come from the notebook"
    shown = answer(key, **dict.fromkeys(names, 1.5))
    assert "{" not in shown.text and "}" not in shown.text


ANSWERING = ("answer", "Question")  # the calls that fill a stored answer


def _answer_calls() -> dict[str, list[tuple[str, set[str]]]]:
    """{key: [(notebook, keyword names), ...]} for every `answer("key", ...)` or
    `Question("key", ...)` in a notebook."""
    calls: dict[str, list[tuple[str, set[str]]]] = {}
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "code":
                continue
            code = "\n".join(
                line for line in cell.source.splitlines() if not line.startswith(("%", "!"))
            )
            for node in ast.walk(ast.parse(code)):
                if isinstance(node, ast.Call) and getattr(node.func, "id", "") in ANSWERING:
                    key = node.args[0].value
                    calls.setdefault(key, []).append((path.name, {k.arg for k in node.keywords}))
    return calls


def test_notebooks_call_stored_answers_with_exactly_their_placeholders():
    calls = _answer_calls()
    assert set(calls) <= set(ANSWERS), f"unknown keys: {sorted(set(calls) - set(ANSWERS))}"
    assert set(ANSWERS) <= set(calls), f"stored, never asked: {sorted(set(ANSWERS) - set(calls))}"
    for key, uses in calls.items():
        assert len(uses) == 1, f"{key!r} is used by {len(uses)} cells"
        ((notebook, names),) = uses
        assert re.match(rf"{key[:2]}_", notebook), f"{key!r} is used in {notebook}"
        assert names - {"summary"} == placeholders(ANSWERS[key]), f"{key!r} in {notebook}"
