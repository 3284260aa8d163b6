"""Exercises of notebook 03 (the causal mask): the masked softmax, which outputs a changed token
reaches, the entropy floor of the toy grammar, and the held-out losses of a trained model."""

from __future__ import annotations

import math
from dataclasses import replace

import torch
import torch.nn.functional as F

from gptlib.data.grammar import TOY_GRAMMAR, Grammar
from gptlib.lessons.engine.checks.core import Exercise, Mistake, Property, register
from gptlib.lessons.engine.checks.delegation import Route
from gptlib.lessons.nb03.experiments import with_causal
from gptlib.lessons.shared.references import held_out_losses
from gptlib.model import GPT, GPTConfig, causal_mask

# --- Exercise 1: causal attention weights ------------------------------------------------------


def _scores_inputs(generator: torch.Generator) -> list[tuple]:
    # The last case is the lesson's edge: the future scores tower 150 above the allowed ones.
    # Masking before the softmax ignores them; zeroing and renormalising after the softmax
    # finds the allowed weights already underflowed to 0 and divides 0 by 0.
    towering_future = 150.0 * torch.ones(5, 5).triu(diagonal=1)
    return [
        (2.0 * torch.randn(5, 5, generator=generator),),
        (2.0 * torch.randn(2, 3, 4, 4, generator=generator),),
        (torch.randn(5, 5, generator=generator) + towering_future,),
    ]


def _masked_softmax(scores: torch.Tensor, fill: float, allowed: torch.Tensor) -> torch.Tensor:
    return torch.softmax(scores.masked_fill(~allowed, fill), dim=-1)


def _reference_weights(scores: torch.Tensor) -> torch.Tensor:
    return _masked_softmax(scores, float("-inf"), causal_mask(scores.shape[-1]))


def _ones(scores: torch.Tensor) -> torch.Tensor:
    T = scores.shape[-1]
    return torch.ones(T, T, dtype=torch.bool)


def _after_softmax(scores: torch.Tensor) -> torch.Tensor:
    allowed = causal_mask(scores.shape[-1])
    return torch.softmax(scores, dim=-1).masked_fill(~allowed, 0.0)


def _renormalised_after_softmax(scores: torch.Tensor) -> torch.Tensor:
    kept = _after_softmax(scores)
    return kept / kept.sum(dim=-1, keepdim=True)


def _wrong_axis(scores: torch.Tensor) -> torch.Tensor:
    allowed = causal_mask(scores.shape[-1])
    return torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-2)


def rows_sum_to_one(out: torch.Tensor, scores: torch.Tensor) -> str | None:
    sums = out.sum(dim=-1)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-5):
        return (
            f"rows should sum to 1, but some sum to {sums.flatten()[sums.flatten().argmin()]:z.3f}"
        )
    return None


def future_is_zero(out: torch.Tensor, scores: torch.Tensor) -> str | None:
    if (out.triu(diagonal=1) != 0).any():
        return "weights above the diagonal (keys after the query) must be exactly 0"
    return None


