"""An error a student's answer raises reaches the student explained: the line of their code,
what the operation needed, the tensors it held there; PyTorch's own words only for an error we
do not know."""

import math

import pytest
import torch
import torch.nn.functional as F

from gptlib.lessons.engine.checks import REGISTRY, CheckError, Exercise, verify
from gptlib.lessons.engine.checks.errors import explain_error, plain_words


def _raised(fn, *args) -> BaseException:
    try:
        fn(*args)
    except Exception as error:  # the error under test
        return error
    raise AssertionError("expected an error")


def scores_with_wrong_key_width(q, k):
    scores = q @ k.transpose(-2, -1)
    return scores


def matmul_2d(a, b):
    return a @ b


def add_mismatched(a, b):
    return a + b


def view_after_transpose(x):
    return x.transpose(0, 1).view(-1)


def reshape_wrongly(x):
    return x.reshape(3, 5)


def lookup(table, ids):
    return table[ids]


def embed(table, ids):
    return F.embedding(ids, table)


def loss_with_bad_target(logits, targets):
    return F.cross_entropy(logits, targets)


def softmax_on_missing_axis(x):
    return torch.softmax(x, dim=2)


def backward_twice(w):
    loss = (w * w).sum()
    loss.backward()
    loss.backward()


def backward_without_graph(w):
    with torch.no_grad():
        loss = (w * w).sum()
    loss.backward()


def branch_on_tensor(x):
    if x > 0:
        return x
    return -x


CASES = {
    "batched matmul": (
        scores_with_wrong_key_width,
        (torch.ones(2, 4, 6), torch.ones(2, 4, 5)),
        ["`scores = q @ k.transpose(-2, -1)`", "q [2, 4, 6] float32", "k [2, 4, 5] float32"],
    ),
    "2-D matmul": (
        matmul_2d,
        (torch.ones(4, 6), torch.ones(5, 3)),
        ["here 6 met 5 (as 2-D: 4×6 and 5×3)"],
    ),
    "broadcast": (add_mismatched, (torch.ones(3, 4), torch.ones(3, 5)), ["cannot be broadcast"]),
    "batch dimensions": (
        matmul_2d,  # k.T on a [B, T, d] key tensor reverses all three dimensions
        (torch.ones(2, 4, 6), torch.ones(6, 4, 2)),
        ["batch dimensions of a matrix product", "size 2 and the second has size 6"],
    ),
    "view": (view_after_transpose, (torch.ones(3, 4),), ["not contiguous", "reshape"]),
    "reshape": (reshape_wrongly, (torch.ones(4, 4),), ["[3, 5] cannot hold the tensor's 16"]),
    "index": (lookup, (torch.ones(5, 2), torch.tensor(7)), ["index 7 was used in dimension 0"]),
    "embedding": (
        embed,
        (torch.ones(5, 2), torch.tensor([1, 9])),
        ["not below the table's number of rows"],
    ),
    "target": (
        loss_with_bad_target,
        (torch.zeros(3, 4), torch.tensor([0, 1, 10])),
        ["target class 10", "between 0 and the number of classes minus 1"],
    ),
    "float target": (
        loss_with_bad_target,
        (torch.zeros(3, 4), torch.tensor([0.0, 1.0, 2.0])),
        ["targets must be class ids", "these were Float"],
    ),
    "classes in the last dimension": (
        loss_with_bad_target,
        (torch.zeros(2, 5, 7), torch.zeros(2, 5, dtype=torch.long)),
        ["wanted targets of shape [2, 7] and got [2, 5]", "[B·T, classes]"],
    ),
    "dimension": (softmax_on_missing_axis, (torch.ones(3, 4),), ["dimension 2 was asked"]),
    "backward twice": (backward_twice, (torch.ones(3, requires_grad=True),), ["ran twice"]),
    "backward without graph": (
        backward_without_graph,
        (torch.ones(3, requires_grad=True),),
        ["torch.no_grad()"],
    ),
    "tensor truth": (branch_on_tensor, (torch.ones(3),), ["has no single truth value"]),
}


@pytest.mark.parametrize("case", CASES, ids=CASES)
def test_each_known_error_is_explained_in_the_students_terms(case):
    fn, args, expected = CASES[case]
    error = _raised(fn, *args)
    assert plain_words(error) is not None, f"{case}: {error}"
    text = explain_error(error, fn.__name__)
    assert text.startswith(f"your `{fn.__name__}` stopped at `")
    for piece in expected:
        assert piece in text, f"{case}: {piece!r} not in {text!r}"
    assert str(error).splitlines()[0] not in text  # PyTorch's words are not what they read


def test_a_broadcast_error_says_which_dimension_counting_from_0_and_which_side_is_which():
    text = explain_error(_raised(add_mismatched, torch.ones(2, 5, 6), torch.ones(2, 6)), "add")
    assert "in dimension 1 (counting from 0) of the broadcast result" in text
    assert "the first operand, the one on the left, has size 5 and the second has size 2" in text
    assert "number 1" not in text


def test_an_unknown_error_keeps_its_words_after_the_location():
    def odd(x):
        raise RuntimeError("something nobody has seen")

    text = explain_error(_raised(odd, 1), "odd")
    assert text == (
        'your `odd` stopped at `raise RuntimeError("something nobody has seen")`: it raised '
        "RuntimeError (something nobody has seen)."
    )


def test_a_check_explains_what_the_students_code_did():
    exercise = Exercise(
        name="errors-demo-scores",
        notebook="tests",
        reference=lambda q, k: q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]),
        make_inputs=lambda g: [
            (torch.randn(2, 3, 4, generator=g), torch.randn(2, 5, 4, generator=g))
        ],
    )
    REGISTRY[exercise.name] = exercise
    try:

        def scores(q, k):
            return q @ k / math.sqrt(q.shape[-1])  # forgot the transpose

        with pytest.raises(CheckError) as info:
            verify(exercise.name, scores)
        detail = info.value.detail
        assert detail.startswith("your `scores` stopped at `return q @ k / math.sqrt(q.shape[-1])")
        assert "q [2, 3, 4] float32, k [2, 5, 4] float32" in detail
        assert "batch2" not in detail
    finally:
        del REGISTRY[exercise.name]
