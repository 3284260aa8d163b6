"""Every registered exercise: the reference passes, the stub is 'not implemented yet', and each
catalogued mistake fails with its own message."""

import pytest

from gptlib.lessons.checks import REGISTRY, CheckError, NotImplementedYet, check

EXERCISES = sorted(REGISTRY)
MISTAKES = [(name, m) for name in EXERCISES for m in REGISTRY[name].mistakes]


def _stub(*args):
    raise NotImplementedError()


@pytest.mark.parametrize("name", EXERCISES)
def test_reference_passes(name):
    check(name, REGISTRY[name].reference, quiet=True)


@pytest.mark.parametrize("name", EXERCISES)
def test_stub_reports_not_implemented(name):
    with pytest.raises(NotImplementedYet, match="not implemented yet"):
        check(name, _stub)


@pytest.mark.parametrize(("name", "mistake"), MISTAKES, ids=[f"{n}-{m.name}" for n, m in MISTAKES])
def test_each_mistake_is_named(name, mistake):
    with pytest.raises(CheckError) as info:
        check(name, mistake.implementation)
    assert str(info.value) == f"{name}: {mistake.message}"


def test_every_exercise_has_mistakes_and_unique_names():
    for name in EXERCISES:
        exercise = REGISTRY[name]
        assert exercise.mistakes, f"{name} has no catalogued mistakes"
        names = [m.name for m in exercise.mistakes]
        assert len(names) == len(set(names)), f"{name}: duplicate mistake names {names}"
