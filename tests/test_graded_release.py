"""A graded release as an instructor hands it out, and grading as it runs it (docs/classroom.md,
"A graded assignment" and "Collect and grade the submissions").

- Releases accumulate: releasing a lesson graded keeps the exercises of the lessons released
  graded before.
- No solution text reaches the students: the recording holds no mistake's fix and no line of a
  solution cell.
- Grading runs in a copy of gptlib of its own (`<course-dir>/grading/gptlib`): the kernel
  imports it, not this checkout, so no reference can be called or stand in; its checks run on
  hidden inputs too, so an answer that looks the visible inputs up fails, while every right
  answer still passes and every catalogued mistake is still named.
- The documented install: `pip install <course-dir>/release/gptlib` into a fresh environment
  (slow: a real pip install), where every released check passes a right answer and fails a
  wrong one.
"""

from __future__ import annotations

import ast
import functools
import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
import torch
from nbclient import NotebookClient

from gptlib.lessons.engine.checks import REGISTRY, CheckError, verify
from gptlib.lessons.engine.checks.core import forget_tries
from gptlib.lessons.engine.checks.recorded import load_recording, recorded_exercises
from tests.scripts import load_script
from tests.test_classroom import solution_only_lines, verified_outcome

ROOT = Path(__file__).resolve().parent.parent

classroom = load_script("classroom")
editions = load_script("editions")
LESSONS = {
    path.stem[:2]: path
    for path in sorted((ROOT / "notebooks").glob("0[1-9]_*.ipynb"))
    if classroom.has_exercises(path)
}
# Recording lesson 08 trains its mistakes' models: most of a minute here.
SLOW_TO_RECORD = {"08"}
# Exercises whose inputs do not depend on the seed: the hidden grading inputs are the visible
# ones (`record` leaves such repeats out), so a lookup table of the visible outputs passes them.
SAME_INPUTS_WHATEVER_THE_SEED = {"fan_in_init_", "get-batch", "train"}


def _lesson_params() -> list:
    return [
        pytest.param(lesson, marks=[pytest.mark.slow] if lesson in SLOW_TO_RECORD else [])
        for lesson in LESSONS
    ]


def _recording(package: Path) -> Path:
    return package / classroom.RECORDED


def _recorded(names: list[str], seed_offset: int | None = None) -> dict:
    """The exercises `names` as a release (no `seed_offset`) or the grading copy (with it)
    registers them, from their recording (as `classroom` saves it) without building the copy."""
    recording = classroom.record_or_refuse(names, "test", seed_offset)
    exercises = recorded_exercises(torch.load(io.BytesIO(recording), weights_only=False))
    return {exercise.name: exercise for exercise in exercises}


# --- releases accumulate -----------------------------------------------------------------------


def test_a_graded_release_keeps_the_exercises_released_before(tmp_path):
    """Releasing 09 graded after 02 gives a release that checks both lessons' exercises (each
    recorded again from today's references), so 02's assignment keeps working."""
    out = tmp_path / "release" / "gptlib"
    classroom.student_package([LESSONS["02"]], out)
    first = load_recording(_recording(out))
    classroom.student_package([LESSONS["09"]], out)
    names = classroom.exercises_of([LESSONS["02"], LESSONS["09"]])
    assert classroom.recorded_names(out) == names
    assert [e.name for e in load_recording(_recording(out))] == names
    assert [e.name for e in first] == classroom.exercises_of([LESSONS["02"]])
    again = classroom.student_package([LESSONS["02"]], out)  # a lesson released again: no repeat
    assert classroom.recorded_names(again) == names


# --- no solution text in what the students receive ----------------------------------------------


