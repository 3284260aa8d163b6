"""The package is layered one way, as the contracts under [tool.importlinter] in pyproject.toml
say, and import-linter (`lint-imports`, a test requirement) checks them: the model wing knows
nothing of the lessons; in the lesson wing each lesson's folder (nbNN/) sits on `shared` (what
several lessons run), which sits on the `engine` (checks, answers, explorer base, text), and no
lesson imports another; inside a lesson experiments → plots → widgets, with checks and answers
beside them (a widget may show a stored answer). No import cycles. Every import counts, those
inside functions too, so a lazy import cannot hide a wrong-way dependency.

The second test breaks the layering on purpose in a copy of the package, one way each time, to
show that the contracts catch what they are there for.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """`lint-imports` run on the package and the contracts under `root`."""
    command = [str(LINT_IMPORTS) if LINT_IMPORTS.exists() else "lint-imports"]
    return subprocess.run(
        [*command, "--no-cache", "--no-logo"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
    )


def test_imports_keep_the_contracts():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


WRONG_WAYS = {
    "the model imports a lesson module, lazily": ("model.py", "lessons.engine.text"),
    "the checks at the model's edges import the model": ("validation.py", "model"),
    "a check shows a stored answer": ("lessons/nb04/checks.py", "lessons.nb04.answers"),
    "the check engine shows a stored answer": (
        "lessons/engine/checks/core.py",
        "lessons.engine.answers",
    ),
    "an experiment imports a figure": ("lessons/nb09/experiments/costs.py", "lessons.nb09.plots"),
    "a lesson imports another lesson": ("lessons/nb03/experiments.py", "lessons.nb04.widgets"),
    "the shared place imports a lesson": (
        "lessons/shared/experiments/toy.py",
        "lessons.nb05.experiments",
    ),
    "the engine imports a lesson": ("lessons/engine/text.py", "lessons.shared.experiments.toy"),
    "gptlib's __init__ imports the lessons": ("__init__.py", "lessons.engine.text"),
    "gptlib.lessons' __init__ imports a layer": ("lessons/__init__.py", "lessons.nb00.widgets"),
    "a folder the contracts do not name": ("lessons/extra/__init__.py", "model"),
    "a module a lesson's layers do not name": ("lessons/nb04/extra.py", "model"),
    "a cycle inside one layer": (
        "lessons/nb09/experiments/text_cycle.py",
        "lessons.nb09.experiments.costs",
    ),
}


@pytest.mark.parametrize(("module", "imported"), WRONG_WAYS.values(), ids=WRONG_WAYS)
def test_a_wrong_way_import_breaks_a_contract(tmp_path, module, imported):
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    shutil.copytree(ROOT / "gptlib", tmp_path / "gptlib", ignore=shutil.ignore_patterns("data"))
    (tmp_path / "gptlib" / "data").mkdir()
    for name in (ROOT / "gptlib" / "data").glob("*.py"):
        shutil.copy(name, tmp_path / "gptlib" / "data")
    path = tmp_path / "gptlib" / module
    path.parent.mkdir(exist_ok=True)
    with path.open("a") as f:
        f.write(f"\n\ndef _wrong_way():\n    import gptlib.{imported}  # noqa: F401\n")
    if module.endswith("text_cycle.py"):  # and back again
        with (tmp_path / "gptlib" / "lessons/nb09/experiments/costs.py").open("a") as f:
            f.write("\n\ndef _back():\n    import gptlib.lessons.nb09.experiments.text_cycle\n")
    result = lint_imports(tmp_path)
    assert result.returncode != 0 and "BROKEN" in result.stdout, result.stdout + result.stderr
