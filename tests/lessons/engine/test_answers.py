"""gptlib.lessons.engine.answers: stored templates filled with a notebook's numbers, shown
folded."""

import ast
import re
from pathlib import Path

import nbformat
import pytest

from gptlib.lessons.engine.answers import (
    ANSWERS,
    KEY,
    NOTEBOOK_MODULES,
    FoldedAnswer,
    answer,
    placeholders,
)

NOTEBOOKS = Path(__file__).resolve().parents[3] / "notebooks"


def test_html_is_a_closed_details_block_with_escaped_paragraphs():
    html = FoldedAnswer("q·k < 2\n\nsecond", summary="Why?")._repr_html_()
    assert html == ("<details><summary>Why?</summary><p>q·k &lt; 2</p><p>second</p></details>")
    assert "open" not in html


def test_a_stored_answer_is_filled_and_reflowed():
    shown = answer("02.divided-by-dk", std=0.0881, max_weight=0.073)
    assert repr(shown) == (
        "Answer: std = √128 / 128 = 1/√128, measured 0.088. The scores are nearly equal, so every "
        "row is close to uniform: mean max weight 0.073, where a uniform row of 16 keys gives "
        "each 1/16. The opposite failure to the unscaled one: attention can hardly prefer any "
        "key, and what it reads is close to the average of all values. The checks of exercises "
        "2 and 3 name this mistake."
    )
    assert shown._repr_html_().startswith("<details><summary>Answer</summary><p>std = √128")


def test_paragraphs_survive_the_reflow(monkeypatch):
    monkeypatch.setitem(ANSWERS, "99.two-paragraphs", "  one\n  {x}\n\n  two\n   three  ")
    assert answer("99.two-paragraphs", x=1).text == "one 1\n\ntwo three"


def test_an_unknown_key_names_the_close_ones():
    with pytest.raises(
        ValueError, match=r"no stored answer '02\.divided-by-d'; close: \['02\.divided-by-dk'"
    ):
        answer("02.divided-by-d", std=1.0)


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
    assert module.__name__.endswith(f".nb{key[:2]}.answers"), (
        f"{key!r} belongs in nb{key[:2]}/answers.py"
    )
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