def _strings(obj, seen: set[int] | None = None) -> list[str]:
    """Every string reachable in a loaded recording (dict keys and values, sequences, the fields
    of dataclasses and other objects, partials' arguments)."""
    seen = set() if seen is None else seen
    if isinstance(obj, str):
        return [obj]
    if id(obj) in seen or isinstance(obj, torch.Tensor | int | float | bool | type(None)):
        return []
    seen.add(id(obj))
    if isinstance(obj, dict):
        items = [*obj.keys(), *obj.values()]
    elif isinstance(obj, list | tuple | set | frozenset):
        items = list(obj)
    elif isinstance(obj, functools.partial):
        items = [*obj.args, *obj.keywords.values()]
    elif hasattr(obj, "__dict__") and not callable(obj) or isinstance(obj, torch.nn.Module):
        items = list(vars(obj).values())
    elif hasattr(obj, "__dataclass_fields__"):
        items = [getattr(obj, name) for name in obj.__dataclass_fields__]
    else:
        items = []
    return [text for item in items for text in _strings(item, seen)]


def solution_lines(path: Path) -> set[str]:
    """The lines of the released notebook's solution cells that appear nowhere else in it, long
    enough to be code of their own (12 characters or more)."""
    nb = editions.without_guards(nbformat.read(path, as_version=4))
    return {
        line for line in solution_only_lines(nb) if len(line) >= 12 and not line.startswith("#")
    }


@pytest.mark.parametrize("lesson", _lesson_params())
def test_the_recordings_hold_no_fix_and_no_solution_line(lesson):
    """What the students receive (the release's recording) and what grades them (the grading
    copy's, whose messages reach the feedback pages), loaded as gptlib loads them: no mistake's
    fix (some are the solution itself), and no line of the lesson's solution cells, in any of
    their strings."""
    path = LESSONS[lesson]
    names = classroom.exercises_of([path])
    fixes = {m.fix for name in names for m in REGISTRY[name].mistakes if m.fix}
    assert fixes, f"lesson {lesson}'s mistakes have no fix to look for"
    lines = solution_lines(path)
    assert lines
    for offset in (None, classroom.GRADING_SEED_OFFSET):
        recording = classroom.record_or_refuse(names, path.stem, offset)
        strings = _strings(torch.load(io.BytesIO(recording), weights_only=False))
        assert any(m.message in strings for name in names for m in REGISTRY[name].mistakes)
        for text in strings:
            assert not [fix for fix in fixes if fix in text], f"a fix in {text!r}"
            assert not [line for line in lines if line in text], f"a solution line in {text!r}"


def test_a_mistake_made_again_gets_no_fix_in_a_graded_release(tmp_path, monkeypatch):
    """The engine adds a mistake's fix the second time it is made; a recorded mistake has none,
    so the student reads the message alone, every time."""
    out = classroom.student_package([LESSONS["02"]], tmp_path / "gptlib")
    [exercise] = [e for e in load_recording(_recording(out)) if e.name == "attention"]
    full = REGISTRY["attention"]
    mistake = full.mistakes[0]
    assert mistake.fix and all(not m.fix for m in exercise.mistakes)
    monkeypatch.setitem(REGISTRY, "attention", exercise)
    forget_tries()
    messages = []
    for _ in range(2):
        with pytest.raises(CheckError) as raised:
            verify("attention", mistake.implementation)
        messages.append(raised.value.detail)
    forget_tries()
    assert raised.value.mistake == mistake.name
    assert messages == [mistake.message, mistake.message]


# --- grading: a copy of gptlib of its own, hidden inputs ------------------------------------------


@pytest.fixture(scope="module")
def grading_02(tmp_path_factory) -> Path:
    """The grading copy of gptlib for lesson 02's exercises, in a course directory's grading/."""
    out = tmp_path_factory.mktemp("course") / "grading" / "gptlib"
    return classroom.grading_package(classroom.exercises_of([LESSONS["02"]]), out)


def test_the_grading_copy_is_rebuilt_only_when_something_changed(tmp_path):
    names = classroom.exercises_of([LESSONS["09"]])
    out = classroom.grading_package(names[:2], tmp_path / "gptlib")
    recording = _recording(out)
    built = recording.stat().st_mtime_ns
    classroom.grading_package(names[:2], out)
    assert recording.stat().st_mtime_ns == built
    classroom.grading_package(names, out)
    assert recording.stat().st_mtime_ns != built
    assert [e.name for e in load_recording(recording)] == names
    cut = (out / "gptlib" / "lessons" / "nb09" / "checks.py").read_text()
    assert all(f"def {REGISTRY[name].reference.__name__}(" not in cut for name in names)


