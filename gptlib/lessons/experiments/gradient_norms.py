"""Per-block gradient norms of a GPT after one backward pass: notebook 05 measures its deep
stacks with it, and it is the reference of notebook 06's exercise `block_gradient_norms`."""

from __future__ import annotations

import torch

from gptlib.model import GPT


def loss_gradient_norms(model: GPT, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """One forward and one backward pass of `model` (a GPT of L blocks) on inputs and targets
    [B, T]; the norm of the gradient of all of each block's parameters, [L] in float64, block 1
    first. Gradients the model held before do not count."""
    model.zero_grad(set_to_none=True)
    _, loss = model(inputs, targets)
    loss.backward()
    return torch.stack(
        [
            torch.stack([p.grad.double().pow(2).sum() for p in block.parameters()]).sum().sqrt()
            for block in model.blocks
        ]
    )
