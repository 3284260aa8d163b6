"""What a graded release keeps of the lessons' check modules: the definitions its recording
loads by name, cut out of each `gptlib/lessons/nbNN/checks.py`, with no reference and no mistake.

A recording (`recorded.record`) holds data, and beside it objects pickled by name: the classes
and callables the inputs are made of, each exercise's `adapt`, its properties' tests. They are
written in the lesson's `checks.py`, in the exercise's block beside its reference and mistakes.
`scripts/classroom.py release --graded` writes, in place of each such module, what
`shipped_check_modules` cuts from it: the top-level definitions the recording names (and those
its forbidden routes name), every top-level definition and import they use, transitively (in
another lesson's check module too, whose cut then keeps the name), and nothing else: no
`register(...)` call, no reference, no mistake, no hint or fix text they alone use. A cut that
would keep an exercise's reference or one of its mistakes' implementations is refused with a
`NotShippable` naming it and what needs it.
"""

from __future__ import annotations

import ast
import importlib
import io
import pickle
import re
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from gptlib.lessons.engine.checks.core import REGISTRY

CHECK_MODULE = re.compile(r"gptlib\.lessons\.nb\d\d\.checks")


class NotShippable(ValueError):
    """A definition the recording needs cannot be shipped: it is, or uses, an answer."""


def names_loaded(recording: bytes) -> tuple[dict[str, dict], set[tuple[str, str]]]:
    """The recording (torch.save's bytes) loaded, and (module, top-level name) of every global
    it loads by name."""
    found: set[tuple[str, str]] = set()

    class Names(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            found.add((module, name.split(".")[0]))
            return super().find_class(module, name)

    tracking = types.ModuleType("pickle")
    tracking.Unpickler, tracking.load = Names, pickle.load
    loaded = torch.load(io.BytesIO(recording), pickle_module=tracking, weights_only=False)
    return loaded, found


def _answers() -> dict[tuple[str, str], str]:
    """(module, top-level name) of every exercise's reference and mistakes' implementations,
    with what it is, for the refusal's message."""
    answers = {}
    for name, exercise in REGISTRY.items():
        named = [(exercise.reference, "the reference")]
        named += [(m.implementation, f"its mistake {m.name!r}") for m in exercise.mistakes]
        for answer, what in named:
            answer = getattr(answer, "func", answer)  # a functools.partial's function
            module, qualname = (
                getattr(answer, "__module__", ""),
                getattr(answer, "__qualname__", ""),
            )
            if CHECK_MODULE.fullmatch(module or "") and "<" not in qualname:
                answers[module, qualname.split(".")[0]] = f"{what} of exercise {name!r}"
    return answers


@dataclass
class _Module:
    """One check module's top-level statements, and the names each defines."""

    name: str
    path: Path
    source: str
    tree: ast.Module
    defining: dict[str, list[int]]  # name -> indices of the statements that bind it

    @classmethod
    def read(cls, name: str) -> _Module:
        path = Path(importlib.import_module(name).__file__)
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        defining: dict[str, list[int]] = {}
        for index, statement in enumerate(tree.body):
            for bound in _bound(statement):
                defining.setdefault(bound, []).append(index)
        return cls(name, path, source, tree, defining)

    def segment(self, index: int) -> str:
        statement = self.tree.body[index]
        first = min(
            [statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", [])]
        )
        return "\n".join(self.source.splitlines()[first - 1 : statement.end_lineno])


def _bound(statement: ast.stmt) -> list[str]:
    """The names a top-level statement binds (none for an expression such as `register(...)`)."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [statement.name]
    if isinstance(statement, ast.Import | ast.ImportFrom):
        return [(a.asname or a.name).split(".")[0] for a in statement.names]
    if isinstance(statement, ast.Assign | ast.AnnAssign):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    return []


def _from_check_modules(statement: ast.stmt, name: str) -> list[tuple[str, str]]:
    """(module, name) in another check module that an import kept for `name` brings in."""
    if isinstance(statement, ast.ImportFrom) and CHECK_MODULE.fullmatch(statement.module or ""):
        return [(statement.module, a.name) for a in statement.names if (a.asname or a.name) == name]
    if isinstance(statement, ast.Import) and any(
        CHECK_MODULE.fullmatch(a.name) for a in statement.names
    ):
        raise NotShippable(f"`import {statement.names[0].name}`: import names from it instead")
    return []


def shipped_check_modules(recording: bytes) -> dict[str, str]:
    """Module name -> the source a graded release ships for it, for every check module the
    recording (torch.save's bytes) needs; NotShippable when that would ship an answer."""
    loaded, globals_ = names_loaded(recording)
    roots = {(m, n): "the recording" for m, n in globals_ if CHECK_MODULE.fullmatch(m)}
    for name, data in loaded.items():
        for route in data.get("forbidden", ()):
            module, _, qualname = route.target.partition(":")
            if CHECK_MODULE.fullmatch(module):
                roots[module, qualname.split(".")[0]] = f"a forbidden route of {name!r}"
    answers, modules = _answers(), {}
    kept: dict[str, dict[int, set[str]]] = {}  # module -> statement -> the names it is kept for
    pending = list(roots.items())
    while pending:
        (module_name, name), needed_by = pending.pop()
        if (module_name, name) in answers:
            raise NotShippable(
                f"{module_name}.{name} is {answers[module_name, name]}, and {needed_by} needs it: "
                "what a recording names (inputs, adapters, properties) must not be an answer or "
                "use one"
            )
        if module_name not in modules:
            modules[module_name] = _Module.read(module_name)
        module = modules[module_name]
        if name not in module.defining:
            raise NotShippable(f"{needed_by} needs {module_name}.{name}, not defined at top level")
        for index in module.defining[name]:
            names = kept.setdefault(module_name, {}).setdefault(index, set())
            if name in names:
                continue
            first, where = not names, f"{module_name}.{name}"
            names.add(name)
            statement = module.tree.body[index]
            pending += [(pair, where) for pair in _from_check_modules(statement, name)]
            if first and not isinstance(statement, ast.Import | ast.ImportFrom):
                used = {n.id for n in ast.walk(statement) if isinstance(n, ast.Name)}
                pending += [((module_name, u), where) for u in sorted(used & set(module.defining))]
    return {name: _cut(modules[name], statements) for name, statements in kept.items()}


def _cut(module: _Module, statements: dict[int, set[str]]) -> str:
    """The module's kept statements, in their order (an import with only the names kept), under
    a docstring that says what it is."""
    lesson = module.name.split(".")[2]
    docstring = (
        f'"""What a graded release keeps of lesson {lesson[2:]}\'s checks: the definitions its '
        "recorded checks\nload by name and what they use, cut from "
        f'gptlib/lessons/{lesson}/checks.py\nby `scripts/classroom.py release --graded`."""'
    )
    imports, definitions = ["from __future__ import annotations"], []
    for index in sorted(statements):
        statement = module.tree.body[index]
        if isinstance(statement, ast.ImportFrom) and statement.module == "__future__":
            continue
        if isinstance(statement, ast.Import | ast.ImportFrom):
            names = statements[index]
            kept = [a for a in statement.names if (a.asname or a.name).split(".")[0] in names]
            imports.append(ast.unparse(type(statement)(**{**vars(statement), "names": kept})))
        else:
            definitions.append(module.segment(index))
    text = "\n\n\n".join([docstring, "\n".join(imports), *definitions]) + "\n"
    compile(text, str(module.path), "exec")
    return text
