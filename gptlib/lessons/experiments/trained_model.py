"""What training made of a GPT, read from its weights (the shipped model in notebook 05).

`layer_readout`: what the residual stream already predicts after the embeddings and after each
block, read through the model's own final LayerNorm and unembedding (the "logit lens",
nostalgebraist 2020).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gptlib.hooks import capture_inputs, capture_outputs, evaluating
from gptlib.lessons.text import number
from gptlib.model import GPT


@dataclass(frozen=True)
class LayerReadout:
    """Next-character loss and accuracy of the stream after each stage, read out as the model
    reads its last one: stages[0] = the embeddings, stages[i] = after block i."""

    stages: list[str]
    losses: list[float]
    accuracies: list[float]

    def lines(self) -> list[str]:
        return [
            f"{stage:>10}: loss {number(loss, 3)}, next character right {number(acc, 3)}"
            for stage, loss, acc in zip(self.stages, self.losses, self.accuracies, strict=True)
        ]


@torch.no_grad()
def layer_readout(model: GPT, idx: torch.Tensor, targets: torch.Tensor) -> LayerReadout:
    """idx, targets [B, T] → the loss and accuracy of ln_f(x_ℓ) @ unembedding for every stage ℓ.

    The last stage is the model's own prediction, so its loss equals `model(idx, targets)[1]`.
    """
    with (
        evaluating(model),
        capture_inputs(model.blocks[:1]) as embedding,
        capture_outputs(model.blocks) as after_blocks,
    ):
        model(idx)
    losses, accuracies = [], []
    for stream in embedding + after_blocks:  # each [B, T, d]
        logits = model.lm_head(model.ln_f(stream))  # [B, T, V]
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
        losses.append(loss.item())
        accuracies.append((logits.argmax(-1) == targets).float().mean().item())
    stages = ["embeddings"] + [f"block {i + 1}" for i in range(len(model.blocks))]
    return LayerReadout(stages, losses, accuracies)
