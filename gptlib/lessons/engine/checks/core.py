"""The exercise-check engine: run a student's function, and when it is wrong, name the mistake.

Each notebook's exercises are registered in its lesson's `gptlib.lessons.nbNN.checks`.
`verify` runs the student's function on seeded inputs and tests, in order: that it is
implemented, that it returns the right shape with finite values, the properties that need no
reference (rows sum to 1, causality, ...), and finally agreement with the reference. On any
failure it tries the catalogue of known mistakes and, when one reproduces the student's output
(or the error it raised), raises with that mistake's message and name instead of a bare "wrong";
otherwise the message (a wrong value, or an error explained by `explain_error`) ends with the
exercise's next hint, from the idea to the specific, and after the last one points to
`show_solution`, the one place a solution's code is shown (`solution_source`). Hints teach
before they tell: a named mistake's first report explains the misconception in words; its
`fix`, the line that mends it, is added only when the same mistake comes back.
An exercise whose answer is a class says how to run it (`Exercise.adapt`). The notebooks call
`check` (in `in_notebook`), which reports instead of raising.
"""

from __future__ import annotations

import inspect
import textwrap
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from gptlib.lessons.engine.checks.compare import describe, difference, outputs_match, shape_problem
from gptlib.lessons.engine.checks.delegation import DELEGATED, Route, Watch, make_watch, refusal
from gptlib.lessons.engine.checks.delegation import watching as _watching
from gptlib.lessons.engine.checks.errors import explain_error

STUB_ADVICE = (
    "Replace `raise NotImplementedError()` with your code, run that cell, then run this check "
    "again."
)
# Marks the reference that stands in for a student's unfinished answer (see `in_notebook`).
STAND_IN_MARK = "__gptlib_stand_in_for__"
# What the answer it replaced did, when that was a written answer that did not pass: the name
# of the catalogued mistake it made ("" for none); absent for a stub.
STAND_IN_AFTER = "__gptlib_stand_in_after__"
SWITCHED_OFF = (
    "show_solution is switched off for this assignment: it is graded, and this copy of gptlib "
    "holds no reference solutions (your instructor has them)."
)


class CheckError(AssertionError):
    """A check found the answer wrong; the message names what is wrong and how to fix it.

    `exercise` is the exercise's name, `detail` the explanation, and `mistake` the name of the
    catalogued mistake the answer reproduces (None when no catalogue entry explains it). A
    subclass of AssertionError, so a failed `verify` fails a test.
    """

    def __init__(self, exercise: str, detail: str, mistake: str | None = None) -> None:
        super().__init__(f"{exercise}: {detail}")
        self.exercise = exercise
        self.detail = detail
        self.mistake = mistake


class NotImplementedYet(CheckError):
    """The exercise still holds its stub (`raise NotImplementedError()`)."""

    def __init__(self, exercise: str, advice: str = STUB_ADVICE) -> None:
        super().__init__(exercise, f"not implemented yet. {advice}")
        self.advice = advice


@dataclass(frozen=True)
class Mistake:
    """A known wrong answer: `implementation` makes exactly this mistake.

    `message` names the misconception and points to the idea, in words and without the
    solution's code: it is what a student reads the first time. `fix` is the specific pointer
    (code allowed), added to the message from the second time the same mistake is made.
    `name` is short and stable: reports count students by it.
    """

    name: str
    message: str
    implementation: Callable[..., Any]
    fix: str = ""


@dataclass(frozen=True)
class Property:
    """A condition any right answer meets; `test(output, *inputs)` returns None or what is off."""

    name: str
    test: Callable[..., str | None]


