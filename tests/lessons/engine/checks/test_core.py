"""The check engine on a tiny exercise of its own: what passes, what fails, with which message."""

import re

import pytest
import torch

from gptlib.lessons.engine.checks import (
    REGISTRY,
    CheckError,
    Exercise,
    Mistake,
    NotImplementedYet,
    Property,
    verify,
)
from gptlib.lessons.engine.checks.core import forget_tries


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
    hints=("each row is one distribution", "normalise over the last axis"),
)


@pytest.fixture(autouse=True)
def registered():
    REGISTRY[EXERCISE.name] = EXERCISE
    forget_tries(EXERCISE.name)
    yield
    del REGISTRY[EXERCISE.name]


def _row_softmax_by_exp(x: torch.Tensor) -> torch.Tensor:
    e = (x - x.max(dim=-1, keepdim=True).values).exp()
    return e / e.sum(dim=-1, keepdim=True)


def test_a_right_answer_passes_on_every_input():
    assert verify(EXERCISE.name, _row_softmax_by_exp) == 1


def test_the_reference_itself_is_refused_as_a_delegation():
    with pytest.raises(CheckError, match="the course's reference answer") as info:
        verify(EXERCISE.name, _row_softmax)
    assert info.value.mistake == "delegated"


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
    with pytest.raises(CheckError, match="rows sum to 1: .* Hint 1 of 2: each row is one") as info:
        verify(EXERCISE.name, lambda x: torch.exp(x))
    assert info.value.mistake is None
    assert "show_solution" not in info.value.detail


def test_hints_come_in_steps_and_only_the_last_points_to_the_solution():
    details = []
    for _ in range(3):
        with pytest.raises(CheckError) as info:
            verify(EXERCISE.name, lambda x: torch.exp(x))
        details.append(info.value.detail)
    assert details[0].endswith("Hint 1 of 2: each row is one distribution")
    assert "Hint 2 of 2: normalise over the last axis" in details[1]
    assert "show_solution('engine-demo-softmax')" in details[1]
    assert details[2] == details[1]  # the last hint stays
    with pytest.raises(CheckError, match="softmax over the wrong axis"):  # a named mistake
        verify(EXERCISE.name, COLUMN_SOFTMAX.implementation)  # needs no hint
    forget_tries(EXERCISE.name)
    with pytest.raises(CheckError, match="Hint 1 of 2"):
        verify(EXERCISE.name, lambda x: torch.exp(x))


def test_a_crash_no_mistake_explains_escalates_like_a_wrong_value():
    """Each try says more than the last, an answer that raises too: the explained error, then
    the exercise's next hint (notebook 00 promises it)."""

    def crashes(x):
        return x + x[:2]

    details = []
    for _ in range(2):
        with pytest.raises(CheckError) as info:
            verify(EXERCISE.name, crashes)
        assert info.value.mistake is None
        details.append(info.value.detail)
    assert details[0].startswith("your `crashes` stopped at `return x + x[:2]`")
    assert "(counting from 0)" in details[0]
    assert details[0].endswith("Hint 1 of 2: each row is one distribution")
    assert "Hint 2 of 2: normalise over the last axis" in details[1]
    assert "show_solution('engine-demo-softmax')" in details[1]


def test_wrong_values_with_right_properties_report_the_difference():
    with pytest.raises(CheckError, match=r"largest difference .* at index \[\d, \d\]"):
        verify(EXERCISE.name, lambda x: torch.softmax(2 * x, dim=-1))


def test_an_unknown_wrong_value_tells_the_pattern_of_its_difference_before_the_hint():
    def one_row_reversed(x):
        out = torch.softmax(x, dim=-1)
        out[2] = out[2].flip(0)  # still a distribution: only the values tell
        return out

    with pytest.raises(CheckError) as info:
        verify(EXERCISE.name, one_row_reversed)
    assert info.value.mistake is None
    assert re.search(r"; \d of 20 entries differ, all in row 2\. Hint 1 of 2: ", info.value.detail)


def test_structural_problems_are_explained():
    with pytest.raises(CheckError, match="forgot the `return`|ends with a `return`"):
        verify(EXERCISE.name, lambda x: None)
    with pytest.raises(CheckError, match=r"shape \[5, 4\], expected \[4, 5\]"):
        verify(EXERCISE.name, lambda x: torch.softmax(x.T, -1))
    with pytest.raises(CheckError, match="index 99 was used in dimension 0"):
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


# --- answers that are classes (`adapt`), mistakes that raise, seeded generators -------------


