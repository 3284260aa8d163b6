"""Per-layer gradient norms of a GPT: how much gradient reaches each block (notebooks 05, 06)."""

from __future__ import annotations

import torch

from gptlib.model import GPT


def block_gradient_norms(model: GPT) -> torch.Tensor:
    """Norm of the gradient of all of each block's parameters, [L] (block 1 first).

    Reads the `.grad` fields left by a backward pass; a block without gradients counts as 0.
    """
    norms = []
    for block in model.blocks:
        squares = [p.grad.double().pow(2).sum() for p in block.parameters() if p.grad is not None]
        norms.append(
            torch.stack(squares).sum().sqrt() if squares else torch.zeros((), dtype=torch.float64)
        )
    return torch.stack(norms)


def loss_gradient_norms(model: GPT, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """One forward and backward pass on inputs/targets [B, T]; per-block gradient norms [L].

    Clears the model's gradients first, so the result belongs to this batch alone.
    """
    model.zero_grad(set_to_none=True)
    _, loss = model(inputs, targets)
    loss.backward()
    return block_gradient_norms(model)
