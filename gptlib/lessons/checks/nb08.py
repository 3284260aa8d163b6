"""Exercises of notebook 08 (train and sample): each character's surprisal, the number of
characters a temperature leaves to choose from, and nucleus (top-p) sampling. Notebook 07 had
the student write the loss, temperature and top-k; these ask for what it did not."""

from __future__ import annotations

import math

import torch

from gptlib.lessons.checks.core import Exercise, Mistake, Property, register

# --- 1. surprisal: how many nats each next character cost the model ---------------------------


def _surprisal(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """logits [B, T, V] for tokens [B, T] → [B, T − 1]: −ln p(tokens[:, t + 1]) under the
    prediction at position t, in nats."""
    log_probs = logits[:, :-1].log_softmax(dim=-1)
    return -log_probs.gather(-1, tokens[:, 1:, None]).squeeze(-1)


def _surprisal_inputs(g: torch.Generator) -> list[tuple[torch.Tensor, torch.Tensor]]:
    cases = []
    for B, T, V in ((2, 6, 5), (3, 9, 11)):
        logits = 2 * torch.randn(B, T, V, generator=g)
        tokens = torch.randint(V, (B, T), generator=g)
        cases.append((logits, tokens))
    return cases


def _one_cost_per_prediction(out: object, logits: torch.Tensor, tokens: torch.Tensor) -> str | None:
    B, T = tokens.shape
    if not isinstance(out, torch.Tensor) or out.shape != (B, T - 1):
        shape = list(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        return (
            f"expected one number per scored position, [B, T − 1] = {[B, T - 1]}, got {shape}: "
            "the last position has no next character to be scored against"
        )
    if (out < 0).any():
        return "a surprisal is never negative: −ln p ≥ 0 for any probability p ≤ 1"
    return None


def _not_shifted(logits, tokens):
    return -logits.log_softmax(-1).gather(-1, tokens[..., None]).squeeze(-1)[:, :-1]


def _shifted_the_wrong_way(logits, tokens):
    return -logits[:, 1:].log_softmax(-1).gather(-1, tokens[:, :-1, None]).squeeze(-1)


def _in_bits(logits, tokens):
    return _surprisal(logits, tokens) / math.log(2)


def _probability(logits, tokens):
    return torch.exp(-_surprisal(logits, tokens))


def _log_probability(logits, tokens):
    return -_surprisal(logits, tokens)


def _raw_logit(logits, tokens):
    return -logits[:, :-1].gather(-1, tokens[:, 1:, None]).squeeze(-1)


register(
    Exercise(
        name="surprisal",
        notebook="08_train_and_sample",
        reference=_surprisal,
        make_inputs=_surprisal_inputs,
        properties=(Property("one cost per prediction", _one_cost_per_prediction),),
        mistakes=(
            Mistake(
                "not-shifted",
                "each position was scored against its own character, which the model reads. "
                "The prediction made at position t is for the character at t + 1: the scores of "
                "the first T − 1 positions meet the characters from the second on.",
                _not_shifted,
            ),
            Mistake(
                "shifted-the-wrong-way",
                "the shift goes the wrong way: you scored each position's prediction against "
                "the character before it. The prediction at t is for the character at t + 1.",
                _shifted_the_wrong_way,
            ),
            Mistake(
                "bits-not-nats",
                "your numbers are in bits (log base 2). The loss the trainer reports, and this "
                "exercise, use the natural logarithm: nats.",
                _in_bits,
            ),
            Mistake(
                "probability-not-surprisal",
                "you returned the probability p of each next character. Surprisal is −ln p: 0 "
                "when the model was certain and right, large when it was confidently wrong.",
                _probability,
            ),
            Mistake(
                "log-probability-sign",
                "you returned ln p, which is negative: surprisal is its negation, −ln p.",
                _log_probability,
            ),
            Mistake(
                "logit-not-log-probability",
                "you used the raw logit of the next character. A logit is a score, not a log-"
                "probability: normalise over the vocabulary first (log-softmax), then take the "
                "next character's entry.",
                _raw_logit,
            ),
        ),
        hints=(
            "Surprisal is the loss of one prediction: minus the log of the probability the "
            "model gave to the character that really came next. The cross-entropy is its mean.",
            "Turn each position's logits into log-probabilities over the vocabulary, pair the "
            "predictions of positions 0 … T − 2 with the characters at 1 … T − 1, pick each "
            "one's entry, and negate it; keep one number per position, no mean.",
        ),
    )
)

# --- 2. how many characters a temperature leaves to choose from --------------------------------


def _choices(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """logits [B, V] → [B]: e^H of the distribution softmax(logits / T), H its entropy in
    nats; 1 for a certain choice, V for a uniform one."""
    log_probs = (logits / temperature).log_softmax(dim=-1)
    entropy = -(log_probs.exp() * log_probs).sum(dim=-1)
    return entropy.exp()


def _choices_inputs(g: torch.Generator) -> list[tuple[torch.Tensor, float]]:
    """Logits of several spreads at low, plain and high temperatures; the low one overflows
    an exp of unshifted logits."""
    return [
        (3 * torch.randn(4, 9, generator=g), 1.0),
        (3 * torch.randn(3, 12, generator=g), 0.5),
        (torch.randn(2, 7, generator=g), 2.5),
        (40 * torch.randn(2, 10, generator=g), 0.05),
    ]


def _between_one_and_v(out: object, logits: torch.Tensor, temperature: float) -> str | None:
    if not isinstance(out, torch.Tensor) or out.shape != logits.shape[:1]:
        shape = list(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        return f"expected one number per row, [B] = {list(logits.shape[:1])}, got {shape}"
    V = logits.shape[-1]
    if (out < 1 - 1e-4).any() or (out > V + 1e-3).any():
        return f"the count of choices lies between 1 (a certain choice) and V = {V} (uniform)"
    return None


def _unshifted_exp(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    e = torch.exp(logits / temperature)
    probs = e / e.sum(dim=-1, keepdim=True)
    return torch.exp(-(probs * probs.log()).sum(dim=-1))


register(
    Exercise(
        name="effective-choices",
        notebook="08_train_and_sample",
        reference=_choices,
        make_inputs=_choices_inputs,
        properties=(Property("between 1 and V", _between_one_and_v),),
        mistakes=(
            Mistake(
                "temperature-ignored",
                "your count does not change with the temperature: divide the logits by it "
                "before the softmax, as sampling does.",
                lambda lo, t: _choices(lo, 1.0),
            ),
            Mistake(
                "temperature-multiplied",
                "you multiplied the logits by the temperature; sampling divides them by it, so "
                "a low temperature leaves fewer choices, not more.",
                lambda lo, t: _choices(lo, 1 / t),
            ),
            Mistake(
                "entropy-not-exponentiated",
                "that is the entropy H itself, in nats. The number of equally likely choices "
                "with the same uncertainty is e^H: a uniform choice among n has H = ln n.",
                lambda lo, t: _choices(lo, t).log(),
            ),
            Mistake(
                "entropy-sign",
                "the entropy's sign is flipped: H = −Σ p ln p is positive, so your e^(Σ p ln p) "
                "is one over the number of choices.",
                lambda lo, t: 1 / _choices(lo, t),
            ),
            Mistake(
                "mixed-bases",
                "you took the entropy in nats and raised 2 to it. Use one base throughout: "
                "e^H with H in nats, or 2^H with H in bits, which is the same number.",
                lambda lo, t: 2 ** _choices(lo, t).log(),
            ),
            Mistake(
                "exp-overflows",
                "right at ordinary temperatures, but at a low one the divided logits are large "
                "and their exponentials overflow to inf (inf / inf is NaN). Subtract each row's "
                "largest logit first, which changes no probability; log_softmax does it for you.",
                _unshifted_exp,
            ),
        ),
        atol=1e-4,
        rtol=1e-4,
        hints=(
            "A distribution's entropy measures its uncertainty; a uniform choice among n "
            "options has entropy ln n, so inverting that turns any entropy into a number of "
            "equally likely options. Sampling's distribution is the softmax of the logits over "
            "the temperature.",
            "Take log-probabilities of the logits divided by the temperature (log_softmax stays "
            "finite where exp overflows), form H = −Σ p · ln p over the vocabulary, and return "
            "e^H for each row.",
        ),
    )
)

# --- 3. nucleus (top-p) sampling -----------------------------------------------------------------


def _top_p_probs(logits: torch.Tensor, p: float) -> torch.Tensor:
    """logits [B, V] → probabilities [B, V] that keep, in each row, the fewest most likely
    tokens whose probabilities sum to at least p, renormalised; every other token gets 0."""
    probs = logits.softmax(dim=-1)
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs  # of the more likely tokens
    keep = torch.zeros_like(probs, dtype=torch.bool).scatter(-1, order, mass_before < p)
    return logits.masked_fill(~keep, float("-inf")).softmax(dim=-1)


def _top_p_inputs(g: torch.Generator) -> list[tuple[torch.Tensor, float]]:
    """Rows peaked and flat, with p from small (a single token often suffices) to 0.95."""
    return [
        (2 * torch.randn(4, 10, generator=g), 0.9),
        (torch.randn(3, 8, generator=g), 0.5),
        (5 * torch.randn(3, 12, generator=g), 0.3),
        (0.5 * torch.randn(2, 16, generator=g), 0.95),
    ]


def _a_kept_distribution(out: object, logits: torch.Tensor, p: float) -> str | None:
    if not isinstance(out, torch.Tensor) or out.shape != logits.shape:
        shape = list(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        return f"expected probabilities of the logits' shape {list(logits.shape)}, got {shape}"
    if (out.gt(0).sum(dim=-1) == 0).any():
        return "a row keeps no token at all: the most likely token always stays in the nucleus"
    return None


def _kept_wrongly(logits: torch.Tensor, p: float, order: str, crossing: bool) -> torch.Tensor:
    """A top-p mask made one of the catalogue's ways: `order` "ascending" starts from the least
    likely token; `crossing=False` drops the token that carries the running total past p."""
    probs = logits.softmax(-1)
    sorted_probs, index = probs.sort(-1, descending=order == "descending")
    total = sorted_probs.cumsum(-1)
    kept = (total - sorted_probs < p) if crossing else (total <= p)
    kept[:, 0] = True  # never an empty row
    return torch.zeros_like(kept).scatter(-1, index, kept)


def _below_p_only(logits, p):
    keep = _kept_wrongly(logits, p, "descending", crossing=False)
    return logits.masked_fill(~keep, float("-inf")).softmax(-1)


def _not_renormalised(logits, p):
    return logits.softmax(-1) * (_top_p_probs(logits, p) > 0)


def _unsorted_running_total(logits, p):
    probs = logits.softmax(-1)
    keep = probs.cumsum(-1) - probs < p  # in vocabulary order
    return logits.masked_fill(~keep, float("-inf")).softmax(-1)


def _least_likely(logits, p):
    keep = _kept_wrongly(logits, p, "ascending", crossing=True)
    return logits.masked_fill(~keep, float("-inf")).softmax(-1)


register(
    Exercise(
        name="top-p-probabilities",
        notebook="08_train_and_sample",
        reference=_top_p_probs,
        make_inputs=_top_p_inputs,
        properties=(Property("a distribution over kept tokens", _a_kept_distribution),),
        mistakes=(
            Mistake(
                "crossing-token-dropped",
                "you kept only the tokens whose running total stays within p, so the nucleus "
                "falls short of p: keep the token that carries the sum to p or past it too. A "
                "token stays when the tokens more likely than it hold less than p.",
                _below_p_only,
            ),
            Mistake(
                "not-renormalised",
                "the kept probabilities do not sum to 1: after zeroing the others, share the "
                "whole mass among the kept tokens again (a softmax over the kept logits does).",
                _not_renormalised,
            ),
            Mistake(
                "running-total-unsorted",
                "your running total follows the vocabulary's order, not the probabilities'. The "
                "nucleus is the most likely tokens: sort each row from the most likely down "
                "before summing, then put the decision back in vocabulary order.",
                _unsorted_running_total,
            ),
            Mistake(
                "least-likely-kept",
                "you kept the least likely tokens: the nucleus starts from the most likely one "
                "and adds tokens in order of falling probability.",
                _least_likely,
            ),
        ),
        atol=1e-6,
        rtol=1e-5,
        hints=(
            "Top-p keeps a number of tokens that depends on the row: the most likely ones, "
            "just enough of them for their probabilities to add up to p; the rest get nothing "
            "and the kept ones share the whole mass.",
            "Sort each row's probabilities from high to low and keep a token when the tokens "
            "before it in that order hold less than p in total; map the decision back to the "
            "vocabulary's order, set the other logits to −∞ and take the softmax.",
        ),
    )
)
