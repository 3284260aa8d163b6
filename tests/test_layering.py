"""The package is layered one way: the model knows nothing of the lessons, and the lesson wing
goes experiments → viz → widgets, with checks and answers beside them (a widget may show a stored
answer), all above `text` (the convention for printed numbers). No import cycles.

Imports are read from the source with `ast` (also those inside functions), so a lazy import
cannot hide a wrong-way dependency.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "gptlib"

# Which parts of the lesson wing each layer may import (the model wing is always allowed).
# `text` (numbers as text) sits under every layer.
ALLOWED = {
    "core": set(),
    "text": set(),
    "experiments": {"experiments", "text"},
    "viz": {"experiments", "viz", "text"},
    "widgets": {"experiments", "viz", "widgets", "answers", "text"},
    "checks": {"checks", "experiments", "text"},
    "answers": {"answers", "text"},
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) >= 3 and parts[1] == "lessons":
        return parts[2]
    return "core"


def gptlib_imports(path: Path) -> set[str]:
    """Every gptlib module `path` imports (`from gptlib.x import y` counts gptlib.x.y if that
    is a module, else gptlib.x)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "gptlib"}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] != "gptlib":
                continue
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                found.add(candidate if candidate in MODULES else node.module)
    return found


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}
GRAPH = {name: gptlib_imports(path) - {name} for name, path in MODULES.items()}


def test_every_lesson_module_belongs_to_a_known_layer():
    assert {layer_of(m) for m in GRAPH} <= set(ALLOWED)


def test_the_graph_sees_the_whole_package():
    assert {"gptlib.model", "gptlib.lessons.checks.core", "gptlib.lessons.widgets"} <= set(GRAPH)
    assert "gptlib.model" in GRAPH["gptlib.train"]


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_imports_follow_the_layers(module):
    layer = layer_of(module)
    wrong = sorted(
        target
        for target in GRAPH[module]
        if layer_of(target) != "core" and layer_of(target) not in ALLOWED[layer]
    )
    assert not wrong, f"{module} ({layer}) must not import {wrong}"


def test_the_model_wing_imports_nothing_from_the_lessons():
    core = [m for m in GRAPH if layer_of(m) == "core" and m != "gptlib.lessons"]
    assert all(not any(".lessons" in t for t in GRAPH[m]) for m in core)


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of `graph` as a list of modules, or None (depth-first search)."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node], _ = "open", stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                return stack[stack.index(target) :] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        state[node], _ = "done", stack.pop()
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_no_import_cycles():
    # A package's __init__ importing its own submodules is not a cycle between modules.
    graph = {
        m: {t for t in targets if not (m.startswith(t + ".") and MODULES[t].name == "__init__.py")}
        for m, targets in GRAPH.items()
    }
    assert find_cycle(graph) is None, f"import cycle: {' -> '.join(find_cycle(graph))}"


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_a_wrong_way_import_would_be_caught():
    layer = layer_of("gptlib.lessons.experiments.saturation")
    assert layer == "experiments" and "viz" not in ALLOWED[layer]
    assert layer_of("gptlib.model") == "core" and not ALLOWED["core"]
