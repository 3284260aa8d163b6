"""Sinusoidal and learned positions against hand-computed numbers (notebook 01)."""

import math

import pytest
import torch

from gptlib import PositionalEmbedding, sinusoidal_positions


def test_sinusoidal_positions_by_hand():
    P = sinusoidal_positions(4, 4)
    # column pair 1 turns at rate 1/10000^(2/4) = 0.01
    torch.testing.assert_close(
        P[3], torch.tensor([math.sin(3), math.cos(3), math.sin(0.03), math.cos(0.03)])
    )
    with pytest.raises(ValueError, match="even d"):
        sinusoidal_positions(4, 5)


def test_positional_embedding_kinds_and_range_error():
    for kind in ("learned", "sinusoidal", "none"):
        assert PositionalEmbedding(kind, 8, 4)(2, 3, torch.device("cpu")).shape == (3, 4)
    assert not PositionalEmbedding("none", 8, 4)(0, 8, torch.device("cpu")).any()
    with pytest.raises(ValueError, match="exceed max_len=8"):
        PositionalEmbedding("learned", 8, 4)(6, 3, torch.device("cpu"))
    with pytest.raises(ValueError, match="positions must be one of"):
        PositionalEmbedding("rope", 8, 4)