@dataclass(frozen=True)
class Exercise:
    """One exercise: its reference, seeded inputs, properties and catalogue of mistakes.

    `make_inputs(generator)` returns a list of argument tuples; the student's function is
    called on each. `atol`/`rtol` set how close to the reference an answer must be. `returns`
    names the items of a tuple the function returns (for messages). `stand_in` replaces the
    student's answer in the notebook while it is not right yet (default: the reference).

    `adapt` is for answers that are not functions of the inputs, such as an `nn.Module` class:
    `adapt(answer)` returns the function of the inputs to test (build the module, copy in known
    weights, run it). It is applied alike to the student's answer, the reference and every
    catalogued mistake, so all of them are written as classes. It may raise `CheckError` to
    report a structural mistake (a missing layer, a wrong shape) in its own words.

    `forbidden` lists the calls that would answer the exercise for the student (a library
    function that computes the same thing, an operator the exercise's text rules out); the
    reference itself is always refused, under any name (see `delegation`).
    """

    name: str
    notebook: str
    reference: Callable[..., Any]
    make_inputs: Callable[[torch.Generator], Sequence[tuple]]
    mistakes: tuple[Mistake, ...] = ()
    properties: tuple[Property, ...] = ()
    atol: float = 1e-5
    rtol: float = 1e-4
    seed: int = 0
    hints: tuple[str, ...] = ()  # from the idea to the specific; never the solution's code
    returns: tuple[str, ...] = ()
    stand_in: Callable[..., Any] | None = None
    adapt: Callable[[Any], Callable[..., Any]] | None = None
    has_solution: bool = True  # False in a graded release, whose gptlib holds no references
    forbidden: tuple[Route, ...] = ()

    def inputs(self) -> Sequence[tuple]:
        return self.make_inputs(torch.Generator().manual_seed(self.seed))

    def as_function(self, answer: Any) -> Callable[..., Any]:
        """The answer as a function of the inputs (through `adapt` when there is one)."""
        return answer if self.adapt is None else self.adapt(answer)

    def expected(self, case: int, args: tuple) -> Any:
        """What a right answer returns on input number `case`, `args`."""
        return self.as_function(self.reference)(*_fresh(args))

    def mistake_results(self, case: int, args: tuple) -> Iterator[tuple[Mistake, Result]]:
        """What each catalogued mistake does on input number `case`, `args`."""
        for mistake in self.mistakes:
            yield mistake, result_of(self.as_function(mistake.implementation), args)

    def watch(self, answer: Any) -> Watch:
        """What `answer` must not call: the reference (and its stand-in), and the `forbidden`
        routes; nothing for a catalogued mistake's own code, which may be written with the
        reference's help (the engine runs it to recognise the mistake)."""
        if any(answer is m.implementation for m in self.mistakes):
            return make_watch((), ())
        return make_watch((self.reference, self.stand_in), self.forbidden)


@dataclass(frozen=True)
class Result:
    """What a function did with an input: `returned` a value, or raised `error` (its type's name
    and message), as a recorded check compares them."""

    returned: Any = None
    error: tuple[str, str] | None = None


_RUNNING_A_MISTAKE: ContextVar[bool] = ContextVar("running_a_mistake", default=False)


def running_a_mistake() -> bool:
    """Whether the engine is running a catalogued mistake's own code (to find the one a wrong
    answer makes, or to record its results): what such a run reports is not a report to the
    student."""
    return _RUNNING_A_MISTAKE.get()


def result_of(mistake: Callable[..., Any], args: tuple) -> Result:
    """Run a catalogued mistake's function on fresh copies of `args`; what it returned or
    raised."""
    running = _RUNNING_A_MISTAKE.set(True)
    try:
        return Result(returned=mistake(*_fresh(args)))
    except Exception as exc:  # a mistake that raises is recorded as its error
        return Result(error=(type(exc).__name__, str(exc)))
    finally:
        _RUNNING_A_MISTAKE.reset(running)


class Registry(dict[str, Exercise]):
    """The exercises by name, filled on first read by `fill` (set by the package: it imports
    every lesson's checks, or registers a graded release's recording). Filled on first read, not
    on import, so that a lesson's checks module imported first (a teacher's scratch test) is
    complete before another lesson's checks import from it."""

    fill: Callable[[], None] | None = None

    def _filled(self) -> None:
        fill, type(self).fill = type(self).fill, None
        if fill is not None:
            fill()

    def __getitem__(self, name: str) -> Exercise:
        self._filled()
        return super().__getitem__(name)

    def __contains__(self, name: object) -> bool:
        self._filled()
        return super().__contains__(name)

    def __iter__(self) -> Iterator[str]:
        self._filled()
        return super().__iter__()

    def __len__(self) -> int:
        self._filled()
        return super().__len__()

    def get(self, name: str, default: Any = None) -> Any:
        self._filled()
        return super().get(name, default)

    def keys(self) -> Any:
        self._filled()
        return super().keys()

    def values(self) -> Any:
        self._filled()
        return super().values()

    def items(self) -> Any:
        self._filled()
        return super().items()


REGISTRY = Registry()


