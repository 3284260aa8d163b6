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
    check,
)
from gptlib.lessons.checks.core import outputs_match


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


def test_reference_passes_and_prints_one_line(capsys):
    check(EXERCISE.name, _row_softmax)
    assert capsys.readouterr().out.strip() == "✔ engine-demo-softmax: correct on 1 test input(s)."


def test_stub_is_not_implemented_yet():
    def stub(x):
        raise NotImplementedError()

    with pytest.raises(NotImplementedYet, match="not implemented yet"):
        check(EXERCISE.name, stub)


def test_known_mistake_is_named_even_when_a_property_fails_first():
    with pytest.raises(CheckError, match="softmax over the wrong axis"):
        check(EXERCISE.name, COLUMN_SOFTMAX.implementation)


def test_unknown_wrong_answer_reports_the_property_and_the_hint():
    with pytest.raises(CheckError, match="rows sum to 1: .* Hint: use torch.softmax"):
        check(EXERCISE.name, lambda x: torch.exp(x))


def test_wrong_values_with_right_properties_report_the_difference():
    with pytest.raises(CheckError, match="largest difference"):
        check(EXERCISE.name, lambda x: torch.softmax(2 * x, dim=-1))


def test_structural_problems_are_explained():
    with pytest.raises(CheckError, match="forgot the `return`|forget the `return`"):
        check(EXERCISE.name, lambda x: None)
    with pytest.raises(CheckError, match=r"shape \[5, 4\], expected \[4, 5\]"):
        check(EXERCISE.name, lambda x: torch.softmax(x.T, -1))
    with pytest.raises(CheckError, match="raised IndexError"):
        check(EXERCISE.name, lambda x: x[99])


def test_check_error_is_an_assertion_error_for_nbgrader():
    assert issubclass(CheckError, AssertionError)
    assert issubclass(NotImplementedYet, CheckError)


def test_unknown_exercise_name_lists_known_ones():
    with pytest.raises(ValueError, match="engine-demo-softmax"):
        check("no-such-exercise", _row_softmax)


def test_outputs_match_handles_numbers_tuples_and_shapes():
    assert outputs_match(3, 3.0, 1e-6, 0)
    assert outputs_match((torch.ones(2), 1.0), [torch.ones(2), 1.0], 1e-6, 0)
    assert not outputs_match(torch.ones(2), torch.ones(3), 1e-6, 0)
    assert not outputs_match(torch.ones(2), torch.ones(2) + 1e-3, 1e-6, 0)
