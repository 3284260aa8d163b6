"""Comparing answers with the reference: what counts as the same, and how a difference is told."""

import numpy as np
import torch

from gptlib.lessons.engine.checks.compare import difference, outputs_match, shape_problem


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
        "[0, 2] (yours 0.5, the reference's 0.25)"
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
    assert shape_problem(None, logits) == "it returned None: did you forget the `return` statement?"
