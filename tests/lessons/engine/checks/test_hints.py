"""Hints teach, never tell: every exercise has a first hint naming the idea and a more specific
second one, and no hint holds a run of code from the solution it belongs to. Every catalogued
mistake's message, the first thing a student reads about it, is words: the code goes in its
fix, shown only when the same mistake comes back."""

import io
import json
import re
import tokenize
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from gptlib.lessons.engine.checks import REGISTRY, show_solution

NOTEBOOKS = sorted((Path(__file__).resolve().parents[4] / "notebooks").glob("*.ipynb"))
CHECK_CALL = re.compile(r"""check\(\s*["']([^"']+)["']""")
SOLUTION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.S)
RUN = 5  # tokens in a row that would be a piece of the solution's code


def solutions_by_exercise() -> dict[str, str]:
    """Each exercise's solution code: the solution blocks above its check cell."""
    found: dict[str, str] = {}
    for path in NOTEBOOKS:
        pending: list[str] = []
        for cell in json.loads(path.read_text())["cells"]:
            source = "".join(cell["source"])
            if cell["cell_type"] != "code":
                continue
            pending += SOLUTION.findall(source)
            for name in CHECK_CALL.findall(source):
                found[name] = found.get(name, "") + "\n".join(pending)
                pending = []
    return found


def code_tokens(code: str) -> list[str]:
    """The solution's tokens, comments and layout left out."""
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    lines = [line.strip() for line in code.splitlines()]  # blocks cut from inside a body
    tokens = tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline)
    return [t.string for t in tokens if t.type not in skip and t.string]


def text_tokens(text: str) -> list[str]:
    return re.findall(r"\w+|[^\w\s]", text)


def runs(tokens: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


SOLUTIONS = solutions_by_exercise()


def test_every_exercise_of_the_notebooks_has_its_solution_found():
    assert set(SOLUTIONS) == set(REGISTRY) - {"engine-demo-softmax"}
    assert all(SOLUTIONS.values())


@pytest.mark.parametrize("name", sorted(SOLUTIONS))
def test_hints_go_from_the_idea_to_the_specific_without_the_solutions_code(name):
    hints = REGISTRY[name].hints
    assert len(hints) >= 2, "a first hint naming the idea and a second, more specific one"
    solution = runs(code_tokens(SOLUTIONS[name]), RUN)
    for hint in hints:
        shared = runs(text_tokens(hint), RUN) & solution
        assert not shared, f"{name}: the hint repeats the solution's code {sorted(shared)[:3]}"


# What makes a message code rather than words: backticks, a call into torch (or its F and nn
# modules), a method call, a call with several arguments or a keyword argument, a slice. Indices
# written as in the notebooks' maths (x[t], perm[i]), functions of one argument (LN(F(x)),
# exp(150)) and argument values (norm='pre') are words.
CODE_IN_WORDS = {
    "backticked code": re.compile(r"`"),
    "a torch name": re.compile(r"\btorch\.\w"),
    "an F. call": re.compile(r"\bF\.\w"),
    "an nn. name": re.compile(r"\bnn\.\w"),
    "a method call": re.compile(r"\w\.\w+\("),
    "a call with arguments": re.compile(r"\b[A-Za-z_]\w*\([^()]*(?:,|\w=)[^()]*\)"),
    "a slice": re.compile(r"\w\[[^\]]*:[^\]]*\]"),
}
MISTAKES = [(name, m) for name in sorted(REGISTRY) for m in REGISTRY[name].mistakes]


def code_in(message: str) -> list[str]:
    return [what for what, pattern in CODE_IN_WORDS.items() if pattern.search(message)]


@pytest.mark.parametrize(("name", "mistake"), MISTAKES, ids=[f"{n}-{m.name}" for n, m in MISTAKES])
def test_every_mistakes_first_message_is_words_without_code(name, mistake):
    found = code_in(mistake.message)
    assert not found, f"{name}/{mistake.name}: its message holds {found}; move the code to its fix"


def test_the_message_test_would_catch_code_in_words():
    old = "y[:, t] is already the character after x[:, t]"  # targets-shifted-again's old message
    assert code_in(old) == ["a slice"]
    assert code_in("use `x.var(dim=-1)`") == [
        "backticked code",
        "a method call",
        "a call with arguments",
    ]
    assert code_in("call torch.softmax or F.softmax") == ["a torch name", "an F. call"]
    assert code_in("take softmax(scores, dim=-1) over the keys") == ["a call with arguments"]
    # a message of the kind issue 44's trial wrote: backticked code holding a torch call
    trial = "the variance is biased: use `torch.var(x, dim=-1, unbiased=False)` as LayerNorm does"
    found = ["backticked code", "a torch name", "a method call", "a call with arguments"]
    assert code_in(trial) == found
    assert not code_in("with norm='pre' the prediction at x[t] (the OLMo 2 placement, LN(F(x)))")


def test_the_overlap_test_would_catch_a_hint_that_tells():
    telling = "x.view(B, T, h, d_h) then .transpose(1, 2)"  # the old split-heads hint
    assert runs(text_tokens(telling), RUN) & runs(code_tokens(SOLUTIONS["split-heads"]), RUN)


def test_show_solution_prints_the_reference_under_a_heading_saying_so():
    out = io.StringIO()
    with redirect_stdout(out):
        show_solution("split-heads")
    text = out.getvalue()
    assert text.startswith("# The reference solution of exercise 'split-heads'")
    assert ".transpose(1, 2)" in text
