"""Sinusoidal positions against hand-computed numbers (notebook 01)."""

import math

import torch

from gptlib import sinusoidal_positions


def test_sinusoidal_positions_by_hand():
    P = sinusoidal_positions(4, 4)
    # column pair 1 turns at rate 1/10000^(2/4) = 0.01
    torch.testing.assert_close(
        P[3], torch.tensor([math.sin(3), math.cos(3), math.sin(0.03), math.cos(0.03)])
    )


def test_an_odd_width_ends_on_a_sine():
    P = sinusoidal_positions(3, 5)
    assert P.shape == (3, 5)
    rates = [10000 ** (-2 * i / 5) for i in range(3)]  # pair i turns at 1/10000^(2i/5)
    expected = [math.sin(2 * rates[0]), math.cos(2 * rates[0])]
    expected += [math.sin(2 * rates[1]), math.cos(2 * rates[1]), math.sin(2 * rates[2])]
    torch.testing.assert_close(P[2], torch.tensor(expected))
