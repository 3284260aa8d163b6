"""Conditional entropies of a text, against values known in closed form."""

import math

import pytest
import torch

from gptlib.lessons.shared.experiments.text_entropy import context_entropy


def test_without_context_it_is_the_entropy_of_the_frequencies():
    ids = torch.tensor([0, 0, 1, 2, 0, 1, 0, 3])  # frequencies 4/8, 2/8, 1/8, 1/8
    expected = -(0.5 * math.log(0.5) + 0.25 * math.log(0.25) + 2 * 0.125 * math.log(0.125))
    assert context_entropy(ids) == pytest.approx(expected)


def test_a_cycle_is_certain_after_one_character_and_uniform_before():
    ids = torch.arange(5).repeat(40)  # 0 1 2 3 4 0 1 2 ...
    assert context_entropy(ids, 0) == pytest.approx(math.log(5))
    assert context_entropy(ids, 1) == pytest.approx(0.0, abs=1e-12)


def test_one_character_of_context_helps_as_much_as_the_text_allows():
    # after 0 comes 1 or 2 with equal frequency, after 1 and 2 always 0: H = (1/2)·ln 2
    ids = torch.tensor([0, 1, 0, 2] * 50)
    assert context_entropy(ids, 1) == pytest.approx(0.5 * math.log(2), abs=0.01)
    assert context_entropy(ids, 2) == pytest.approx(0.0, abs=1e-12)  # 1, 0 → 2 and 2, 0 → 1


def test_random_ids_are_unpredictable_and_context_never_hurts():
    ids = torch.randint(8, (20_000,), generator=torch.Generator().manual_seed(0))
    h = [context_entropy(ids, k) for k in range(3)]
    assert h[0] == pytest.approx(math.log(8), abs=0.01)
    assert h[0] >= h[1] >= h[2]


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="longer than the context"):
        context_entropy(torch.tensor([1, 2]), context=2)
    with pytest.raises(ValueError, match="1-d tensor"):
        context_entropy(torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="too long to count"):
        context_entropy(torch.arange(1000), context=9)
