"""Every exercise's answer is used on the core path after its check (issue 42).

An exercise whose result nothing reads teaches a function and leaves it: a student writes it,
passes its check, and the lesson goes on with gptlib's. So for each `check("name", answer)` cell
of a lesson, a later code cell of the core path (every optional section deleted, as
tests/test_core_path.py cuts it) must read `answer`: call it, pass it on, build with it. A cell
that only names it for `whose(answer)`, or checks it again, does not count.

`python -m tests.test_exercise_use` prints, per exercise, the cells that read its answer, the
optional ones marked.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.test_core_path import LESSONS, sections


@dataclass(frozen=True)
class Use:
    """Where one exercise's answer is read after its check: cell indices, core and optional."""

    notebook: str
    exercise: str
    answer: str
    check_cell: int
    core: tuple[int, ...]
    optional: tuple[int, ...]


def _tree(cell: dict) -> ast.Module | None:
    if cell["cell_type"] != "code":
        return None
    try:
        return ast.parse("".join(cell["source"]))
    except SyntaxError:  # a cell magic: no Python to read
        return None


def _calls(tree: ast.AST, name: str) -> list[ast.Call]:
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name
    ]


def _reads(tree: ast.AST, answer: str) -> bool:
    """Whether `tree` reads the name `answer` other than as `whose(answer)`'s argument."""
    only_named = {id(arg) for call in _calls(tree, "whose") for arg in call.args}
    return any(
        isinstance(node, ast.Name) and node.id == answer and id(node) not in only_named
        for node in ast.walk(tree)
    )


def uses(path: Path) -> list[Use]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    optional = [opt for _, opt, _ in sections(cells)]
    trees = [_tree(cell) for cell in cells]
    found = []
    for i, tree in enumerate(trees):
        for call in _calls(tree, "check") if tree else ():
            name, answer = call.args[0], call.args[1]
            if not (isinstance(name, ast.Constant) and isinstance(answer, ast.Name)):
                continue
            readers = [
                j
                for j in range(i + 1, len(cells))
                if trees[j] is not None
                and not _calls(trees[j], "check")
                and _reads(trees[j], answer.id)
            ]
            found.append(
                Use(
                    path.stem,
                    name.value,
                    answer.id,
                    i,
                    tuple(j for j in readers if not optional[j]),
                    tuple(j for j in readers if optional[j]),
                )
            )
    return found


ALL = [use for path in LESSONS for use in uses(path)]


def test_every_lesson_with_exercises_is_read():
    assert len(ALL) >= 35, f"found only {len(ALL)} check cells: has the check call changed?"


@pytest.mark.parametrize("use", ALL, ids=lambda u: f"{u.notebook[:2]}-{u.exercise}")
def test_the_answer_is_read_on_the_core_path_after_its_check(use):
    assert use.core, (
        f"{use.notebook}: {use.exercise}'s answer `{use.answer}` (checked in cell "
        f"{use.check_cell}) is read by no later cell of the core path"
        + (f", only by optional cells {list(use.optional)}" if use.optional else "")
    )


def test_a_cell_that_only_names_the_answer_does_not_count():
    named = ast.parse("print(whose(embed))")
    called = ast.parse("print(whose(embed), embed(x))")
    assert not _reads(named, "embed") and _reads(called, "embed")


if __name__ == "__main__":
    for use in ALL:
        optional = " ".join(f"{j}(optional)" for j in use.optional)
        core = " ".join(map(str, use.core)) or "NONE"
        where = f"checked in {use.check_cell:3d}, read in {core} {optional}".rstrip()
        print(f"{use.notebook[:2]} {use.exercise:26s} {use.answer:26s} {where}")
