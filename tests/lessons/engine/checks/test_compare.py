"""Comparing answers with the reference: what counts as the same, and how a difference is told."""

import numpy as np
import torch

from gptlib.lessons.engine.checks.compare import (
    difference,
    difference_pattern,
    outputs_match,
    shape_problem,
)


def test_outputs_match_handles_numbers_tuples_dtypes_and_layouts():
    assert outputs_match(3, 3.0, 1e-6, 0)
    assert outputs_match(np.float32(0.5), 0.5, 1e-6, 0)
    assert outputs_match(np.int64(7), 7, 0, 0)
    assert outputs_match(torch.tensor(7), 7, 0, 0)
    assert outputs_match((torch.ones(2), 1.0), [torch.ones(2), 1.0], 1e-6, 0)
    x = torch.randn(3, 4)
    assert outputs_match(x.double().T.contiguous().T, x, 1e-6, 0)  # float64, strided
    assert outputs_match(np.asarray(x), x, 1e-6, 0)
    assert not outputs_match(torch.ones(2), torch.ones(3), 1e-6, 0)
    assert not outputs_match(torch.ones(2), torch.ones(2) + 1e-3, 1e-6, 0)
    assert not outputs_match((torch.ones(2),), torch.ones(2), 1e-6, 0)


def test_a_tuple_names_the_item_that_differs_where_and_by_how_much():
    weights = torch.tensor([[0.5, 0.25, 0.25], [0.2, 0.3, 0.5]])
    wrong = weights.clone()
    wrong[0, 2] += 0.25
    output = torch.ones(2, 4)
    message = difference(
        (output, wrong), (output, weights), 1e-5, 1e-4, ("the output", "the weights")
    )
    assert message == (
        "item 1 (the weights) differs from the reference: largest difference 0.25 at index "
        "[0, 2] (yours 0.5, the reference's 0.25); only that entry differs; the other 5 match"
    )
    assert difference([output + 1, weights], (output, weights), 1e-5, 1e-4).startswith(
        "item 0 differs from the reference: largest difference 1 at index [0, 0]"
    )


def test_numbers_are_told_with_both_values():
    assert difference(1_649_216, 1_652_352, 0.5, 0) == (
        "the result differs from the reference: yours is 1.64922e+06, the reference's is "
        "1.65235e+06"
    )
    assert difference(torch.tensor(2.5), 2.0, 1e-6, 0).endswith(
        "yours is 2.5, the reference's is 2"
    )


def test_numbers_that_agree_to_six_digits_are_told_with_the_digits_that_differ():
    """A byte count off by one reads as two different numbers, not 6.44245e+09 twice."""
    assert difference(6_442_450_945, 6_442_450_944, 0, 0).endswith(
        "yours is 6442450945, the reference's is 6442450944"
    )
    close = torch.tensor([1.0, 1.0000001], dtype=torch.float64)
    assert "(yours 1.0000001, the reference's 1)" in difference(close, torch.ones(2), 0, 0)


def test_boolean_tensors_count_the_entries_that_differ():
    expected = torch.ones(3, 3, dtype=torch.bool).tril()
    got = expected.clone()
    got[0, 1] = got[1, 2] = True
    assert difference(got, expected, 0, 0) == (
        "the result differs from the reference: 2 of 9 entries differ, the first at index "
        "[0, 1] (yours True, the reference's False)"
    )


def test_structural_problems_name_the_item_and_the_first_non_finite_value():
    weights = torch.ones(2, 2)
    weights[1, 0] = float("nan")
    problem = shape_problem((torch.ones(2), weights), (torch.ones(2), torch.ones(2, 2)), ("a", "b"))
    assert problem == (
        "item 1 (b): the result contains NaN or infinite values (the first at index [1, 0])"
    )
    assert shape_problem("3", 3) == "it should return a number, but returned str '3'"
    assert shape_problem(np.float64(3.0), 3) is None