def register(exercise: Exercise) -> Exercise:
    """Add an exercise to the registry under its name. Names are unique; the same module
    registering it again (`importlib.reload` of a lesson's checks in a live kernel) replaces it."""
    before = dict.get(REGISTRY, exercise.name)
    if before is not None and _module_of(before) != _module_of(exercise):
        raise ValueError(f"an exercise named {exercise.name!r} is already registered")
    dict.__setitem__(REGISTRY, exercise.name, exercise)
    return exercise


def _module_of(exercise: Exercise) -> str | None:
    """The module that defined the exercise (where its inputs are made)."""
    return getattr(exercise.make_inputs, "__module__", None)


def exercise_named(name: str) -> Exercise:
    """The registered exercise `name`; ValueError listing the known ones otherwise."""
    if name not in REGISTRY:
        known = ", ".join(sorted(REGISTRY))
        raise ValueError(f"no exercise named {name!r}; known exercises: {known}")
    return REGISTRY[name]


def _matching_mistake(exercise: Exercise, got: Any, case: int, args: tuple) -> Mistake | None:
    for mistake, result in exercise.mistake_results(case, args):
        if result.error is None and outputs_match(
            got, result.returned, exercise.atol, exercise.rtol
        ):
            return mistake
    return None


def _mistake_raising(
    exercise: Exercise, error: Exception, case: int, args: tuple
) -> Mistake | None:
    """The first catalogued mistake that raises the same error (type and message) on `args`:
    some mistakes show as an error, such as reading past the positions a model knows."""
    for mistake, result in exercise.mistake_results(case, args):
        if result.error == (type(error).__name__, str(error)):
            return mistake
    return None


_WRONG_TRIES: Counter[str] = Counter()  # uncatalogued wrong answers so far, per exercise
_MISTAKE_TRIES: Counter[tuple[str, str]] = Counter()  # each named mistake's reports so far


def next_hint(exercise: Exercise) -> str:
    """What to add to an uncatalogued wrong answer's message (a wrong value, or an error no
    catalogued mistake raises): the exercise's first hint on the first such answer, the next
    one on each later answer, so that each try is more specific than the last; after the last
    hint, also where the reference solution is (`show_solution`)."""
    tries = _WRONG_TRIES[exercise.name]
    _WRONG_TRIES[exercise.name] += 1
    hints = exercise.hints
    if not hints:
        return ""
    shown = min(tries, len(hints) - 1)
    text = f" Hint {shown + 1} of {len(hints)}: {hints[shown]}"
    if tries >= len(hints) - 1 and exercise.has_solution:
        text += (
            " Still stuck? `from gptlib.lessons.engine.checks import show_solution`, then "
            f"`show_solution({exercise.name!r})` prints the reference solution."
        )
    return text


def forget_tries(name: str | None = None) -> None:
    """Start the hints of exercise `name` (default: every exercise) from the first again."""
    if name is None:
        _WRONG_TRIES.clear()
        _MISTAKE_TRIES.clear()
    else:
        _WRONG_TRIES.pop(name, None)
        for key in [key for key in _MISTAKE_TRIES if key[0] == name]:
            del _MISTAKE_TRIES[key]


def mistake_error(exercise: Exercise, mistake: Mistake) -> CheckError:
    """The report of a named mistake: its message the first time; from the second time the same
    mistake is made, the message and then its fix. While the engine runs the catalogue's own code
    (`running_a_mistake`), the message alone, counted as no report to the student."""
    if running_a_mistake():
        return CheckError(exercise.name, mistake.message, mistake.name)
    seen = _MISTAKE_TRIES[exercise.name, mistake.name]
    _MISTAKE_TRIES[exercise.name, mistake.name] += 1
    detail = mistake.message
    if seen and mistake.fix:
        detail += f" The same mistake again, so here is the fix: {mistake.fix}"
    return CheckError(exercise.name, detail, mistake.name)


def solution_source(name: str) -> str:
    """The reference solution of exercise `name` as source code, under a heading saying what it
    is (`in_notebook.show_solution` prints it): never part of a check's message."""
    exercise = exercise_named(name)
    if not exercise.has_solution:
        return SWITCHED_OFF
    source = textwrap.dedent(inspect.getsource(exercise.reference))
    where = inspect.getsourcefile(exercise.reference)
    return f"# The reference solution of exercise {name!r} ({Path(where).name}):\n{source}"


def _fail(exercise: Exercise, got: Any, case: int, args: tuple, what: str) -> None:
    mistake = _matching_mistake(exercise, got, case, args)
    if mistake is not None:
        raise mistake_error(exercise, mistake)
    raise CheckError(exercise.name, f"{what}.{next_hint(exercise)}")