class _Doubler(torch.nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 2 * self.scale * x


class _Tripler(_Doubler):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 3 * self.scale * x


def _run_module(cls):
    """Build cls(width), load `scale`, run it: the function of the inputs a class answer gives."""

    def run(width: int, scale: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        module = cls(width)
        with torch.no_grad():
            module.scale.copy_(scale)
        return module(x)

    return run


CLASS_EXERCISE = Exercise(
    name="engine-demo-class",
    notebook="tests",
    reference=_Doubler,
    make_inputs=lambda g: [(3, torch.randn(3, generator=g), torch.randn(2, 3, generator=g))],
    mistakes=(Mistake("tripled", "you multiplied by 3", _Tripler),),
    adapt=_run_module,
)


def _pick(weights: torch.Tensor, n: int, generator: torch.Generator) -> torch.Tensor:
    return torch.multinomial(weights, n, replacement=True, generator=generator)


def _pick_past_the_end(weights: torch.Tensor, n: int, generator: torch.Generator):
    return weights[len(weights) + n]


SAMPLING_EXERCISE = Exercise(
    name="engine-demo-sampling",
    notebook="tests",
    reference=_pick,
    make_inputs=lambda g: [(torch.ones(50), 20, torch.Generator().manual_seed(1))],
    mistakes=(Mistake("past-the-end", "you read past the end", _pick_past_the_end),),
)


@pytest.fixture
def more_exercises():
    for exercise in (CLASS_EXERCISE, SAMPLING_EXERCISE):
        REGISTRY[exercise.name] = exercise
    yield
    for exercise in (CLASS_EXERCISE, SAMPLING_EXERCISE):
        del REGISTRY[exercise.name]


def test_a_class_answer_is_run_through_adapt(more_exercises):
    class Written(torch.nn.Module):  # another right class: a buffer, another formula
        def __init__(self, width):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.zeros(width))
            self.register_buffer("two", torch.tensor(2.0))

        def forward(self, x):
            return x * self.scale + x * self.scale * (self.two - 1)

    class Doubler(torch.nn.Module):  # the reference's formula, written by the student
        def __init__(self, width):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.ones(width))

        def forward(self, x):
            return 2 * self.scale * x

    assert verify(CLASS_EXERCISE.name, Doubler) == 1
    assert verify(CLASS_EXERCISE.name, Written) == 1
    with pytest.raises(CheckError, match="you multiplied by 3") as info:
        verify(CLASS_EXERCISE.name, _Tripler)
    assert info.value.mistake == "tripled"


def test_a_class_stub_is_not_implemented_and_adapt_may_name_the_problem(more_exercises):
    class Stub(torch.nn.Module):
        def __init__(self, width):
            super().__init__()
            raise NotImplementedError()

    with pytest.raises(NotImplementedYet):
        verify(CLASS_EXERCISE.name, Stub)

    def strict(cls):
        def run(*args):
            raise CheckError(CLASS_EXERCISE.name, "your module has no `scale`", "no-scale")

        return run

    REGISTRY[CLASS_EXERCISE.name] = Exercise(**{**CLASS_EXERCISE.__dict__, "adapt": strict})
    with pytest.raises(CheckError, match="no `scale`") as info:
        verify(CLASS_EXERCISE.name, _Doubler)
    assert info.value.mistake == "no-scale"


def test_every_call_gets_the_same_random_numbers(more_exercises):
    (args,) = SAMPLING_EXERCISE.inputs()
    generator = args[-1]
    before = generator.get_state()

    def pick(weights, n, generator):
        return torch.multinomial(weights, n, replacement=True, generator=generator)

    assert verify(SAMPLING_EXERCISE.name, pick) == 1
    assert torch.equal(generator.get_state(), before)  # the inputs' generator was not used up


def test_a_mistake_that_raises_names_an_answer_raising_the_same_error(more_exercises):
    def also_past_the_end(weights, n, generator):
        return weights[weights.numel() + n]

    with pytest.raises(CheckError, match="you read past the end") as info:
        verify(SAMPLING_EXERCISE.name, also_past_the_end)
    assert info.value.mistake == "past-the-end"
    with pytest.raises(CheckError, match="was used in dimension 0, which has only") as info:
        verify(SAMPLING_EXERCISE.name, lambda w, n, g: w[n + 100])  # another message
    assert info.value.mistake is None


def test_a_named_mistake_teaches_first_and_shows_its_fix_only_when_it_comes_back():
    fixed = Mistake(
        "column-with-fix",
        "each row is one distribution over the keys, so normalise along a row",
        lambda x: torch.softmax(x, 0),
        fix="torch.softmax(x, dim=-1)",
    )
    exercise = Exercise(
        name="engine-demo-fix",
        notebook="tests",
        reference=_row_softmax,
        make_inputs=lambda g: [(torch.randn(4, 5, generator=g),)],
        mistakes=(fixed,),
        hints=("each row is one distribution", "normalise over the last axis"),
    )
    REGISTRY[exercise.name] = exercise
    try:
        forget_tries()
        with pytest.raises(CheckError) as first:
            verify(exercise.name, fixed.implementation)
        assert first.value.detail == fixed.message and "dim=-1" not in str(first.value)
        with pytest.raises(CheckError) as second:
            verify(exercise.name, fixed.implementation)
        assert second.value.detail.startswith(fixed.message)
        assert second.value.detail.endswith("here is the fix: torch.softmax(x, dim=-1)")
        forget_tries(exercise.name)
        with pytest.raises(CheckError) as again:
            verify(exercise.name, fixed.implementation)
        assert again.value.detail == fixed.message
    finally:
        del REGISTRY[exercise.name]
