"""Every registered exercise: the reference passes, the stub is 'not implemented yet', and each
catalogued mistake fails with its own message and name, which the notebook-facing `check`
writes in the form the class report reads back."""

import pytest

from gptlib.lessons.checks import (
    REGISTRY,
    CheckError,
    NotImplementedYet,
    Outcome,
    check,
    read_outcome,
    verify,
)
from gptlib.lessons.checks.outcomes import MISTAKE, NOT_IMPLEMENTED, PASSED

EXERCISES = sorted(REGISTRY)
MISTAKES = [(name, m) for name in EXERCISES for m in REGISTRY[name].mistakes]


def _stub(*args, **kwargs):
    raise NotImplementedError()


@pytest.mark.parametrize("name", EXERCISES)
def test_reference_passes(name, capsys):
    check(name, REGISTRY[name].reference, namespace={})
    out, err = capsys.readouterr()
    assert err == ""
    assert read_outcome(out) == Outcome(name, PASSED)


@pytest.mark.parametrize("name", EXERCISES)
def test_stub_reports_not_implemented(name, capsys):
    with pytest.raises(NotImplementedYet, match="not implemented yet"):
        verify(name, _stub)
    check(name, _stub, namespace={})
    outcome = read_outcome(capsys.readouterr().err)
    assert (outcome.exercise, outcome.status) == (name, NOT_IMPLEMENTED)


@pytest.mark.parametrize(("name", "mistake"), MISTAKES, ids=[f"{n}-{m.name}" for n, m in MISTAKES])
def test_each_mistake_is_named(name, mistake, capsys):
    with pytest.raises(CheckError) as info:
        verify(name, mistake.implementation)
    assert str(info.value) == f"{name}: {mistake.message}"
    assert info.value.mistake == mistake.name
    check(name, mistake.implementation, namespace={})
    assert read_outcome(capsys.readouterr().err) == Outcome(
        name, MISTAKE, " ".join(mistake.message.split()), mistake.name
    )


def test_every_exercise_has_mistakes_and_unique_names():
    for name in EXERCISES:
        exercise = REGISTRY[name]
        assert exercise.mistakes, f"{name} has no catalogued mistakes"
        names = [m.name for m in exercise.mistakes]
        assert len(names) == len(set(names)), f"{name}: duplicate mistake names {names}"
        assert all("\n" not in n and n.strip() == n for n in names), names