def verify(name: str, student_fn: Callable[..., Any]) -> int:
    """Check `student_fn` against exercise `name`; return the number of inputs it passed.

    Raises `NotImplementedYet` for an untouched stub (or the reference still standing in for
    it) and `CheckError` naming the misconception when the answer is wrong.
    """
    exercise = exercise_named(name)
    if not callable(student_fn):
        raise CheckError(name, f"expected your function, got {describe(student_fn)}")
    marks = getattr(student_fn, "__dict__", {})
    if marks.get(STAND_IN_MARK):
        _stand_in_checked(name, student_fn.__name__, marks.get(STAND_IN_AFTER))
    cases = exercise.inputs()
    answer = exercise.as_function(student_fn)
    watch = exercise.watch(student_fn)
    for case, args in enumerate(cases):
        try:
            with _watching(watch):
                got = answer(*_fresh(args))
        except NotImplementedError:
            _refuse_if_delegated(name, watch, student_fn)
            raise NotImplementedYet(name) from None
        except CheckError:  # `adapt` found a structural mistake and said which
            _refuse_if_delegated(name, watch, student_fn)
            raise
        except Exception as exc:
            _refuse_if_delegated(name, watch, student_fn)
            mistake = _mistake_raising(exercise, exc, case, args)
            if mistake is not None:
                raise mistake_error(exercise, mistake) from exc
            answer_name = getattr(student_fn, "__name__", "function")
            explained = explain_error(exc, answer_name)
            raise CheckError(name, f"{explained}{next_hint(exercise)}") from exc
        _refuse_if_delegated(name, watch, student_fn)
        expected = exercise.expected(case, args)
        problem = shape_problem(got, expected, exercise.returns)
        if problem:
            _fail(exercise, got, case, args, problem)
        for prop in exercise.properties:
            problem = prop.test(got, *_fresh(args))
            if problem:
                _fail(exercise, got, case, args, f"{prop.name}: {problem}")
        if not outputs_match(got, expected, exercise.atol, exercise.rtol):
            _fail(
                exercise,
                got,
                case,
                args,
                difference(got, expected, exercise.atol, exercise.rtol, exercise.returns),
            )
    return len(cases)


def _stand_in_checked(name: str, answer_name: str, after: str | None) -> None:
    """The check of the reference standing in for a student's answer, re-run without the
    student's cell: a stub is still not implemented; a written answer did not pass, and what it
    was reported with (its catalogued mistake, for the class report) still holds."""
    if after is None:
        raise NotImplementedYet(
            name,
            f"`{answer_name}` is still the reference that stood in for your answer. "
            "Run the cell that defines yours, then run this check again.",
        )
    raise CheckError(
        name,
        f"your `{answer_name}` did not pass this check, so the reference has stood in for it "
        "since, and this check ran the reference, not yours. Your answer is still in its own "
        "cell: change it there as the earlier message said, run that cell, then run this check "
        "again.",
        after or None,
    )


def whose(answer: Any) -> str:
    """Who wrote `answer`, the object a notebook's name holds after its check, in words a cell
    prints beside a result computed with it: "your name", or the reference standing in for it
    and why (the student's is not written yet, or did not pass its check)."""
    name = getattr(answer, "__name__", type(answer).__name__)
    marks = getattr(answer, "__dict__", {})
    if not marks.get(STAND_IN_MARK):
        return f"your {name}"
    written = marks.get(STAND_IN_AFTER) is not None
    why = "yours did not pass its check" if written else "yours is not written yet"
    return f"the reference {name}, standing in for yours ({why})"


def _refuse_if_delegated(name: str, watch: Watch, student_fn: Any) -> None:
    """Refuse an answer that called a watched route: the exercise is passed only by doing it."""
    if watch.hit is not None:
        answer_name = getattr(student_fn, "__name__", type(student_fn).__name__)
        raise CheckError(name, refusal(watch.hit, answer_name), DELEGATED) from None


def _fresh(args: tuple) -> tuple:
    """Copies of tensor arguments, so a function that writes into its inputs harms no later call,
    and of random generators, so that every call draws the same numbers."""
    return tuple(_fresh_copy(a) for a in args)


def _fresh_copy(arg: Any) -> Any:
    if isinstance(arg, torch.Tensor):
        return arg.clone()
    if isinstance(arg, torch.Generator):
        copy = torch.Generator(device=arg.device)
        copy.set_state(arg.get_state())
        return copy
    return arg
