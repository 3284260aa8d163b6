"""Exercises of notebook 08 (train and sample): the next-token loss, temperature and top-k."""

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
        return f"got {out.item():z.4f}: a cross-entropy is positive"
    return None


register(
    Exercise(
        name="next-token-loss",
        notebook="08_train_and_sample",
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
        hints=(
            "The logits at position t predict the token at position t + 1: the last position "
            "has nothing to predict and the first token is never a target. Line predictions and "
            "targets up, then take the mean cross-entropy.",
            "Drop the last position of the logits and the first token of each sequence; "
            "cross-entropy wants [N, V] logits and [N] targets, so flatten batch and time into "
            "one axis of B·(T − 1).",
        ),
    )
)

# --- 2. temperature: divide the logits, then softmax -----------------------------------------


def _temperature_probs(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """logits [B, V], temperature > 0 → probabilities [B, V] = softmax(logits / temperature)."""
    return torch.softmax(logits / temperature, dim=-1)


def _rows_are_distributions(out: torch.Tensor, logits: torch.Tensor, *_: object) -> str | None:
    sums = out.sum(-1)
    if (out < 0).any() or not torch.allclose(sums, torch.ones_like(sums), atol=1e-5):
        return f"each row must be a probability distribution; rows sum to {sums.tolist()}"
    return None


def _probs_inputs(g: torch.Generator) -> list[tuple[torch.Tensor, float]]:
    # The last case is a low temperature, where logits / T reach the hundreds: the
    # distribution must come out sharp, not NaN.
    logits = 3 * torch.randn(3, 8, generator=g)
    return [(logits, 0.5), (logits, 2.0), (logits[:1], 0.8), (logits, 0.05)]


def _plain_exp(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    e = (logits / temperature).exp()
    return e / e.sum(dim=-1, keepdim=True)


register(
    Exercise(
        name="temperature-probabilities",
        notebook="08_train_and_sample",
        reference=_temperature_probs,
        make_inputs=_probs_inputs,
        properties=(Property("rows are distributions", _rows_are_distributions),),
        mistakes=(
            Mistake(
                "temperature after softmax",
                "the temperature was applied after the softmax: dividing probabilities by T "
                "only rescales them (rows no longer sum to 1) and does not change their shape. "
                "Divide the logits by T, then take the softmax.",
                lambda lo, t: torch.softmax(lo, dim=-1) / t,
            ),
            Mistake(
                "multiplied by temperature",
                "the logits were multiplied by the temperature: that sharpens the distribution "
                "for T > 1 instead of flattening it. Divide by T.",
                lambda lo, t: torch.softmax(lo * t, dim=-1),
            ),
            Mistake(
                "exp without the max shift",
                "you exponentiated logits / T directly. At a low temperature (T = 0.05 here) "
                "logits / T reaches the hundreds, exp overflows to inf and the row becomes NaN. "
                "Use torch.softmax(logits / temperature, dim=-1), which subtracts each row's "
                "max first.",
                _plain_exp,
            ),
            Mistake(
                "softmax over the batch",
                "the softmax runs over the batch axis (dim=0); each row is one position's "
                "scores over the vocabulary, so normalise over dim=-1.",
                lambda lo, t: torch.softmax(lo / t, dim=0),
            ),
        ),
        hints=(
            "The temperature rescales the logits before the softmax: dividing by more than 1 "
            "flattens the distribution, by less than 1 sharpens it.",
            "Divide every logit by the temperature, then take the softmax over the vocabulary, "
            "the last axis.",
        ),
    )
)

# --- 3. top-k: keep the k largest logits, renormalise ----------------------------------------


def _top_k_probs(logits: torch.Tensor, k: int) -> torch.Tensor:
    """logits [B, V], 1 <= k <= V → probabilities [B, V], zero outside each row's k largest."""
    kth = torch.topk(logits, k, dim=-1).values[:, -1:]
    return torch.softmax(logits.masked_fill(logits < kth, float("-inf")), dim=-1)


def _top_k_inputs(g: torch.Generator) -> list[tuple[torch.Tensor, int]]:
    # Continuous values, so no two logits tie: with a tie at the k-th largest, keeping both
    # (the reference's `logits < kth` mask) and keeping exactly k (torch.topk + scatter) are
    # both right, and no single reference could grade them.
    logits = 2 * torch.randn(4, 10, generator=g)
    return [(logits, 3), (logits, 1), (logits[:2], 10)]


def _k_nonzero(out: torch.Tensor, logits: torch.Tensor, k: int) -> str | None:
    counts = (out > 0).sum(-1)
    if (counts > k).any():
        return f"rows keep {counts.tolist()} tokens with probability > 0, at most k={k} allowed"
    return None


def _keep_k_then_softmax_masking_with_zero(logits: torch.Tensor, k: int) -> torch.Tensor:
    kth = torch.topk(logits, k, dim=-1).values[:, -1:]
    return torch.softmax(logits.masked_fill(logits < kth, 0.0), dim=-1)


def _no_renormalisation(logits: torch.Tensor, k: int) -> torch.Tensor:
    kth = torch.topk(logits, k, dim=-1).values[:, -1:]
    return torch.softmax(logits, dim=-1).masked_fill(logits < kth, 0.0)


def _smallest_k(logits: torch.Tensor, k: int) -> torch.Tensor:
    kth = torch.topk(logits, k, dim=-1, largest=False).values[:, -1:]
    return torch.softmax(logits.masked_fill(logits > kth, float("-inf")), dim=-1)


def _k_minus_one(logits: torch.Tensor, k: int) -> torch.Tensor:
    kth = torch.topk(logits, k, dim=-1).values[:, -1:]
    return torch.softmax(logits.masked_fill(logits <= kth, float("-inf")), dim=-1)


register(
    Exercise(
        name="top-k-probabilities",
        notebook="08_train_and_sample",
        reference=_top_k_probs,
        make_inputs=_top_k_inputs,
        properties=(
            Property("rows are distributions", _rows_are_distributions),
            Property("at most k tokens", _k_nonzero),
        ),
        mistakes=(
            Mistake(
                "masked with zero",
                "the dropped logits were set to 0, not −∞: a logit of 0 still gets probability "
                "e⁰ / Σ after the softmax. Fill them with float('-inf').",
                _keep_k_then_softmax_masking_with_zero,
            ),
            Mistake(
                "not renormalised",
                "you zeroed probabilities after the softmax without renormalising, so the kept "
                "ones sum to less than 1. Mask the logits with −∞ first, then take the softmax.",
                _no_renormalisation,
            ),
            Mistake(
                "smallest k",
                "you kept the k smallest logits (the least likely tokens); top-k keeps the k "
                "largest: torch.topk(logits, k) with the default largest=True.",
                _smallest_k,
            ),
            Mistake(
                "k minus one",
                "one token too few survives: masking `logits <= kth` also drops the k-th largest "
                "logit itself. Mask only the logits strictly below it (`<`).",
                _k_minus_one,
            ),
        ),
        hints=(
            "Keep the k largest logits of each row and make every other token impossible before "
            "normalising, so that the kept tokens share all the probability.",
            "Find each row's k-th largest logit; every logit below it becomes −∞ (exp gives "
            "exactly 0); then the softmax over the last axis.",
        ),
    )
)
