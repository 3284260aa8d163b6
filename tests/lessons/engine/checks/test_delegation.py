"""An exercise is passed only by doing it: the engine refuses an answer that runs the reference
(under any name, wrapped, subclassed, as the stand-in) or a listed route, Python function or
PyTorch operator, whatever way the student reaches it; code the check runs for itself is not
the student's call."""

import functools

import pytest
import torch
import torch.nn.functional as F

from gptlib.lessons.engine.checks import REGISTRY, CheckError, Exercise, Mistake, verify
from gptlib.lessons.engine.checks.delegation import (
    DELEGATED,
    Route,
    code_objects,
    reference_route,
    resolve,
    unwatched,
)
from gptlib.lessons.engine.checks.in_notebook import make_stand_in


def _softmax_reference(x: torch.Tensor) -> torch.Tensor:
    e = (x - x.max(dim=-1, keepdim=True).values).exp()
    return e / e.sum(dim=-1, keepdim=True)


def _own(x: torch.Tensor) -> torch.Tensor:
    e = x.exp()
    return e / e.sum(-1, keepdim=True)


NO_SOFTMAX = Route(
    "aten::_softmax", "torch's softmax", "the exercise is to write the softmax from exp and sum."
)
NO_LIBRARY = Route(
    "gptlib.model:attention_with_weights",
    "gptlib's `attention_with_weights`",
    "it computes what you are asked to write.",
)
EXERCISE = Exercise(
    name="engine-demo-delegation",
    notebook="tests",
    reference=_softmax_reference,
    make_inputs=lambda g: [(torch.randn(3, 4, generator=g),)],
    mistakes=(Mistake("columns", "over the wrong axis", lambda x: torch.softmax(x, 0)),),
    forbidden=(NO_SOFTMAX, NO_LIBRARY),
)


@pytest.fixture(autouse=True)
def registered():
    REGISTRY[EXERCISE.name] = EXERCISE
    yield
    del REGISTRY[EXERCISE.name]


def _refused(answer) -> CheckError:
    with pytest.raises(CheckError) as info:
        verify(EXERCISE.name, answer)
    assert info.value.mistake == DELEGATED
    return info.value


def test_an_answer_written_by_hand_passes():
    assert verify(EXERCISE.name, _own) == 1


@pytest.mark.parametrize(
    "answer",
    [
        _softmax_reference,
        lambda x: _softmax_reference(x),
        functools.partial(_softmax_reference),
    ],
    ids=["itself", "called-inside", "partial"],
)
def test_the_reference_is_refused_under_any_name(answer):
    assert "the course's reference answer" in _refused(answer).detail


def test_the_stand_in_unwrapped_is_still_the_reference():
    stand_in = make_stand_in(EXERCISE, "softmax_rows")
    _refused(stand_in.__wrapped__)
    _refused(lambda x: stand_in.__wrapped__(x) * 1.0)


def test_a_copy_of_the_references_code_is_still_the_reference():
    copy = type(_softmax_reference)(_softmax_reference.__code__.replace(), globals())
    _refused(copy)


@pytest.mark.parametrize(
    "answer",
    [
        lambda x: torch.softmax(x, -1),
        lambda x: F.softmax(x, dim=-1),
        lambda x: x.softmax(-1),
        lambda x: torch.nn.Softmax(dim=-1)(x),
        lambda x: torch.special.softmax(x, -1),
        lambda x: torch.ops.aten._softmax(x, -1, False),
    ],
    ids=["torch.softmax", "F.softmax", "Tensor.softmax", "nn.Softmax", "special", "aten"],
)
def test_a_forbidden_operator_is_refused_by_every_route(answer):
    error = _refused(answer)
    assert "torch's softmax" in error.detail
    assert "the exercise is to write the softmax from exp and sum." in error.detail


def test_a_forbidden_library_function_is_refused():
    from gptlib.model import attention_with_weights

    def through_the_library(x):
        attention_with_weights(x[None, None], x[None, None], x[None, None])
        return _own(x)

    assert "`attention_with_weights`" in _refused(through_the_library).detail


def test_a_refusal_wins_over_a_crash():
    def crashes(x):
        torch.softmax(x, -1)
        raise RuntimeError("boom")

    _refused(crashes)


def test_a_catalogued_mistakes_own_code_is_judged_as_that_mistake():
    with pytest.raises(CheckError) as info:
        verify(EXERCISE.name, EXERCISE.mistakes[0].implementation)
    assert info.value.mistake == "columns"


def test_what_the_check_runs_for_itself_is_not_the_students_call():
    def harness_style(x):
        with unwatched():
            torch.softmax(x, -1)
        return _own(x)

    assert verify(EXERCISE.name, harness_style) == 1


def test_routes_resolve_and_name_their_code():
    from gptlib.model import CausalSelfAttention

    assert resolve("gptlib.model:CausalSelfAttention") is CausalSelfAttention
    codes = code_objects(CausalSelfAttention)
    assert CausalSelfAttention.forward.__code__ in codes
    with pytest.raises(ValueError, match="names nothing importable"):
        resolve("gptlib.model:no_such_thing")


def test_a_library_reference_is_named_for_a_graded_release():
    from gptlib.lessons.nb06.references import layer_norm

    route = reference_route(layer_norm)
    assert route.target == "gptlib.lessons.nb06.references:layer_norm"
    assert reference_route(_softmax_reference) is not None
    assert reference_route(lambda x: x) is None


def test_a_decorated_method_of_a_class_route_is_its_own_code_not_the_decorators():
    """A class route with a @contextmanager method must not refuse every other context manager
    (they all run contextlib's one wrapper) nor a dataclass's generated methods."""
    import contextlib
    import dataclasses

    class Library:
        @contextlib.contextmanager
        def scope(self):
            yield

    @dataclasses.dataclass
    class Record:
        k: int

    codes = code_objects(Library) + code_objects(Record)
    assert [c.co_name for c in codes] == ["scope"]
    with contextlib.nullcontext():
        pass
    assert contextlib.contextmanager(lambda: (yield)).__code__ not in codes


def test_a_profile_function_set_before_the_check_still_runs_and_is_restored():
    import sys

    seen = []

    def mine(frame, event, arg):
        if event == "call":
            seen.append(frame.f_code.co_name)

    sys.setprofile(mine)
    try:
        assert verify(EXERCISE.name, _own) == 1
        assert sys.getprofile() is mine
    finally:
        sys.setprofile(None)
    assert "_own" in seen
