"""The exercise-check engine: run a student's function, and when it is wrong, name the mistake.

Each notebook's exercises are registered in `gptlib.lessons.checks.nbNN`.
A check runs the student's function on seeded inputs and tests, in order: that it is
implemented, that it returns the right shape with finite values, the properties that need no
reference (rows sum to 1, causality, ...), and finally agreement with the reference. On any
failure it tries the catalogue of known mistakes and, when one reproduces the student's output,
reports that mistake's message instead of a bare "wrong".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch


class CheckError(AssertionError):
    """A check found the answer wrong; the message names what is wrong and how to fix it.

    A subclass of AssertionError, so nbgrader's autograder counts a failed check as a failed
    test cell.
    """


class NotImplementedYet(CheckError):
    """The exercise still holds its stub (`raise NotImplementedError()`)."""


@dataclass(frozen=True)
class Mistake:
    """A known wrong answer: `implementation` makes exactly this mistake; `message` explains it."""

    name: str
    message: str
    implementation: Callable[..., Any]


@dataclass(frozen=True)
class Property:
    """A condition any right answer meets; `test(output, *inputs)` returns None or what is off."""

    name: str
    test: Callable[..., str | None]


@dataclass(frozen=True)
class Exercise:
    """One exercise: its reference, seeded inputs, properties and catalogue of mistakes.

    `make_inputs(generator)` returns a list of argument tuples; the student's function is
    called on each. `atol`/`rtol` set how close to the reference an answer must be.
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
    hint: str = field(default="")

    def inputs(self) -> Sequence[tuple]:
        return self.make_inputs(torch.Generator().manual_seed(self.seed))


REGISTRY: dict[str, Exercise] = {}


def register(exercise: Exercise) -> Exercise:
    """Add an exercise to the registry under its name (names are unique)."""
    if exercise.name in REGISTRY:
        raise ValueError(f"an exercise named {exercise.name!r} is already registered")
    REGISTRY[exercise.name] = exercise
    return exercise


def _as_tensor(value: Any) -> torch.Tensor | None:
    if isinstance(value, torch.Tensor):
        return value.detach()
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return torch.tensor(float(value), dtype=torch.float64)
    return None


def outputs_match(got: Any, expected: Any, atol: float, rtol: float) -> bool:
    """True when two outputs (tensors, numbers, or tuples/lists of them) agree within tolerance."""
    if isinstance(expected, tuple | list):
        return (
            isinstance(got, tuple | list)
            and len(got) == len(expected)
            and all(outputs_match(g, e, atol, rtol) for g, e in zip(got, expected, strict=True))
        )
    g, e = _as_tensor(got), _as_tensor(expected)
    if g is None or e is None:
        return got == expected
    if g.shape != e.shape:
        return False
    g, e = g.to(torch.float64), e.to(torch.float64)
    return bool(torch.allclose(g, e, atol=atol, rtol=rtol, equal_nan=True))


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {list(value.shape)}"
    if isinstance(value, tuple | list):
        return f"a {type(value).__name__} of {len(value)} items"
    return f"{type(value).__name__} {value!r}"


def _shape_problem(got: Any, expected: Any) -> str | None:
    """What is structurally wrong (type, shape, NaN), or None."""
    if got is None:
        return "it returned None: did you forget the `return` statement?"
    if isinstance(expected, tuple | list):
        if not isinstance(got, tuple | list) or len(got) != len(expected):
            return f"it should return {_describe(expected)}, but returned {_describe(got)}"
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            problem = _shape_problem(g, e)
            if problem:
                return f"item {i}: {problem}"
        return None
    if isinstance(expected, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return f"it should return a tensor, but returned {_describe(got)}"
        if got.shape != expected.shape:
            return f"the result has shape {list(got.shape)}, expected {list(expected.shape)}"
        if got.is_floating_point() and not torch.isfinite(got).all():
            return "the result contains NaN or infinite values"
        return None
    if isinstance(expected, int | float) and not isinstance(got, int | float | torch.Tensor):
        return f"it should return a number, but returned {_describe(got)}"
    return None


def _matching_mistake(exercise: Exercise, got: Any, args: tuple) -> Mistake | None:
    for mistake in exercise.mistakes:
        try:
            wrong = mistake.implementation(*args)
        except Exception:  # a mistake that cannot run on these inputs cannot be the match
            continue
        if outputs_match(got, wrong, exercise.atol, exercise.rtol):
            return mistake
    return None


def _fail(exercise: Exercise, got: Any, args: tuple, what: str) -> None:
    mistake = _matching_mistake(exercise, got, args)
    if mistake is not None:
        raise CheckError(f"{exercise.name}: {mistake.message}")
    hint = f" Hint: {exercise.hint}" if exercise.hint else ""
    raise CheckError(f"{exercise.name}: {what}.{hint}")


def check(name: str, student_fn: Callable[..., Any], quiet: bool = False) -> None:
    """Run the check of exercise `name` on `student_fn`; print one line when it passes.

    Raises `NotImplementedYet` for an untouched stub and `CheckError` (an AssertionError) naming
    the misconception when the answer is wrong.
    """
    if name not in REGISTRY:
        known = ", ".join(sorted(REGISTRY))
        raise ValueError(f"no exercise named {name!r}; known exercises: {known}")
    exercise = REGISTRY[name]
    if not callable(student_fn):
        raise CheckError(f"{name}: expected your function, got {_describe(student_fn)}")
    cases = exercise.inputs()
    for args in cases:
        try:
            got = student_fn(*_fresh(args))
        except NotImplementedError:
            raise NotImplementedYet(
                f"{name}: not implemented yet. Replace `raise NotImplementedError()` with your "
                "code, run that cell, then run this check again."
            ) from None
        except Exception as exc:
            raise CheckError(f"{name}: your function raised {type(exc).__name__}: {exc}") from exc
        expected = exercise.reference(*_fresh(args))
        problem = _shape_problem(got, expected)
        if problem:
            _fail(exercise, got, args, problem)
        for prop in exercise.properties:
            problem = prop.test(got, *args)
            if problem:
                _fail(exercise, got, args, f"{prop.name}: {problem}")
        if not outputs_match(got, expected, exercise.atol, exercise.rtol):
            _fail(exercise, got, args, _difference(got, expected))
    if not quiet:
        print(f"✔ {name}: correct on {len(cases)} test input(s).")


def _fresh(args: tuple) -> tuple:
    """Copies of tensor arguments, so a function that writes into its inputs harms no later call."""
    return tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)


def _difference(got: Any, expected: Any) -> str:
    g, e = _as_tensor(got), _as_tensor(expected)
    if g is not None and e is not None and g.shape == e.shape:
        gap = (g.double() - e.double()).abs().max().item()
        return f"the values differ from the reference (largest difference {gap:.3g})"
    return f"expected {_describe(expected)}, got {_describe(got)}"
