"""The references behind the exercises of notebooks 01 and 02 agree with independent ones."""

import torch
import torch.nn.functional as F

from gptlib.lessons.checks import REGISTRY


def test_embed_reference_is_one_hot_product_plus_positions():
    exercise = REGISTRY["embed"]
    for idx, E, P in exercise.inputs():
        one_hot = F.one_hot(idx, num_classes=E.shape[0]).float()
        expected = one_hot @ E + P[: idx.shape[1]]
        torch.testing.assert_close(exercise.reference(idx, E, P), expected)


def test_sinusoidal_reference_by_the_formula():
    T, d, base = 9, 6, 100.0
    table = REGISTRY["sinusoidal-positions"].reference(T, d, base)
    for pos in range(T):
        for i in range(d // 2):
            angle = torch.tensor(pos / base ** (2 * i / d))
            assert abs(table[pos, 2 * i] - torch.sin(angle)) < 1e-5
            assert abs(table[pos, 2 * i + 1] - torch.cos(angle)) < 1e-5
