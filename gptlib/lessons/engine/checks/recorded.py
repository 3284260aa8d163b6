"""Checks without their answers, for a graded release: the student's environment holds what the
reference and each catalogued mistake return on the exercises' fixed inputs, not their code.

`record(names)` runs each exercise's reference and mistakes on its inputs and keeps what they
returned (or raised); `scripts/classroom.py release --graded` writes that next to this module
(`RECORDING`) in the copy of gptlib it builds for the students, in which each lesson's `checks.py`
is cut down to what the recording loads by name (`shipped`): no reference, no mistake. There
`gptlib.lessons.engine.checks` registers a `RecordedExercise` for each recorded one: a student's
answer is compared with the stored outputs, a catalogued mistake is still named with its message,
and `show_solution` says it is switched off. A recording holds no solution text: no reference,
no mistake's code, and no mistake's `fix` (the line that mends it, which may be the solution's
own), so a mistake made again is named with its message alone.

`record(names, seed_offset=k)` also records the cases `make_inputs` makes from the seed
`exercise.seed + k` (those not equal to a visible one), after the visible ones: inputs the
student never saw. `scripts/classroom.py
autograde` grades in a copy of gptlib built the same way with such a recording, kept in the
course directory (never released), so an answer that only looks up the visible inputs' outputs
fails, and nothing in the grading kernel can run a reference.

What the recording holds beside data (the inputs' modules and callables, each exercise's `adapt` and
its properties' tests) is pickled by name, so it is defined at module level; the release ships it
in the cut of its check module (`shipped.shipped_check_modules`), which refuses to ship an answer.
The recording is the course's own file, written by the instructor's copy of gptlib: it is read with
`torch.load(weights_only=False)`, since inputs include modules and random generators.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from gptlib.lessons.engine.checks.core import REGISTRY, Exercise, Mistake, Result, result_of
from gptlib.lessons.engine.checks.delegation import Route, reference_route

RECORDING = Path(__file__).with_name("recorded.pt")


def _no_reference(*args: Any) -> Any:
    raise RuntimeError("a recorded exercise has no reference to run")


@dataclass(frozen=True)
class RecordedExercise(Exercise):
    """An exercise whose reference and mistakes are known only by their recorded results."""

    reference: Any = _no_reference
    make_inputs: Any = None
    cases: Sequence[tuple] = ()
    expected_outputs: Sequence[Any] = ()
    mistake_records: Sequence[Sequence[Result]] = field(default=())  # [mistake][case]
    has_solution: bool = False

    def inputs(self) -> Sequence[tuple]:
        return self.cases

    def expected(self, case: int, args: tuple) -> Any:
        return self.expected_outputs[case]

    def mistake_results(self, case: int, args: tuple) -> Iterator[tuple[Mistake, Result]]:
        for mistake, results in zip(self.mistakes, self.mistake_records, strict=True):
            yield mistake, results[case]


def cases_of(exercise: Exercise, seed_offset: int | None = None) -> list[tuple]:
    """The exercise's inputs: the visible ones (its seed), then, with `seed_offset`, those made
    from the seed `exercise.seed + seed_offset` that differ from every visible one (where
    `make_inputs` draws nothing from its generator, or not for every case, some or all of them
    are the visible ones again, and are left out)."""
    cases = list(exercise.inputs())
    if seed_offset is not None:
        seen = {_saved(case) for case in cases}
        generator = torch.Generator().manual_seed(exercise.seed + seed_offset)
        for case in exercise.make_inputs(generator):
            if _saved(case) not in seen:
                seen.add(_saved(case))
                cases.append(case)
    return cases


def _saved(case: tuple) -> bytes:
    """The case as torch.save writes it: equal bytes, equal inputs."""
    buffer = io.BytesIO()
    torch.save(case, buffer)
    return buffer.getvalue()


def _routes_shipped(exercise: Exercise) -> tuple[Route, ...]:
    """The exercise's forbidden routes, and its reference's where the release keeps it (a library
    function, such as 06's `layer_norm`): the recording holds no reference to watch by its code."""
    own = reference_route(exercise.reference)
    return exercise.forbidden + ((own,) if own is not None else ())


def record(names: Iterable[str], seed_offset: int | None = None) -> dict[str, dict]:
    """What `RecordedExercise` needs of each named exercise, as plain data for torch.save: its
    visible inputs, and with `seed_offset` also hidden ones (`cases_of`), with what the
    reference and each mistake give on each. No mistake's `fix` is recorded."""
    recorded = {}
    for name in names:
        exercise = REGISTRY[name]
        cases = cases_of(exercise, seed_offset)
        recorded[name] = {
            "notebook": exercise.notebook,
            "cases": cases,
            "expected": [exercise.expected(i, args) for i, args in enumerate(cases)],
            "mistakes": [
                {
                    "name": m.name,
                    "message": m.message,
                    "results": [
                        result_of(exercise.as_function(m.implementation), a) for a in cases
                    ],
                }
                for m in exercise.mistakes
            ],
            "atol": exercise.atol,
            "rtol": exercise.rtol,
            "hints": exercise.hints,
            "returns": exercise.returns,
            "adapt": exercise.adapt,
            "properties": list(exercise.properties),
            "forbidden": _routes_shipped(exercise),
        }
    return recorded


def recorded_exercises(recording: dict[str, dict]) -> list[RecordedExercise]:
    """The exercises of a recording (what `record` returned, saved and loaded)."""
    exercises = []
    for name, data in recording.items():
        mistakes = tuple(Mistake(m["name"], m["message"], _no_reference) for m in data["mistakes"])
        exercises.append(
            RecordedExercise(
                name=name,
                notebook=data["notebook"],
                mistakes=mistakes,
                atol=data["atol"],
                rtol=data["rtol"],
                hints=tuple(data["hints"]),
                returns=tuple(data["returns"]),
                adapt=data["adapt"],
                properties=tuple(data.get("properties", ())),
                forbidden=tuple(data.get("forbidden", ())),
                cases=data["cases"],
                expected_outputs=data["expected"],
                mistake_records=[m["results"] for m in data["mistakes"]],
            )
        )
    return exercises


def load_recording(path: Path = RECORDING) -> list[RecordedExercise]:
    """The recorded exercises in `path` (written by `scripts/classroom.py release --graded`)."""
    return recorded_exercises(torch.load(path, weights_only=False))