def test_an_item_the_reference_leaves_none_must_be_none():
    logits = torch.ones(2, 3)
    assert shape_problem((logits, None), (logits, None), ("logits", "loss")) is None
    assert outputs_match((logits, None), (logits, None), 1e-6, 1e-6)
    assert shape_problem((logits, torch.tensor(1.0)), (logits, None), ("logits", "loss")) == (
        "item 1 (loss): it should return None, but returned a tensor of shape []"
    )
    assert shape_problem(None, logits) == (
        "it returned None: check that it ends with a `return` statement"
    )


def test_a_none_among_returned_tensors_points_to_a_gradient_pytorch_did_not_keep():
    """A student trial left retain_grad() out: the scores' .grad was None, and the message
    asked whether the function had forgotten to return."""
    scores = torch.ones(2, 3)
    problem = shape_problem((scores, None), (scores, scores), ("scores", "their gradients"))
    assert problem.startswith("item 1 (their gradients): it is None where a tensor belongs")
    assert "only on leaves" in problem and "`return`" not in problem


# --- the pattern of a difference, for an answer no catalogued mistake explains --------------

_E = torch.arange(1.0, 17.0).view(4, 4) ** 1.5  # no symmetry: its transpose differs


def _with(change, base=_E):
    got = base.clone()
    change(got)
    return got


PATTERNS = {
    "transpose": (_E.T, "yours equals the reference transposed"),
    "sign": (-_E, "yours is the reference with its sign flipped at every entry"),
    "scale": (0.5 * _E, "yours is 0.5 × the reference at every entry: a constant factor apart"),
    "shift": (_E + 3, "yours is the reference plus 3 at every entry: a constant shift"),
    "zero": (torch.zeros(4, 4), "yours is 0 at every entry"),
    "row": (_with(lambda t: t[2].add_(1)), "every entry of row 2 differs, and every other matches"),
    "two columns": (
        _with(lambda t: t.index_fill_(1, torch.tensor([0, 3]), 0.0)),
        "every entry of columns 0, 3 differs, and every other matches",
    ),
    "one entry": (_with(lambda t: t[1, 2].add_(1)), "only that entry differs; the other 15 match"),
    "part of a row": (_with(lambda t: t[1, :2].add_(1)), "2 of 16 entries differ, all in row 1"),
    "diagonal": (_with(lambda t: t.diagonal().add_(1)), "4 of 16 entries differ"),
    "everywhere": (_E + torch.arange(1.0, 17.0).view(4, 4), "every entry differs, and not by one"),
}


def test_the_pattern_of_a_difference_is_told_in_words():
    for case, (got, told) in PATTERNS.items():
        pattern = difference_pattern(got, _E, 1e-5, 1e-4)
        assert pattern is not None and pattern.startswith(told), (case, pattern)


def test_a_batch_of_matrices_and_other_dimensions_are_named():
    x = torch.randn(2, 3, 5, generator=torch.Generator().manual_seed(0))
    row = x.clone()
    row[:, 1] = 0
    assert difference_pattern(row, x, 1e-5, 1e-4) == (
        "every entry of row 1 of every matrix differs, and every other matches"
    )
    batch = x.clone()
    batch[1] += 1 + torch.rand(3, 5)
    assert difference_pattern(batch, x, 1e-5, 1e-4) == (
        "every entry at index 1 of dimension 0 (counting from 0) differs, and every other matches"
    )
    vector = torch.arange(1.0, 7.0)
    assert difference_pattern(vector.flip(0), vector, 1e-5, 1e-4) == (
        "every entry differs, and not by one constant factor or shift"
    )


def test_no_pattern_for_numbers_other_shapes_or_non_finite_values():
    assert difference_pattern(torch.tensor(2.0), torch.tensor(1.0), 1e-5, 1e-4) is None
    assert difference_pattern(torch.ones(2, 3), torch.ones(3, 2), 1e-5, 1e-4) is None
    assert difference_pattern(torch.tensor([1.0, float("inf")]), torch.ones(2), 1e-5, 1e-4) is None


def test_the_pattern_follows_the_largest_difference_in_the_message():
    message = difference((torch.ones(2), 2 * _E), (torch.ones(2), _E), 1e-5, 1e-4, ("a", "b"))
    assert message.startswith("item 1 (b) differs from the reference: largest difference")
    assert message.endswith("; yours is 2 × the reference at every entry: a constant factor apart")
