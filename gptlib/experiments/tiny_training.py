"""A minimal seeded training loop for the small experiments of notebooks 03 and 04.

Full training (schedules, held-out evaluation, checkpoints) is notebook 07's subject; these
runs only need the same batches and the same initial weights every time.
"""

from __future__ import annotations

import torch

from gptlib.model import GPT, GPTConfig


def random_windows(
    data: torch.Tensor, n: int, block: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """n random windows of `data` [N]: inputs x [n, block] and targets y = x shifted by one."""
    if len(data) < block + 1:
        raise ValueError(f"data has {len(data)} tokens, need at least block + 1 = {block + 1}")
    starts = torch.randint(len(data) - block, (n,), generator=generator)
    x = torch.stack([data[s : s + block] for s in starts])
    y = torch.stack([data[s + 1 : s + block + 1] for s in starts])
    return x, y


def train_tiny(
    config: GPTConfig,
    data: torch.Tensor,
    steps: int,
    batch: int = 16,
    lr: float = 3e-3,
    seed: int = 0,
) -> tuple[GPT, list[float]]:
    """Train a GPT on windows of data [N] with AdamW; return it (in eval mode) and its losses.

    The seed fixes both the initial weights and the batches, so two configs that differ only
    in something without parameters (the causal mask) start equal and see the same data.
    """
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    torch.manual_seed(seed)
    model = GPT(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    batches = torch.Generator().manual_seed(seed)
    losses = []
    for _ in range(steps):
        x, y = random_windows(data, batch, config.max_len, batches)
        _, loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return model.eval(), losses
