"""Exercises of notebook 07 (the full GPT): the next-token loss."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from gptlib.lessons.checks.core import Exercise, Mistake, Property, register

# --- 1. the loss of one training step: logits at t predict the token at t + 1 ---------------


def _next_token_loss(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """logits [B, T, V] for tokens [B, T] → mean cross-entropy of predicting tokens[:, t+1]."""
    V = logits.shape[-1]
    return F.cross_entropy(logits[:, :-1].reshape(-1, V), tokens[:, 1:].reshape(-1))


def _loss_inputs(g: torch.Generator) -> list[tuple[torch.Tensor, torch.Tensor]]:
    cases = []
    for B, T, V in ((2, 6, 5), (3, 9, 11)):
        logits = 2 * torch.randn(B, T, V, generator=g)
        tokens = torch.randint(V, (B, T), generator=g)
        cases.append((logits, tokens))
    return cases


def _scalar_loss(out: torch.Tensor, logits: torch.Tensor, tokens: torch.Tensor) -> str | None:
    if out.dim() != 0:
        return f"the loss should be one number (a 0-d tensor), got shape {list(out.shape)}"
    if out.item() <= 0:
        return f"got {out.item():.4f}: a cross-entropy is positive"
    return None


register(
    Exercise(
        name="next-token-loss",
        notebook="07_the_full_gpt",
        reference=_next_token_loss,
        make_inputs=_loss_inputs,
        properties=(Property("a positive scalar", _scalar_loss),),
        mistakes=(
            Mistake(
                "targets not shifted",
                "the targets are not shifted: logits at position t are scored against token t "
                "itself, which the model already sees, so it learns to copy. Compare "
                "logits[:, :-1] with tokens[:, 1:].",
                lambda lo, tk: F.cross_entropy(lo.reshape(-1, lo.shape[-1]), tk.reshape(-1)),
            ),
            Mistake(
                "shifted the wrong way",
                "the shift goes the wrong way: logits[:, 1:] against tokens[:, :-1] asks each "
                "position to predict the token before it. Use logits[:, :-1] and tokens[:, 1:].",
                lambda lo, tk: F.cross_entropy(
                    lo[:, 1:].reshape(-1, lo.shape[-1]), tk[:, :-1].reshape(-1)
                ),
            ),
            Mistake(
                "softmax before cross_entropy",
                "F.cross_entropy takes raw logits and applies log-softmax itself; a softmax "
                "before it squashes the scores twice. Pass the logits directly.",
                lambda lo, tk: F.cross_entropy(
                    lo[:, :-1].softmax(-1).reshape(-1, lo.shape[-1]), tk[:, 1:].reshape(-1)
                ),
            ),
            Mistake(
                "summed",
                "the loss is summed over positions, not averaged, so it grows with B and T and "
                "the learning rate would have to change with them. Take the mean (the default "
                "reduction).",
                lambda lo, tk: F.cross_entropy(
                    lo[:, :-1].reshape(-1, lo.shape[-1]), tk[:, 1:].reshape(-1), reduction="sum"
                ),
            ),
        ),
        hint="flatten logits[:, :-1] to [B·(T−1), V] and tokens[:, 1:] to [B·(T−1)].",
    )
)
