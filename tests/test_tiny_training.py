"""The minimal seeded trainer used by notebooks 03 and 04."""

import pytest
import torch

from gptlib import GPTConfig
from gptlib.experiments.tiny_training import random_windows, train_tiny


def test_random_windows_are_shifted_slices():
    data = torch.arange(100)
    x, y = random_windows(data, 5, 8, torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (5, 8)
    assert torch.equal(y, x + 1)  # data[i] = i, so the next token is one more
    assert int(y.max()) < 100
    with pytest.raises(ValueError, match="block \\+ 1 = 9"):
        random_windows(torch.arange(8), 1, 8, torch.Generator())


def test_train_tiny_is_repeatable_and_learns():
    data = torch.tensor([0, 1, 2, 3] * 50)  # a cycle: perfectly predictable
    config = GPTConfig(vocab_size=4, d_model=16, n_heads=2, n_layers=1, max_len=8)
    model, losses = train_tiny(config, data, steps=60, batch=8, lr=1e-2, seed=1)
    _, again = train_tiny(config, data, steps=60, batch=8, lr=1e-2, seed=1)
    assert losses == again
    assert len(losses) == 60 and not model.training
    assert losses[-1] < 0.2 * losses[0]
    with pytest.raises(ValueError, match="steps"):
        train_tiny(config, data, steps=0)


def test_same_seed_same_initial_weights_whatever_the_mask():
    data = torch.arange(40) % 5
    masked = GPTConfig(vocab_size=5, d_model=8, n_heads=2, n_layers=1, max_len=8)
    unmasked = GPTConfig(vocab_size=5, d_model=8, n_heads=2, n_layers=1, max_len=8, causal=False)
    a, _ = train_tiny(masked, data, steps=1, lr=0.0)  # lr 0: the weights stay at their init
    b, _ = train_tiny(unmasked, data, steps=1, lr=0.0)
    for (name, p), (_, q) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert torch.equal(p, q), name
