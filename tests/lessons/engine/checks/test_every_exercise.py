"""What every registered exercise needs from its lesson's test file, read through the registry and
the notebooks, so that no list has to be kept by hand and a step skipped fails here.

Each lesson's `tests/lessons/nbNN/test_checks.py` declares, for each exercise its notebook checks:

* `RIGHT_ANSWERS[name]`: right answers written other ways (another formula, another torch call,
  float64, a module), at least two; each must pass the check as a student's would;
* `INDEPENDENT[name]`: which of them shares no code with the reference. Its source, names and
  layout normalised away, must not be the reference's formula again (a copy proves nothing:
  the check would compare the reference with itself).

Every catalogued mistake has a fix (the line that mends it, shown the second time) and a first
message that repeats no run of five tokens of the solution's code (a shape written as the course
writes shapes, [B, T, d], aside); that the message holds no code at all is
`test_hints.py`'s test, over the same registry.
"""

from __future__ import annotations

import ast
import difflib
import functools
import importlib
import inspect
import io
import json
import re
import textwrap
import tokenize
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from gptlib.lessons.engine.checks import REGISTRY, Outcome, check, read_outcome
from gptlib.lessons.engine.checks.outcomes import PASSED
from tests.lessons.engine.checks.test_hints import RUN, SOLUTIONS, code_tokens, runs, text_tokens

ROOT = Path(__file__).resolve().parents[4]
# An independent answer whose normalised tokens match the reference's this closely is a copy.
# Today's answers reach 0.60 (02's attention by einsum); 08's effective-choices in float64, the
# reference's formula with a cast, 0.68; a copy with its names changed scores 0.95 or more.
COPY_RATIO = 0.65


EXERCISES = sorted(REGISTRY)


def lesson_of(name: str) -> str:
    """The two digits of the exercise's notebook."""
    return REGISTRY[name].notebook[:2]


def lesson_test_file(name: str) -> str:
    """The lesson test file that declares the exercise's answers."""
    return f"tests/lessons/nb{lesson_of(name)}/test_checks.py"


def lesson_tests() -> dict[str, ModuleType]:
    """Every lesson's test_checks module, by the file's path: found, not listed."""
    return {
        str(path.relative_to(ROOT)): importlib.import_module(
            ".".join(path.relative_to(ROOT).with_suffix("").parts)
        )
        for path in sorted((ROOT / "tests" / "lessons").glob("nb[0-9][0-9]/test_checks.py"))
    }


LESSON_TESTS = lesson_tests()


def declared(attribute: str) -> dict[str, tuple[str, Any]]:
    """Each exercise's entry of `attribute` in the lesson test files, with the file it is in."""
    found: dict[str, tuple[str, Any]] = {}
    for file, module in LESSON_TESTS.items():
        for name, value in getattr(module, attribute, {}).items():
            assert name not in found, f"{name} is declared in {found[name][0]} and in {file}"
            found[name] = (file, value)
    return found


RIGHT_ANSWERS = {name: dict(answers) for name, (_, answers) in declared("RIGHT_ANSWERS").items()}
INDEPENDENT_NAMES = {name: key for name, (_, key) in declared("INDEPENDENT").items()}
# What tests/lessons/engine/checks/test_registry.py runs for every exercise.
INDEPENDENT = {
    name: RIGHT_ANSWERS[name][key]
    for name, key in INDEPENDENT_NAMES.items()
    if key in RIGHT_ANSWERS.get(name, {})
}
ANSWERS = [
    pytest.param(name, answer, id=f"{name}-{described}")
    for name in sorted(RIGHT_ANSWERS)
    for described, answer in RIGHT_ANSWERS[name].items()
]


