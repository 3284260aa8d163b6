"""Exercise references that another lesson runs, so that they stay in the library (a graded
release, which leaves out every lesson's `checks.py`, keeps them):

- `sinusoidal_positions`, notebook 01's exercise: the lesson variants' fixed position table
  (`Variant(positions="sinusoidal")`, which notebooks 08 and 09 build);
- `held_out_losses`, notebook 03's: the mask ablation's measurement, which 04's reshape bug
  reuses;
- `loss_gradient_norms`, notebook 06's `block_gradient_norms`: notebook 05 measures its deep
  stacks with it.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from gptlib.model import GPT


def sinusoidal_positions(T: int, d: int, base: float = 10000.0) -> torch.Tensor:
    """The original Transformer's fixed position vectors, [T, d]. Column pair (2i, 2i+1) holds
    sin and cos of pos / base^(2i/d); an odd d ends on a sine. (The GPT learns its positions:
    `pos_emb`, an `nn.Embedding(max_len, d)`.)"""
    inv_freq = torch.exp(-math.log(base) * torch.arange(0, d, 2, dtype=torch.float32) / d)
    angles = torch.arange(T, dtype=torch.float32)[:, None] * inv_freq  # [T, ⌈d/2⌉]
    out = torch.empty(T, d)
    out[:, 0::2] = torch.sin(angles)
    out[:, 1::2] = torch.cos(angles[:, : d // 2])
    return out


@torch.no_grad()
def held_out_losses(
    model: GPT, x: torch.Tensor, y: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean cross-entropy at each position of held-out windows x [B, T] with targets y [B, T]:
    (visible [T], alone [T]). visible[t]: position t reads the whole window, as in training;
    alone[t]: its prediction comes from a pass over x[:, :t+1] alone, as in generation."""
    model.eval()
    T = x.shape[1]
    logits, _ = model(x)  # [B, T, V]
    alone = torch.stack([model(x[:, : t + 1])[0][:, -1] for t in range(T)], dim=1)  # [B, T, V]

    def per_position(scores: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(scores.transpose(1, 2), y, reduction="none").mean(dim=0)

    return per_position(logits), per_position(alone)


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
