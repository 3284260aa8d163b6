"""Per-block gradient norms against a direct computation."""

import torch

from gptlib import GPT, GPTConfig
from gptlib.lessons.experiments.gradient_norms import loss_gradient_norms


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
