"""The exercise references another lesson runs: the sinusoidal table against hand-computed
numbers (notebook 01), the per-block gradient norms against a direct computation (06)."""

import math

import torch

from gptlib import GPT, GPTConfig
from gptlib.lessons.shared.references import loss_gradient_norms, sinusoidal_positions


def _model_and_batch():
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=11, d_model=16, n_heads=2, n_layers=3, max_len=8))
    g = torch.Generator().manual_seed(0)
    return (
        model,
        torch.randint(0, 11, (2, 8), generator=g),
        torch.randint(0, 11, (2, 8), generator=g),
    )


def test_matches_the_norm_of_all_block_gradients_concatenated():
    model, inputs, targets = _model_and_batch()
    norms = loss_gradient_norms(model, inputs, targets)
    expected = torch.stack(
        [torch.cat([p.grad.flatten() for p in block.parameters()]).norm() for block in model.blocks]
    )
    torch.testing.assert_close(norms.float(), expected)


def test_loss_gradient_norms_start_from_clean_gradients():
    model, inputs, targets = _model_and_batch()
    first = loss_gradient_norms(model, inputs, targets)
    second = loss_gradient_norms(model, inputs, targets)  # would double if grads accumulated
    torch.testing.assert_close(first, second)
    assert first.shape == (3,) and first.dtype == torch.float64 and (first > 0).all()


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