register(
    Exercise(
        name="causal-attention-weights",
        notebook="03_the_causal_mask",
        reference=_reference_weights,
        forbidden=(
            Route(
                "gptlib.model:causal_mask",
                "`gptlib.causal_mask`",
                "the exercise asks you to build the mask yourself.",
            ),
        ),
        make_inputs=_scores_inputs,
        properties=(
            Property("rows sum to 1", rows_sum_to_one),
            Property("no weight on the future", future_is_zero),
        ),
        mistakes=(
            Mistake(
                "mask-after-softmax",
                "You zeroed the future weights after the softmax, so the rows no longer sum to "
                "1: the weight the later keys held is thrown away instead of being shared among "
                "the allowed keys. Block the future before the softmax, so that it never gives "
                "those keys any weight.",
                _after_softmax,
                fix="fill the blocked scores with float('-inf') first "
                "(scores.masked_fill(~allowed, float('-inf'))), then take the softmax.",
            ),
            Mistake(
                "renormalised-after-softmax",
                "You zeroed the future weights after the softmax and renormalised the rows. "
                "That is right on paper but breaks when a future score is much larger than the "
                "allowed ones (150 larger here): the allowed weights underflow to 0 inside the "
                "softmax, and renormalising divides 0 by 0. Block the future before the "
                "softmax, so that it only ever sees the allowed keys.",
                _renormalised_after_softmax,
                fix="torch.softmax(scores.masked_fill(~allowed, float('-inf')), dim=-1), with no "
                "division afterwards.",
            ),
            Mistake(
                "filled-with-zero",
                "You filled the blocked scores with 0, but the softmax exponentiates: a score "
                "of 0 becomes a weight of e^0 = 1 before normalising, so the future keys still "
                "get weight. The fill must be a score whose exponential is exactly 0.",
                lambda s: _masked_softmax(s, 0.0, causal_mask(s.shape[-1])),
                fix="fill with float('-inf'), not 0.",
            ),
            Mistake(
                "triu-instead-of-tril",
                "Your mask keeps the upper triangle, so each query attends to the keys after "
                "it and never to earlier ones. Row i is the query and column j the key; the "
                "allowed keys are j <= i, the lower triangle with its diagonal.",
                lambda s: _masked_softmax(s, float("-inf"), _ones(s).triu()),
                fix="allowed = torch.ones(T, T, dtype=torch.bool).tril()",
            ),
            Mistake(
                "diagonal-excluded",
                "Your mask also blocks the diagonal, so no token attends to itself (j < i "
                "instead of j <= i). Row 0 then has no key left, and a softmax over nothing but "
                "minus infinity is 0/0: NaN.",
                lambda s: _masked_softmax(s, float("-inf"), _ones(s).tril(diagonal=-1)),
                fix="keep the diagonal: tril() with its default diagonal=0.",
            ),
            Mistake(
                "inverted-mask",
                "You filled minus infinity where attention is allowed, not where it is blocked: "
                "each query now sees only the keys after it, and the last query sees none (NaN). "
                "A boolean mask fill acts where its mask is True, so it must be given the "
                "blocked positions: the opposite of the allowed ones.",
                lambda s: _masked_softmax(s, float("-inf"), _ones(s).triu(diagonal=1)),
                fix="masked_fill(~allowed, float('-inf')) where allowed is the lower triangle "
                "(or masked_fill(blocked, ...) with blocked = the strict upper triangle).",
            ),
            Mistake(
                "softmax-wrong-axis",
                "The softmax runs down the columns (over the queries). Each query's row of "
                "weights over the keys must sum to 1, so normalise along the keys, the last "
                "axis.",
                _wrong_axis,
                fix="torch.softmax(..., dim=-1)",
            ),
            Mistake(
                "no-mask",
                "There is no mask: every query still sees the keys after it. Block every score "
                "above the diagonal before the softmax.",
                lambda s: torch.softmax(s, dim=-1),
                fix="scores.masked_fill(~allowed, float('-inf')) with allowed = the lower "
                "triangle of a [T, T] boolean matrix of ones.",
            ),
        ),
        hints=(
            "Row i is the query at position i and column j the key at position j; a query may "
            "read its own position and every earlier one. A later key must end with weight "
            "exactly 0 while each row still sums to 1: block it before the softmax, not after.",
            "Build a [T, T] boolean matrix that is True on and below the diagonal; every score "
            "where it is False becomes −∞; then the softmax over the keys, the last axis.",
        ),
    )
)

# --- Exercise 2: which outputs a changed token moves -------------------------------------------


def _changes_inputs(generator: torch.Generator) -> list[tuple]:
    # The notebook's model and sequence (V = 27, T = 25, one sequence) with and without the mask,
    # and a batch of two sequences, each changed to a different token.
    with torch.random.fork_rng(devices=[]):  # building models leaves the notebook's draws alone
        torch.manual_seed(5)
        small = GPT(GPTConfig(vocab_size=9, d_model=16, n_heads=2, n_layers=2, max_len=8)).eval()
        lesson = GPT(GPTConfig(27, d_model=32, n_heads=4, n_layers=2, max_len=32)).eval()
        small_unmasked, lesson_unmasked = with_causal(small, False), with_causal(lesson, False)
    idx2 = torch.randint(0, 9, (2, 6), generator=generator)
    other2 = (idx2 + torch.randint(1, 9, (2, 6), generator=generator)) % 9
    idx = torch.randint(0, 27, (1, 25), generator=generator)
    return [
        (small, idx2, other2),
        (small_unmasked, idx2, other2),
        (lesson, idx, (idx + 1) % 27),
        (lesson_unmasked, idx, (idx + 1) % 27),
    ]


