"""The check engine on a tiny exercise of its own: what passes, what fails, with which message."""

import pytest
import torch

from gptlib.lessons.checks import (
    REGISTRY,
    CheckError,
    Exercise,
    Mistake,
    NotImplementedYet,
    Property,
    verify,
)


def _row_softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


def _rows_sum_to_one(out: torch.Tensor, x: torch.Tensor) -> str | None:
    sums = out.sum(-1)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-5):
        return f"rows sum to {sums.flatten()[:3].tolist()}, not 1"
    return None


COLUMN_SOFTMAX = Mistake("column", "softmax over the wrong axis", lambda x: torch.softmax(x, 0))
EXERCISE = Exercise(
    name="engine-demo-softmax",
    notebook="tests",
    reference=_row_softmax,
    make_inputs=lambda g: [(torch.randn(4, 5, generator=g),)],
    mistakes=(COLUMN_SOFTMAX,),
    properties=(Property("rows sum to 1", _rows_sum_to_one),),
    hint="use torch.softmax",
)


@pytest.fixture(autouse=True)
def registered():
    REGISTRY[EXERCISE.name] = EXERCISE
    yield
    del REGISTRY[EXERCISE.name]


def test_reference_passes_on_every_input():
    assert verify(EXERCISE.name, _row_softmax) == 1


def test_stub_is_not_implemented_yet():
    def stub(x):
        raise NotImplementedError()

    with pytest.raises(NotImplementedYet, match="not implemented yet") as info:
        verify(EXERCISE.name, stub)
    assert (info.value.exercise, info.value.mistake) == (EXERCISE.name, None)


def test_known_mistake_is_named_even_when_a_property_fails_first():
    with pytest.raises(CheckError, match="softmax over the wrong axis") as info:
        verify(EXERCISE.name, COLUMN_SOFTMAX.implementation)
    assert info.value.mistake == "column"
    assert info.value.detail == "softmax over the wrong axis"


def test_unknown_wrong_answer_reports_the_property_and_the_hint():
    with pytest.raises(CheckError, match="rows sum to 1: .* Hint: use torch.softmax") as info:
        verify(EXERCISE.name, lambda x: torch.exp(x))
    assert info.value.mistake is None


def test_wrong_values_with_right_properties_report_the_difference():
    with pytest.raises(CheckError, match=r"largest difference .* at index \[\d, \d\]"):
        verify(EXERCISE.name, lambda x: torch.softmax(2 * x, dim=-1))


def test_structural_problems_are_explained():
    with pytest.raises(CheckError, match="forgot the `return`|forget the `return`"):
        verify(EXERCISE.name, lambda x: None)
    with pytest.raises(CheckError, match=r"shape \[5, 4\], expected \[4, 5\]"):
        verify(EXERCISE.name, lambda x: torch.softmax(x.T, -1))
    with pytest.raises(CheckError, match="raised IndexError"):
        verify(EXERCISE.name, lambda x: x[99])
    with pytest.raises(CheckError, match="expected your function, got int 3"):
        verify(EXERCISE.name, 3)


def test_an_answer_that_writes_into_its_input_harms_no_other_call():
    def in_place(x):
        x -= x.amax(dim=-1, keepdim=True)
        return x.exp_().div_(x.sum(dim=-1, keepdim=True))

    assert verify(EXERCISE.name, in_place) == 1


def test_check_error_is_an_assertion_error_for_tests():
    assert issubclass(CheckError, AssertionError)
    assert issubclass(NotImplementedYet, CheckError)


def test_unknown_exercise_name_lists_known_ones():
    with pytest.raises(ValueError, match="engine-demo-softmax"):
        verify("no-such-exercise", _row_softmax)
