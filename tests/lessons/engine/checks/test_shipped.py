"""What a graded release ships of the check modules (`shipped`): the definitions a recording loads
by name and what they use, in their own module and another lesson's, without any answer."""

from __future__ import annotations

import ast
import functools
import io
from dataclasses import replace

import pytest
import torch

from gptlib.lessons.engine.checks import REGISTRY, Property
from gptlib.lessons.engine.checks.recorded import record
from gptlib.lessons.engine.checks.shipped import (
    NotShippable,
    names_loaded,
    shipped_check_modules,
)
from gptlib.lessons.nb04.checks import heads_of


def _saved(value: object) -> bytes:
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


def _defined(source: str) -> set[str]:
    """The top-level names a module's source binds."""
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Assign):
            names |= {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def test_the_globals_a_recording_loads_are_found_inside_partials_and_containers():
    saved = _saved({"adapt": [functools.partial(heads_of, 2)], "module": torch.nn.Linear(2, 2)})
    loaded, found = names_loaded(saved)
    assert loaded["adapt"][0].func is heads_of
    assert ("gptlib.lessons.nb04.checks", "heads_of") in found
    assert ("torch.nn.modules.linear", "Linear") in found


def test_07s_mlp_ships_05s_adapter_and_what_it_uses_but_no_answer():
    """07's `gpt-mlp` runs 05's `run_mlp`: the cut of 05's module keeps it, the weight loader it
    calls and that loader's constants and imports, and none of 05's references or mistakes;
    07's own cut keeps the wrapper that runs it on a fork of the random stream."""
    cuts = shipped_check_modules(_saved(record(["gpt-mlp"])))
    assert set(cuts) == {"gptlib.lessons.nb05.checks", "gptlib.lessons.nb07.checks"}
    nb05 = _defined(cuts["gptlib.lessons.nb05.checks"])
    assert {"run_mlp", "load_mlp_weights", "MLP_LAYERS", "CheckError", "nn"} <= nb05
    answers = {REGISTRY["mlp"].reference.__name__}
    answers |= {m.implementation.__name__ for m in REGISTRY["mlp"].mistakes}
    assert not nb05 & answers
    assert "register(" not in cuts["gptlib.lessons.nb05.checks"]
    assert {"_forked", "own_random_stream"} <= _defined(cuts["gptlib.lessons.nb07.checks"])


def test_a_property_whose_test_is_a_reference_is_refused(monkeypatch):
    exercise = REGISTRY["training-gpu-hours"]
    reference = exercise.reference
    properties = (Property("the reference itself", reference),)
    monkeypatch.setitem(REGISTRY, exercise.name, replace(exercise, properties=properties))
    with pytest.raises(NotShippable, match=f"{reference.__name__} is the reference of exercise"):
        shipped_check_modules(_saved(record([exercise.name])))