@torch.no_grad()
def output_changes(model: GPT, idx: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    """idx [B, T], other [B, T] → change [T, T]: change[p, t] is the largest |Δ logit| at
    position t, over the batch and the vocabulary, when token p of every sequence becomes
    other[:, p] and every other token stays."""
    logits, _ = model(idx)  # [B, T, V]
    T = idx.shape[1]
    change = torch.zeros(T, T)
    for p in range(T):
        changed = idx.clone()
        changed[:, p] = other[:, p]
        changed_logits, _ = model(changed)
        change[p] = (changed_logits - logits).abs().amax(dim=(0, 2))
    return change


@torch.no_grad()
def _changes(model: GPT, idx: torch.Tensor, other: torch.Tensor, edit, reduce) -> torch.Tensor:
    """The change matrix with the editing of the sequence and the reduction of the logits'
    difference [B, T, V] to [T] (or to whatever shape a mistake makes) given as functions."""
    logits, _ = model(idx)
    rows = [reduce(model(edit(idx, other, p))[0] - logits) for p in range(idx.shape[1])]
    return torch.stack(rows)


def _replace_copy(idx: torch.Tensor, other: torch.Tensor, p: int) -> torch.Tensor:
    changed = idx.clone()
    changed[:, p] = other[:, p]
    return changed


def _replace_in_place(idx: torch.Tensor, other: torch.Tensor, p: int) -> torch.Tensor:
    idx[:, p] = other[:, p]  # the sequence passed in: every earlier change stays
    return idx


def _replace_first_sequence(idx: torch.Tensor, other: torch.Tensor, p: int) -> torch.Tensor:
    changed = idx.clone()
    changed[0, p] = other[0, p]
    return changed


def _largest(diff: torch.Tensor) -> torch.Tensor:
    return diff.abs().amax(dim=(0, 2))


def no_negative_sizes(out: torch.Tensor, model, idx, other) -> str | None:
    if (out < 0).any():
        return "a change is a size: no entry can be negative"
    return None


register(
    Exercise(
        name="output-changes",
        notebook="03_the_causal_mask",
        reference=output_changes,
        make_inputs=_changes_inputs,
        properties=(Property("sizes", no_negative_sizes),),
        mistakes=(
            Mistake(
                "signed-change",
                "Your entries are the largest increase of a logit, not the largest change: a "
                "logit that fell counts as no change, and an entry can even come out negative. "
                "A change in either direction is a change: measure its size before taking the "
                "largest.",
                lambda m, i, o: _changes(m, i, o, _replace_copy, lambda d: d.amax(dim=(0, 2))),
                fix="(changed_logits - logits).abs().amax(dim=(0, 2))",
            ),
            Mistake(
                "edits-accumulate",
                "Your row p measures the change of tokens 0..p together, not of token p alone: "
                "each replacement was written into the sequence you were given, so the earlier "
                "ones were still there (and the caller's sequence is changed too). Edit a fresh "
                "copy for every p.",
                lambda m, i, o: _changes(m, i, o, _replace_in_place, _largest),
                fix="changed = idx.clone(); changed[:, p] = other[:, p]",
            ),
            Mistake(
                "first-sequence-only",
                "You replaced token p in the first sequence of the batch only. Every sequence "
                "changes at p (each to its own token from other), and the change is the largest "
                "over all of them.",
                lambda m, i, o: _changes(m, i, o, _replace_first_sequence, _largest),
                fix="changed[:, p] = other[:, p]",
            ),
            Mistake(
                "averaged-over-vocabulary",
                "You averaged the change over the vocabulary. The measurement asks for the "
                "largest change among a position's logits (over the vocabulary and the batch), "
                "so that a position counts as moved when any of its logits moved.",
                lambda m, i, o: _changes(
                    m, i, o, _replace_copy, lambda d: d.abs().mean(dim=2).amax(dim=0)
                ),
                fix="(changed_logits - logits).abs().amax(dim=(0, 2))",
            ),
            Mistake(
                "rows-and-columns-swapped",
                "Your matrix is transposed: row p must be the token that changed and column t "
                "the position whose logits moved, so that a row reads 'changing token p moved "
                "these positions'.",
                lambda m, i, o: _changes(m, i, o, _replace_copy, _largest).T,
                fix="change[p] = ... (a row per changed token), not change[:, p] = ...",
            ),
            Mistake(
                "reduced-over-positions",
                "You took the largest change over the batch and the positions, which leaves one "
                "value per vocabulary entry. Keep the positions: reduce over the batch (axis 0) "
                "and the vocabulary (the last axis).",
                lambda m, i, o: _changes(
                    m, i, o, _replace_copy, lambda d: d.abs().amax(dim=(0, 1))
                ),
                fix="(changed_logits - logits).abs().amax(dim=(0, 2))",
            ),
            Mistake(
                "every-token-replaced",
                "Every row is the same: each run replaced the whole sequence by other instead "
                "of token p alone. Keep idx and replace only position p.",
                lambda m, i, o: _changes(m, i, o, lambda i_, o_, p: o_.clone(), _largest),
                fix="changed = idx.clone(); changed[:, p] = other[:, p]",
            ),
        ),
        hints=(
            "Run the model once on the sequences as they are. Then, for each position p, run it "
            "on a copy in which only token p of every sequence is replaced, and compare the two "
            "runs' logits position by position.",
            "Row p holds, for each position t, the largest absolute difference between the two "
            "runs' logits at t: the largest over the sequences of the batch (axis 0) and over "
            "the vocabulary (the last axis). Edit a copy of the ids, never the ids you were given.",
        ),
    )
)

# --- Exercise 3: the entropy floor of the toy grammar ------------------------------------------


def _drawn_grammar(g: torch.Generator) -> Grammar:
    """A grammar whose word lists and tail probability are drawn from `g`: grading's hidden
    inputs then hold a grammar the student never saw."""

    def some(words: tuple[str, ...]) -> tuple[str, ...]:
        keep = torch.randperm(len(words), generator=g)[
            : int(torch.randint(1, 4, (1,), generator=g))
        ]
        return tuple(words[i] for i in sorted(keep.tolist()))

    return Grammar(
        adjectives=some(("old", "grey", "small", "warm", "quiet")),
        nouns=some(("fox", "owl", "bear", "crow", "deer")),
        verbs=some(("chases", "hears", "finds", "meets")),
        prepositions=some(("near", "under", "past")),
        p_prep=round(0.1 + 0.8 * float(torch.rand(1, generator=g)), 3),
    )


def _grammar_inputs(generator: torch.Generator) -> list[tuple]:
    # The lesson's grammar, and two others whose lists, word lengths and tail probability differ,
    # so that no number of TOY_GRAMMAR's can stand in for the computation.
    return [
        (TOY_GRAMMAR,),
        (
            Grammar(
                adjectives=("tall", "wet", "blue"),
                nouns=("ox", "hen", "goat", "lamb"),
                verbs=("eats", "sees"),
                prepositions=("on", "at", "into"),
                p_prep=0.3,
            ),
        ),
        (
            Grammar(
                adjectives=("a",),
                nouns=("cat", "dog", "mouse", "lion", "horse", "bee"),
                verbs=("likes", "bites", "follows"),
                prepositions=("by",),
                p_prep=0.8,
            ),
        ),
        (_drawn_grammar(generator),),
    ]


def entropy_floor(grammar: Grammar) -> float:
    """The entropy of `grammar`'s text in nats per character: one sentence's expected information
    divided by its expected length in characters."""

    def mean_length(words: tuple[str, ...]) -> float:
        return sum(len(w) for w in words) / len(words)

    p = grammar.p_prep
    coin = -p * math.log(p) - (1 - p) * math.log(1 - p)  # is there a tail?
    nats = (
        math.log(len(grammar.adjectives))
        + 2 * math.log(len(grammar.nouns))
        + math.log(len(grammar.verbs))
        + coin
        + p * (math.log(len(grammar.prepositions)) + math.log(len(grammar.nouns)))
    )
    # "the " + adjective + " " + noun + " " + verb + " the " + noun + ".\n": 13 fixed characters
    chars = (
        13
        + mean_length(grammar.adjectives)
        + 2 * mean_length(grammar.nouns)
        + mean_length(grammar.verbs)
        + p
        * (len(" ") + mean_length(grammar.prepositions) + len(" the ") + mean_length(grammar.nouns))
    )
    return nats / chars


def _parts(grammar: Grammar) -> dict[str, float]:
    """The pieces the mistakes recombine: information and length, with and without the tail."""

    def mean_length(words: tuple[str, ...]) -> float:
        return sum(len(w) for w in words) / len(words)

    n = math.log
    return {
        "body": n(len(grammar.adjectives)) + 2 * n(len(grammar.nouns)) + n(len(grammar.verbs)),
        "tail": n(len(grammar.prepositions)) + n(len(grammar.nouns)),
        "body_chars": 13
        + mean_length(grammar.adjectives)
        + 2 * mean_length(grammar.nouns)
        + mean_length(grammar.verbs),
        "tail_chars": 6 + mean_length(grammar.prepositions) + mean_length(grammar.nouns),
        "body_letters": mean_length(grammar.adjectives)
        + 2 * mean_length(grammar.nouns)
        + mean_length(grammar.verbs),
        "tail_letters": mean_length(grammar.prepositions) + mean_length(grammar.nouns),
        "coin": -grammar.p_prep * n(grammar.p_prep) - (1 - grammar.p_prep) * n(1 - grammar.p_prep),
    }


def _floor_without_coin(grammar: Grammar) -> float:
    q, p = _parts(grammar), grammar.p_prep
    return (q["body"] + p * q["tail"]) / (q["body_chars"] + p * q["tail_chars"])


def _floor_tail_always(grammar: Grammar) -> float:
    q, p = _parts(grammar), grammar.p_prep
    return (q["body"] + q["coin"] + q["tail"]) / (q["body_chars"] + p * q["tail_chars"])


def _floor_letters_only(grammar: Grammar) -> float:
    q, p = _parts(grammar), grammar.p_prep
    nats = q["body"] + q["coin"] + p * q["tail"]
    return nats / (q["body_letters"] + p * q["tail_letters"])


def _floor_without_newline(grammar: Grammar) -> float:
    q, p = _parts(grammar), grammar.p_prep
    nats = q["body"] + q["coin"] + p * q["tail"]
    return nats / (q["body_chars"] - 1 + p * q["tail_chars"])


def _floor_mean_of_ratios(grammar: Grammar) -> float:
    q, p = _parts(grammar), grammar.p_prep
    with_tail = (q["body"] - math.log(p) + q["tail"]) / (q["body_chars"] + q["tail_chars"])
    without = (q["body"] - math.log(1 - p)) / q["body_chars"]
    return p * with_tail + (1 - p) * without


def below_the_uniform_guess(out: float, grammar: Grammar) -> str | None:
    uniform = math.log(len(grammar.alphabet()))
    if not 0 < float(out) < uniform:
        return (
            f"the floor must lie between 0 and ln {len(grammar.alphabet())} = {uniform:z.3f}, the "
            f"loss of a uniform guess over the alphabet; got {float(out):z.4f}"
        )
    return None


register(
    Exercise(
        name="entropy-floor",
        notebook="03_the_causal_mask",
        reference=entropy_floor,
        forbidden=(
            Route(
                "gptlib.data.grammar:Grammar.entropy_per_char",
                "the grammar's `entropy_per_char`",
                (
                    "the grammar's own method computes the floor (or a part of it) that this "
                    "exercise asks you to work out from its rules."
                ),
            ),
            Route(
                "gptlib.data.grammar:Grammar.entropy_per_sentence",
                "the grammar's `entropy_per_sentence`",
                (
                    "the grammar's own method computes the floor (or a part of it) that this "
                    "exercise asks you to work out from its rules."
                ),
            ),
            Route(
                "gptlib.data.grammar:Grammar.mean_sentence_length",
                "the grammar's `mean_sentence_length`",
                (
                    "the grammar's own method computes the floor (or a part of it) that this "
                    "exercise asks you to work out from its rules."
                ),
            ),
            Route(
                "gptlib.data.grammar:Grammar.context_entropies",
                "the grammar's `context_entropies`",
                (
                    "the grammar's own method computes the floor (or a part of it) that this "
                    "exercise asks you to work out from its rules."
                ),
            ),
        ),
        make_inputs=_grammar_inputs,
        properties=(Property("below a uniform guess", below_the_uniform_guess),),
        mistakes=(
            Mistake(
                "uniform-over-characters",
                "That is the loss of a uniform guess over the alphabet, a ceiling that any model "
                "can reach knowing nothing. The floor is what the text really contains: most "
                "characters (the letters after a word's first ones, 'the', the spaces) are fully "
                "determined by what came before and carry no information at all.",
                lambda g: math.log(len(g.alphabet())),
                fix="add up the information of each choice a sentence makes (ln of the number "
                "of words for each slot, the coin for the tail), then divide by the expected "
                "number of characters of a sentence.",
            ),
            Mistake(
                "bits-not-nats",
                "Your floor is in bits (base-2 logarithms); the losses it is compared with are "
                "natural logarithms, nats. One nat is 1/ln 2 ≈ 1.44 bits.",
                lambda g: entropy_floor(g) / math.log(2),
                fix="use math.log (natural), not math.log2.",
            ),
            Mistake(
                "coin-forgotten",
                "You left out one choice: whether the sentence has a tail at all. That is a coin "
                "with probability p_prep, and its outcome is information too (ln 2 nats for a "
                "fair coin), on top of the words the tail holds.",
                _floor_without_coin,
                fix="coin = -p * math.log(p) - (1 - p) * math.log(1 - p) with p = grammar.p_prep",
            ),
            Mistake(
                "tail-always-counted",
                "You counted the tail's two words in every sentence, but only a share p_prep of "
                "the sentences has a tail: its information counts with weight p_prep.",
                _floor_tail_always,
                fix="p * (math.log(len(grammar.prepositions)) + math.log(len(grammar.nouns)))",
            ),
            Mistake(
                "letters-only",
                "Your sentence length counts only the letters of the chosen words. The model "
                "predicts every character: the two 'the's, the spaces, the full stop and the "
                "newline too. They carry no information, but each takes a prediction, which "
                "spreads the sentence's information thinner.",
                _floor_letters_only,
                fix="13 fixed characters ('the ', two spaces, ' the ', '.\\n') plus the mean word "
                "lengths, and p_prep times (' ' + preposition + ' the ' + noun).",
            ),
            Mistake(
                "newline-forgotten",
                "Your length is one character short on every sentence: each ends with a full "
                "stop and a newline, and the model predicts the newline as well.",
                _floor_without_newline,
                fix="the fixed characters are 'the ', two single spaces, ' the ' and '.\\n': 13.",
            ),
            Mistake(
                "mean-of-ratios",
                "You averaged the information per character of each kind of sentence. A long "
                "sentence holds more characters, so it weighs more in the text than in your "
                "average: the rate of the whole text is the expected information of a sentence "
                "divided by its expected length, a ratio of two averages.",
                _floor_mean_of_ratios,
                fix="(expected nats per sentence) / (expected characters per sentence), each "
                "averaged over both kinds of sentence first.",
            ),
        ),
        hints=(
            "Information adds over independent choices: a uniform choice among n words carries "
            "ln n nats. Count every choice one sentence makes on average, and divide by the "
            "number of characters a sentence takes on average.",
            "The tail is a coin (its own entropy) and, with probability p_prep, two more words. "
            "The length counts the two 'the's, the spaces, the full stop and the newline as "
            "well as the mean length of each word list.",
        ),
    )
)

# --- Exercise 4: the held-out losses of a trained model ----------------------------------------


class SameDropoutEachCall(GPT):
    """A GPT with dropout that draws the same masks on every call: a measurement taken in
    training mode then differs from one in evaluation mode the same way every time, so the check
    can name that mistake. The global random state is left as it was."""

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            return super().forward(idx, targets)


def _held_out_inputs(generator: torch.Generator) -> list[tuple]:
    # Small models without and with the mask, one with dropout left in training mode, and the
    # lesson's shapes: 32 windows of 32 characters of a 27-character alphabet, d = 64.
    with torch.random.fork_rng(devices=[]):  # building models leaves the notebook's draws alone
        torch.manual_seed(7)
        small = GPTConfig(vocab_size=7, d_model=16, n_heads=2, n_layers=2, max_len=8)
        masked = GPT(small).eval()
        dropout = SameDropoutEachCall(replace(small, dropout=0.2))  # in training mode
        lesson = GPT(GPTConfig(27, d_model=64, n_heads=4, n_layers=2, max_len=32)).eval()
        unmasked, lesson_unmasked = with_causal(masked, False), with_causal(lesson, False)

    def windows(V: int, B: int, T: int) -> tuple[torch.Tensor, torch.Tensor]:
        ids = torch.randint(0, V, (B, T + 1), generator=generator)
        return ids[:, :-1], ids[:, 1:]

    return [
        (unmasked, *windows(7, 3, 6)),
        (dropout, *windows(7, 2, 5)),
        (masked, *windows(7, 3, 6)),
        (lesson_unmasked, *windows(27, 32, 32)),
        (lesson, *windows(27, 32, 32)),
    ]


def _per_position(scores: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(scores.transpose(1, 2), y, reduction="none")  # [B, T]


def _prefix_last_rows(model: GPT, x: torch.Tensor, extra: int = 0) -> torch.Tensor:
    T = x.shape[1]
    return torch.stack([model(x[:, : t + 1 + extra])[0][:, -1] for t in range(T)], dim=1)


def _losses_with_gradients(model: GPT, x: torch.Tensor, y: torch.Tensor):
    model.eval()
    logits, _ = model(x)
    alone = _prefix_last_rows(model, x)
    return _per_position(logits, y).mean(dim=0), _per_position(alone, y).mean(dim=0)


@torch.no_grad()
def _losses_in_training_mode(model: GPT, x: torch.Tensor, y: torch.Tensor):
    model.train()
    logits, _ = model(x)
    alone = _prefix_last_rows(model, x)
    return _per_position(logits, y).mean(dim=0), _per_position(alone, y).mean(dim=0)


@torch.no_grad()
def _losses(model: GPT, x: torch.Tensor, y: torch.Tensor, alone_rows, loss, reduce):
    """The held-out losses with how the prefix-only logits, the loss of each prediction and
    the reduction over the windows are computed given as functions (the mistakes vary them)."""
    model.eval()
    logits, _ = model(x)
    return reduce(loss(logits, y)), reduce(loss(alone_rows(model, x, logits), y))


def _prefix(model: GPT, x: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    return _prefix_last_rows(model, x)


def _mean(losses: torch.Tensor) -> torch.Tensor:
    return losses.mean(dim=0)


def no_gradients(out: tuple, model, x, y) -> str | None:
    if any(isinstance(o, torch.Tensor) and o.requires_grad for o in out):
        return "the losses still carry an autograd graph (requires_grad=True)"
    return None


register(
    Exercise(
        name="held-out-losses",
        notebook="03_the_causal_mask",
        reference=held_out_losses,
        make_inputs=_held_out_inputs,
        returns=("visible", "alone"),
        properties=(Property("measured without gradients", no_gradients),),
        mistakes=(
            Mistake(
                "gradients-on",
                "Your losses are right but were computed with gradients on: autograd recorded "
                "every pass (a graph as large as a training step's, for 1 + T forward passes) "
                "that nothing will ever use. A measurement needs no gradients: switch them off "
                "for all of its passes.",
                _losses_with_gradients,
                fix="put the passes under `with torch.no_grad():` (or decorate the function "
                "with @torch.no_grad()).",
            ),
            Mistake(
                "training-mode",
                "You measured the model in training mode: with dropout on, every pass drops a "
                "random share of its activations, so the losses are noisy and higher than the "
                "model's. A measurement switches the model to evaluation mode first, whatever "
                "mode it was given in.",
                _losses_in_training_mode,
                fix="model.eval() at the start (it also leaves the model in evaluation mode).",
            ),
            Mistake(
                "alone-from-the-whole-window",
                "Your prefix-only losses equal the whole-window ones: they come from the pass "
                "over the whole window. For a masked model the two agree, which is the point of "
                "the mask; for a model without it they must not. Each prediction t must come "
                "from its own pass over the window's first t + 1 characters.",
                lambda m, x, y: _losses(m, x, y, lambda m_, x_, lg: lg, _per_position, _mean),
                fix="alone = torch.stack([model(x[:, : t + 1])[0][:, -1] for t in range(T)], "
                "dim=1)",
            ),
            Mistake(
                "prefix-one-too-long",
                "Your prefix for prediction t holds one character too many: the last row of a "
                "pass over the first t + 2 characters predicts the character after x[t + 1], "
                "not the target of position t. The prefix of position t ends with x[t] itself.",
                lambda m, x, y: _losses(
                    m,
                    x,
                    y,
                    lambda m_, x_, lg: _prefix_last_rows(m_, x_, extra=1),
                    _per_position,
                    _mean,
                ),
                fix="model(x[:, : t + 1]) for t in range(T)",
            ),
            Mistake(
                "prefix-one-too-short",
                "Your first prefix is empty: the prefix of position t is the window's first "
                "t + 1 characters, x[t] included (position 0 reads one character).",
                lambda m, x, y: _losses(
                    m,
                    x,
                    y,
                    lambda m_, x_, lg: _prefix_last_rows(m_, x_, extra=-1),
                    _per_position,
                    _mean,
                ),
                fix="model(x[:, : t + 1]) for t in range(T)",
            ),
            Mistake(
                "averaged-over-positions",
                "You averaged over the positions of each window, which leaves one loss per "
                "window. The measurement keeps the positions apart (one loss per position t) "
                "and averages over the windows, axis 0.",
                lambda m, x, y: _losses(
                    m, x, y, _prefix, _per_position, lambda loss: loss.mean(dim=1)
                ),
                fix="F.cross_entropy(..., reduction='none') gives [B, T]; then .mean(dim=0).",
            ),
            Mistake(
                "summed-over-windows",
                "You added the losses of the windows instead of averaging them, so each entry is "
                "B times too large. The loss at position t is the mean over the windows.",
                lambda m, x, y: _losses(
                    m, x, y, _prefix, _per_position, lambda loss: loss.sum(dim=0)
                ),
                fix=".mean(dim=0), not .sum(dim=0)",
            ),
            Mistake(
                "one-number",
                "You returned one loss averaged over every position at once, which hides the "
                "one place where the two settings differ most. Keep a loss per position: no "
                "reduction inside the cross-entropy, then the mean over the windows only.",
                lambda m, x, y: _losses(
                    m,
                    x,
                    y,
                    _prefix,
                    lambda s, t: F.cross_entropy(s.flatten(0, 1), t.flatten()),
                    lambda loss: loss,
                ),
                fix="F.cross_entropy(logits.transpose(1, 2), y, reduction='none').mean(dim=0)",
            ),
            Mistake(
                "targets-shifted-again",
                "You shifted the targets a second time. The targets come already shifted: the "
                "target of position t is the character that follows position t of the input, "
                "so compare the prediction at position t with the target at the same position t.",
                lambda m, x, y: _losses(
                    m,
                    x,
                    y,
                    _prefix,
                    lambda s, t: _per_position(s[:, :-1], t[:, 1:]),
                    _mean,
                ),
                fix="y[:, t] is already the character after x[:, t]: compare logits[:, t] with "
                "y[:, t] for every t (no slicing of y).",
            ),
            Mistake(
                "logits-as-log-probabilities",
                "You took minus the logit of the target as its loss. Logits are scores, not log "
                "probabilities: the loss is minus the log of the softmax's probability, which "
                "also depends on every other logit of that position.",
                lambda m, x, y: _losses(
                    m,
                    x,
                    y,
                    _prefix,
                    lambda s, t: -s.gather(-1, t[..., None]).squeeze(-1),
                    _mean,
                ),
                fix="-torch.log_softmax(logits, dim=-1).gather(-1, y[..., None]), or "
                "F.cross_entropy with reduction='none'.",
            ),
            Mistake(
                "classes-axis",
                "The cross-entropy read the wrong axis as the classes: given logits [B, T, V] "
                "it takes axis 1 (the positions) for the classes and complains about the "
                "targets' shape. The classes (the vocabulary) are the last axis here.",
                lambda m, x, y: _losses(
                    m,
                    x,
                    y,
                    _prefix,
                    lambda s, t: F.cross_entropy(s, t, reduction="none"),
                    _mean,
                ),
                fix="F.cross_entropy(logits.transpose(1, 2), y, reduction='none'), or flatten "
                "logits to [B·T, V] and y to [B·T] first.",
            ),
        ),
        hints=(
            "Two settings of the same model on the same windows: one pass over each whole "
            "window, as in training; and, for each position t, a pass over the window's first "
            "t + 1 characters only, whose last row is what generation would predict at t. A "
            "measurement runs in evaluation mode, without gradients.",
            "From each setting you get logits [B, T, V]; the loss of each prediction against its "
            "target y[:, t] (no reduction) is [B, T]; average over the windows (axis 0) to get "
            "one loss per position.",
        ),
    )
)
