"""Surprisals grouped by place in a word, on hand-made windows."""

import math

import pytest
import torch

from gptlib.data import CharTokenizer
from gptlib.lessons.nb08.experiments.surprisal import costs_by_place


def test_each_character_is_counted_in_its_place():
    tokenizer = CharTokenizer.from_text("ab c,\n")
    windows = tokenizer.encode("ab c,\nab")[None]  # predicted: "b c,\nab"
    costs = torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]])
    groups = costs_by_place(costs, windows, tokenizer)
    assert groups["inside a word"] == (4.0, 2)  # "b" after "a" (1.0) and "b" after "a" (7.0)
    assert groups["starting a word"] == (4.5, 2)  # "c" after " " (3.0), "a" after "\n" (6.0)
    assert groups["anything else"] == (pytest.approx((2.0 + 4.0 + 5.0) / 3), 3)


def test_an_empty_group_has_no_mean_and_mismatched_shapes_are_refused():
    tokenizer = CharTokenizer.from_text("ab")
    groups = costs_by_place(torch.ones(1, 2), tokenizer.encode("aba")[None], tokenizer)
    assert math.isnan(groups["starting a word"][0]) and groups["starting a word"][1] == 0
    with pytest.raises(ValueError, match=r"costs \[1, 3\] must hold one surprisal .* \[1, 2\]"):
        costs_by_place(torch.ones(1, 3), tokenizer.encode("aba")[None], tokenizer)