def test_the_grading_kernel_imports_the_grading_copy_and_no_reference(grading_02, tmp_path):
    """A kernel started as autograde starts it (in `_nbgrader_environment` with the grading
    copy), although this checkout's gptlib is installed in the environment: `import gptlib`
    finds the grading copy, a lesson's check module cannot be imported, an exercise's
    reference raises, and no reference stands in for a wrong answer."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(source)
        for source in (
            "import gptlib\nprint(gptlib.__file__)",
            "import gptlib.lessons.nb06.checks",
            "import torch\nfrom gptlib.lessons.engine.checks import REGISTRY, check\n"
            "q = k = v = torch.ones(1, 2, 4)\nREGISTRY['attention'].reference(q, k, v)",
            "def attention(q, k, v, mask=None):\n    return v, None\n"
            "check('attention', attention)\nprint(attention.__name__, sorted(REGISTRY))",
        )
    ]
    with classroom._nbgrader_environment(grading_02):
        NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": str(tmp_path)}}).execute()  # fmt: skip
    found, checks_module, reference, stand_in = nb.cells
    assert found.outputs[0].text.strip() == str(grading_02 / "gptlib" / "__init__.py")
    assert checks_module.outputs[0].ename == "ModuleNotFoundError"
    assert reference.outputs[0].ename == "RuntimeError"
    assert "no reference" in reference.outputs[0].evalue
    printed = "".join(o.get("text", "") for o in stand_in.outputs if o.output_type == "stream")
    names = sorted(classroom.exercises_of([LESSONS["02"]]))
    assert f"attention {names}" in printed  # the student's own `attention`, not a stand-in
    assert "not right yet" in printed


def _lookup_table(exercise):
    """An answer that knows only the recorded outputs of the student's recording (the visible
    inputs), and returns nonsense on any other input."""
    table = {classroom_recorded._saved(args): out for args, out in
             zip(exercise.cases, exercise.expected_outputs, strict=True)}  # fmt: skip

    def answer(*args):
        return table.get(classroom_recorded._saved(args), torch.zeros(1))

    return answer


classroom_recorded = sys.modules["gptlib.lessons.engine.checks.recorded"]


@pytest.mark.parametrize("lesson", ["01", "02", "03", "05", "06", "09"])
def test_a_lookup_table_of_the_visible_outputs_fails_grading(lesson, monkeypatch):
    """The students' recording holds each visible input's right output; an answer that returns
    them passes the students' check, but not grading, which also runs hidden inputs (except
    where the inputs do not depend on the seed). Function answers only (a class's answer is
    run through `adapt`)."""
    names = [n for n in classroom.exercises_of([LESSONS[lesson]]) if REGISTRY[n].adapt is None]
    released = _recorded(names)
    graded = _recorded(names, classroom.GRADING_SEED_OFFSET)
    outcomes = {}
    for name in names:
        cheat = _lookup_table(released[name])
        passed = []
        for exercise in (released[name], graded[name]):
            monkeypatch.setitem(REGISTRY, name, exercise)
            forget_tries()
            try:
                verify(name, cheat)
                passed.append(True)
            except CheckError:
                passed.append(False)
        outcomes[name] = tuple(passed)
    forget_tries()
    looked_up = {name for name, (released_passed, _) in outcomes.items() if released_passed}
    assert len(looked_up) >= len(names) - 1, outcomes  # held-out-losses' inputs change when run
    graded_passed = {name for name, (_, passed) in outcomes.items() if passed}
    assert graded_passed == looked_up & SAME_INPUTS_WHATEVER_THE_SEED, outcomes


@pytest.mark.parametrize("lesson", _lesson_params())
def test_grading_on_hidden_inputs_agrees_with_the_students_kernel(lesson, monkeypatch):
    """Planted answers, checked as the student's kernel checks them (the release's recording)
    and as grading does (the grading copy's: visible and hidden inputs): the same outcome for
    each. An independent right answer passes (on the hidden inputs too), a stub is not
    implemented, no catalogued mistake passes. (The instructor's reference is planted too; where
    it calls what an exercise forbids, both refuse it alike.)"""
    from tests.lessons.engine.checks.test_every_exercise import INDEPENDENT

    path = LESSONS[lesson]
    names = classroom.exercises_of([path])
    full = {name: REGISTRY[name] for name in names}

    def stub(*args, **kwargs):
        raise NotImplementedError()

    planted = {
        name: [("reference", full[name].reference), ("independent", INDEPENDENT[name])]
        + [("stub", stub)]
        + [(m.name, m.implementation) for m in full[name].mistakes]
        for name in names
    }
    student, grading = "student", "grading"
    outcomes = {}
    recorded = {student: _recorded(names), grading: _recorded(names, classroom.GRADING_SEED_OFFSET)}
    for who in (student, grading):
        for exercise in recorded[who].values():
            monkeypatch.setitem(REGISTRY, exercise.name, exercise)
            if who == grading:
                hidden = len(exercise.cases) - len(full[exercise.name].inputs())
                assert hidden > 0 or exercise.name in SAME_INPUTS_WHATEVER_THE_SEED, exercise.name
        outcomes[who] = {
            (n, label): verified_outcome(n, answer) for n in names for label, answer in planted[n]
        }
    assert outcomes[grading] == outcomes[student]
    for n in names:
        assert outcomes[grading][n, "independent"] == "passed"
        assert outcomes[grading][n, "stub"] == "not implemented"
        for m in full[n].mistakes:
            assert outcomes[grading][n, m.name] != "passed", (n, m.name)


# --- autograde: one process per core, a misnamed submission skipped -------------------------------


def test_autograde_runs_one_student_per_core_by_default(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(classroom, "autograde", lambda subs, course, jobs: calls.append(jobs) or [])
    (tmp_path / "ann").mkdir()
    (tmp_path / "ann" / "02_x.ipynb").write_text("{}")
    assert classroom.main(["autograde", str(tmp_path / "ann")]) == 0
    assert calls == [None]
    assert classroom.default_jobs() == len(os.sched_getaffinity(0))


# --- the documented install, for real ------------------------------------------------------------

INSTALLED_LESSONS = ("02", "09")


def _pip(python: Path, *args: str, cwd: Path) -> None:
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", *args],
        capture_output=True, text=True, cwd=cwd,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def _imports(path: Path) -> str:
    """Every import statement of the notebook's code cells, one after the other."""
    found = []
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "code":
            tree = ast.parse("\n".join(line for line in cell.source.splitlines()
                                       if not line.lstrip().startswith(("%", "!"))))  # fmt: skip
            found += [ast.unparse(node) for node in tree.body
                      if isinstance(node, ast.Import | ast.ImportFrom)]  # fmt: skip
    return "\n".join(dict.fromkeys(found))


def _answers(path: Path) -> list[tuple[str, str, str]]:
    """(exercise, function name, solution cell source) for each exercise of a solved notebook."""
    cells = nbformat.read(path, as_version=4).cells
    found = []
    for above, cell in zip(cells, cells[1:], strict=False):
        call = re.search(r"""\bcheck\(\s*["']([^"']+)["']\s*,\s*(\w+)""", cell.source)
        if call and cell.metadata.get("nbgrader", {}).get("grade"):
            found.append((call.group(1), call.group(2), above.source))
    return found


IN_THE_STUDENTS_ENVIRONMENT = """
import contextlib, glob, io, json, os, sys
import torch
import gptlib
from gptlib.lessons.engine.checks import REGISTRY, check, read_outcome
where = os.path.dirname(gptlib.__file__)
print("gptlib", where)
cuts = sorted(glob.glob(os.path.join(where, "lessons", "nb*", "checks.py")))
print("check modules", [os.path.relpath(cut, where) for cut in cuts])
print("registering", sum("register(" in open(cut).read() for cut in cuts))
print("registered", sorted(REGISTRY))

def wrong(answer):
    def shifted(value):
        if isinstance(value, torch.Tensor):
            return value.double() * 1.5 + 1
        if isinstance(value, tuple | list):
            return type(value)(shifted(v) for v in value)
        return value * 1.5 + 1
    return lambda *args, **kwargs: shifted(answer(*args, **kwargs))

outcomes = {}
for imports, answers in LESSONS:
    for exercise, function, solution in answers:
        namespace = {}
        exec(imports, namespace)
        exec(solution, namespace)
        right = namespace[function]
        for label, answer in (("right", right), ("wrong", wrong(right))):
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                check(exercise, answer, namespace={})
            outcomes[f"{exercise} {label}"] = read_outcome(out.getvalue() + err.getvalue()).status
print("outcomes", json.dumps(outcomes))
"""


def documented_commands() -> tuple[str, str]:
    """docs/classroom.md's graded release: the notebooks it releases and what pip installs."""
    doc = (ROOT / "docs" / "classroom.md").read_text()
    release = re.search(r"^python scripts/classroom.py release --graded (\S+)$", doc, re.M)
    install = re.search(r"^pip install (\S+) +# in the students' environment", doc, re.M)
    assert release and install, "docs/classroom.md no longer shows the graded release's commands"
    return release.group(1), install.group(1)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """Lesson 02 (as docs/classroom.md releases it) and then 09 released graded through the
    command line, and the release installed as docs/classroom.md says into a fresh environment,
    `pip install classroom/release/gptlib` (after torch, whose CPU build these machines hold)."""
    notebooks, package = documented_commands()
    assert sorted(ROOT.glob(notebooks)) == [LESSONS[INSTALLED_LESSONS[0]]]
    root = tmp_path_factory.mktemp("instructor")
    started = time.perf_counter()
    for lesson in INSTALLED_LESSONS:
        code = classroom.main(["release", "--graded", str(LESSONS[lesson]),
                               "--course-dir", str(root / "classroom")])  # fmt: skip
        assert code == 0
    released = time.perf_counter()
    venv = root / "students-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    _pip(python, "torch==2.13.0", cwd=root)
    _pip(python, package, cwd=root)
    took = time.perf_counter() - released
    print(f"released in {released - started:.0f} s, installed in {took:.0f} s")
    return python, root


@pytest.mark.slow
def test_the_documented_install_gives_working_checks_without_answers(installed):
    """In the students' environment, from anywhere: gptlib is the installed release (not this
    checkout), its check modules cut down to inputs and adapters (registering nothing), with
    both released lessons' exercises; for
    each, the notebook's own solution passes and a wrong answer fails."""
    python, root = installed
    lessons = [(_imports(LESSONS[lesson]), _answers(LESSONS[lesson]))
               for lesson in INSTALLED_LESSONS]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [str(python), "-c", f"LESSONS = {lessons!r}\n" + IN_THE_STUDENTS_ENVIRONMENT],
        capture_output=True, text=True, cwd=root, env={**env, "GPTLIB_DEVICE": "cpu"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    assert "site-packages" in lines["gptlib"] and str(ROOT) not in lines["gptlib"]
    cuts = [f"lessons/nb{lesson}/checks.py" for lesson in INSTALLED_LESSONS]
    assert lines["check"] == f"modules {cuts}" and lines["registering"] == "0"
    names = [name for _, answers in lessons for name, _, _ in answers]
    assert lines["registered"] == str(sorted(names))
    outcomes = json.loads(lines["outcomes"])
    assert outcomes == {
        f"{name} {label}": status
        for name in names
        for label, status in (("right", "passed"), ("wrong", "unexplained"))
    }
