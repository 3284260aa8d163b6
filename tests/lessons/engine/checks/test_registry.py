"""Every registered exercise: an answer written independently of its reference passes (so the
reference is compared with another implementation, not with itself), the stub is 'not
implemented yet', and each catalogued mistake fails with its own message and name, which the
notebook-facing `check` writes in the form the class report reads back."""

import pytest

from gptlib.lessons.engine.checks import (
    REGISTRY,
    CheckError,
    NotImplementedYet,
    Outcome,
    check,
    in_notebook,
    read_outcome,
    verify,
)
from gptlib.lessons.engine.checks.core import forget_tries
from gptlib.lessons.engine.checks.outcomes import (
    MISTAKE,
    NOT_IMPLEMENTED,
    UNEXPLAINED,
    outcome_from_outputs,
)

EXERCISES = sorted(REGISTRY)
MISTAKES = [(name, m) for name in EXERCISES for m in REGISTRY[name].mistakes]


def _stub(*args, **kwargs):
    raise NotImplementedError()


@pytest.mark.parametrize("name", EXERCISES)
def test_stub_reports_not_implemented(name, capsys):
    with pytest.raises(NotImplementedYet, match="not implemented yet"):
        verify(name, _stub)
    check(name, _stub, namespace={})
    outcome = read_outcome(capsys.readouterr().err)
    assert (outcome.exercise, outcome.status) == (name, NOT_IMPLEMENTED)


@pytest.mark.parametrize(("name", "mistake"), MISTAKES, ids=[f"{n}-{m.name}" for n, m in MISTAKES])
def test_each_mistake_is_named_and_its_fix_comes_only_the_second_time(
    name, mistake, capsys, monkeypatch
):
    with pytest.raises(CheckError) as info:
        verify(name, mistake.implementation)
    assert str(info.value) == f"{name}: {mistake.message}"
    assert info.value.mistake == mistake.name
    if mistake.fix:
        with pytest.raises(CheckError) as again:
            verify(name, mistake.implementation)
        assert again.value.detail.startswith(mistake.message) and mistake.fix in again.value.detail
    forget_tries()
    shown = []
    monkeypatch.setattr(in_notebook, "_in_kernel", lambda: True)
    monkeypatch.setattr(
        "IPython.display.display", lambda data, metadata=None, raw=False: shown.append(metadata)
    )
    check(name, mistake.implementation, namespace={})
    err = capsys.readouterr().err
    assert read_outcome(err) == Outcome(name, UNEXPLAINED, " ".join(mistake.message.split()))
    assert outcome_from_outputs([{"metadata": shown[-1]}]) == Outcome(
        name, MISTAKE, " ".join(mistake.message.split()), mistake.name
    )


def test_every_exercise_has_mistakes_and_unique_names():
    for name in EXERCISES:
        exercise = REGISTRY[name]
        assert exercise.mistakes, f"{name} has no catalogued mistakes"
        names = [m.name for m in exercise.mistakes]
        assert len(names) == len(set(names)), f"{name}: duplicate mistake names {names}"
        assert all("\n" not in n and n.strip() == n for n in names), names
