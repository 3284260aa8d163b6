"""Next-token logits → a token: temperature, top-k, greedy (notebooks 07, 08); unchecked here,
`GPT.generate` checks temperature and top_k where they enter."""

from __future__ import annotations

import torch


def next_token_probs(
    logits: torch.Tensor, *, temperature: float = 1.0, top_k: int | None = None
) -> torch.Tensor:
    """Logits [B, V] → probabilities [B, V] after temperature and top-k (notebook 08).

    Dividing logits by the temperature before the softmax sharpens (< 1) or flattens (> 1) the
    distribution; top-k keeps the k most likely tokens (k > V keeps all). temperature=0 means
    greedy: all the mass on the arg-max.
    """
    if temperature == 0:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).to(logits.dtype)
    # The largest logit becomes 0 before the division, so a tiny temperature sends the others
    # to -inf (weight 0) instead of overflowing the largest to inf (and the softmax to NaN).
    logits = (logits - logits.amax(dim=-1, keepdim=True)) / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    return torch.softmax(logits, dim=-1)


def sample_next(
    logits: torch.Tensor,
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Logits [B, V] → next token ids [B, 1], sampled (or arg-max when temperature == 0)."""
    if temperature == 0:
        return logits.argmax(-1, keepdim=True)
    probs = next_token_probs(logits, temperature=temperature, top_k=top_k)
    return torch.multinomial(probs, 1, generator=generator)