def test_an_exercises_notebook_names_the_lesson_whose_notebook_checks_it():
    checks = re.compile(r"""\bcheck\(\s*["']([^"']+)["']""")
    for path in sorted((ROOT / "notebooks").glob("0[0-9]_*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            for name in (
                checks.findall("".join(cell["source"])) if cell["cell_type"] == "code" else ()
            ):
                if name in REGISTRY:
                    assert lesson_of(name) == path.stem[:2], (
                        f"{name}: checked in {path.name}, registered with notebook="
                        f"{REGISTRY[name].notebook!r}"
                    )


@pytest.mark.parametrize("name", EXERCISES)
def test_every_exercise_has_right_answers_written_other_ways(name):
    file, answers = declared("RIGHT_ANSWERS").get(name, (lesson_test_file(name), {}))
    assert file == lesson_test_file(name), f"{name}: declare it in {lesson_test_file(name)}"
    assert len(answers) >= 2, (
        f"{name}: add at least two right answers written other ways to RIGHT_ANSWERS[{name!r}] "
        f"in {file} (another formula, another torch call, float64, ...)"
    )


def test_no_answers_are_declared_for_an_exercise_that_does_not_exist():
    for attribute in ("RIGHT_ANSWERS", "INDEPENDENT"):
        unknown = {n: f for n, (f, _) in declared(attribute).items() if n not in REGISTRY}
        assert not unknown, f"{attribute} names exercises nobody registers: {unknown}"


@pytest.mark.parametrize(("name", "answer"), ANSWERS)
def test_a_right_answer_written_another_way_passes(name, answer, capsys):
    check(name, answer, namespace={})
    out, err = capsys.readouterr()
    assert err == ""
    assert read_outcome(out) == Outcome(name, PASSED)


@pytest.mark.parametrize("name", EXERCISES)
def test_every_exercise_names_its_independent_answer(name):
    key = INDEPENDENT_NAMES.get(name)
    assert key in RIGHT_ANSWERS.get(name, {}), (
        f"{name}: set INDEPENDENT[{name!r}] in {lesson_test_file(name)} to the key of the answer "
        f"in RIGHT_ANSWERS[{name!r}] that shares no code with the reference (now {key!r})"
    )


# ------------------------------------------------------------ an independent answer is no copy


def source_of(obj: Any) -> str:
    """The source of a function, class or lambda (a partial's function's)."""
    while isinstance(obj, functools.partial):
        obj = obj.func
    obj = inspect.unwrap(obj)
    source = textwrap.dedent(inspect.getsource(obj))
    if getattr(obj, "__name__", "") != "<lambda>":
        return source
    start = source.index("lambda")  # the lambda alone, out of the line that holds it
    for end in range(len(source), start, -1):
        try:
            ast.parse(source[start:end].rstrip(", \n"), mode="eval")
        except SyntaxError:
            continue
        return source[start:end].rstrip(", \n")
    raise ValueError(f"no lambda expression in {source!r}")


class _Placeholders(ast.NodeTransformer):
    """Every variable, argument, function and class name replaced by its order of first
    appearance; attributes and keyword arguments, which name an API, kept."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def _of(self, name: str) -> str:
        return self.names.setdefault(name, f"name{len(self.names)}")

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.Name(id=self._of(node.id), ctx=node.ctx)

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.arg = self._of(node.arg)
        return node

    def _definition(self, node: ast.AST) -> ast.AST:
        node.name = self._of(node.name)
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            node.body = body[1:] or [ast.Pass()]  # the docstring
        return self.generic_visit(node)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _definition


def normalised(source: str) -> list[str]:
    """The code's tokens without docstrings, comments or layout, its own names replaced by their
    order of first appearance (so renaming is no change)."""
    tree = _Placeholders().visit(ast.parse(source))
    skip = {tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    tokens = tokenize.generate_tokens(io.StringIO(ast.unparse(tree)).readline)
    return [token.string for token in tokens if token.type not in skip]


def likeness(answer: Any, reference: Any) -> float:
    """How much of the two normalised token sequences match, from 0 to 1."""
    a, b = normalised(source_of(answer)), normalised(source_of(reference))
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


@pytest.mark.parametrize("name", sorted(INDEPENDENT))
def test_the_independent_answer_does_not_copy_the_references_formula(name):
    ratio = likeness(INDEPENDENT[name], REGISTRY[name].reference)
    assert ratio < COPY_RATIO, (
        f"{name}: INDEPENDENT[{name!r}] in {lesson_test_file(name)} matches the reference's code "
        f"({ratio:z.2f} of its normalised tokens); write it another way (another formula, "
        "another torch call), so that the check compares the reference with something else"
    )


class _Renamed(ast.NodeTransformer):
    """A copy as a tester would make it: every local name and argument renamed."""

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.Name(id=f"{node.id}_", ctx=node.ctx)

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.arg = f"{node.arg}_"
        return node


def _planted_copy(reference: Any) -> str:
    tree = _Renamed().visit(ast.parse(source_of(reference)))
    return ast.unparse(tree)


@pytest.mark.parametrize("name", EXERCISES)
def test_the_copy_test_catches_a_renamed_copy_of_every_reference(name):
    reference = REGISTRY[name].reference
    copy = normalised(_planted_copy(reference))
    ratio = difflib.SequenceMatcher(
        None, copy, normalised(source_of(reference)), autojunk=False
    ).ratio()
    assert ratio >= COPY_RATIO


def test_the_copy_test_catches_the_reference_s_formula_with_a_cast():
    """08's effective-choices in float64 was its INDEPENDENT answer: the formula again."""
    written_again = RIGHT_ANSWERS["effective-choices"]["float64"]
    assert likeness(written_again, REGISTRY["effective-choices"].reference) >= COPY_RATIO


def test_the_copy_test_catches_a_copy_with_a_cast_added():
    """02's attention, copied into a float64 answer: still the reference's formula."""
    source = source_of(REGISTRY["attention"].reference)
    tree = ast.parse(source)
    function = tree.body[0]
    function.name = "mine"
    cast = ast.parse("q, k, v = q.double(), k.double(), v.double()").body[0]
    function.body.insert(1, cast)
    ratio = difflib.SequenceMatcher(
        None, normalised(ast.unparse(tree)), normalised(source), autojunk=False
    ).ratio()
    assert ratio >= COPY_RATIO


# ------------------------------------------------------------ every mistake's first message

# A shape in the course's notation, [B, T, d], is words, though a solution may unpack B, T, d.
SHAPE = re.compile(r"\[\s*\w+(?:\s*,\s*\w+)+\s*\]")
MISTAKES = [(name, m) for name in EXERCISES for m in REGISTRY[name].mistakes]


@pytest.mark.parametrize(("name", "mistake"), MISTAKES, ids=[f"{n}-{m.name}" for n, m in MISTAKES])
def test_every_mistake_has_a_fix_and_a_first_message_without_the_solutions_code(name, mistake):
    where = f"{name}/{mistake.name} (gptlib/lessons/nb{lesson_of(name)}/checks.py)"
    assert mistake.fix, f"{where}: no fix, the line that mends it, shown the second time"
    solution = runs(code_tokens(SOLUTIONS.get(name, "")), RUN)
    words = SHAPE.sub(" ", mistake.message)
    shared = runs(text_tokens(words), RUN) & solution
    assert not shared, f"{where}: the message repeats the solution's code {sorted(shared)[:2]}"


# ------------------------------------------------------------ what the text says of the exercises

LABEL = re.compile(r"^(?:#{2,4} (?:\d+\. )?|\*\*)Exercise (\d+)\b", re.M)
COUNT_WORDS = dict(
    zip("two three four five six seven eight nine ten".split(), range(2, 11), strict=True)
)
STATED_COUNT = re.compile(r"\b(\d+|" + "|".join(COUNT_WORDS) + r") graded exercises\b", re.I)
LESSONS = sorted((ROOT / "notebooks").glob("0[1-9]_*.ipynb"))


def labels_and_checks(cells: list[dict]) -> tuple[list[tuple[int, int]], list[int]]:
    """(cell index, number) of every 'Exercise k' label, and the cell index of every check."""
    labels, checks = [], []
    for index, cell in enumerate(cells):
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            labels += [(index, int(k)) for k in LABEL.findall(source)]
        elif cell.get("metadata", {}).get("nbgrader", {}).get("grade"):
            checks.append(index)
    return labels, checks


def misnumbered(cells: list[dict]) -> list[str]:
    """Each check must follow its own label, 'Exercise 1', 'Exercise 2', ... in order."""
    labels, checks = labels_and_checks(cells)
    found = []
    if [k for _, k in labels] != list(range(1, len(checks) + 1)):
        found.append(f"labels {[k for _, k in labels]} for {len(checks)} graded checks")
    before = -1
    for (label, k), check_cell in zip(labels, checks, strict=False):
        if not before < label < check_cell:
            found.append(
                f"'Exercise {k}' (cell {label}) is not above its check (cell {check_cell})"
            )
        before = check_cell
    return found


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_the_exercises_are_numbered_in_order_above_their_checks(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    assert not misnumbered(cells), (
        f"{path.name}: {misnumbered(cells)}; number the exercises 1, 2, ... in the order of their "
        "checks (a new one renumbers the later ones, and the text that names them)"
    )


def test_the_numbering_test_catches_an_exercise_added_without_renumbering():
    def md(text):
        return {"cell_type": "markdown", "source": text}

    check_cell = {"cell_type": "code", "metadata": {"nbgrader": {"grade": True}}, "source": ""}
    cells = [md("### Exercise 1: a"), check_cell, md("### Exercise 2: b"), check_cell]
    assert not misnumbered(cells)
    added = [*cells[:2], md("### Exercise 2: new"), check_cell, *cells[2:]]
    assert misnumbered(added) == ["labels [1, 2, 2] for 3 graded checks"]


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_a_stated_number_of_graded_exercises_is_the_lessons(path):
    """'six graded exercises' in the lesson's text or its row of the README's table."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    _, checks = labels_and_checks(cells)
    readme = [r for r in (ROOT / "README.md").read_text().splitlines() if path.name in r]
    texts = {
        path.name: "".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    }
    texts["README.md"] = "\n".join(line for line in readme if line.startswith("|"))
    for where, text in texts.items():
        for said in STATED_COUNT.findall(text):
            count = COUNT_WORDS.get(said.lower()) or int(said)
            assert count == len(checks), (
                f"{where} says '{said} graded exercises' for {path.name}, which has {len(checks)}"
            )
