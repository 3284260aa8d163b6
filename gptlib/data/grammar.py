"""The toy corpus: short English sentences whose entropy is known exactly (notebooks 03–06).

Every sentence is `the ADJ NOUN VERB the NOUN.` or, half the time, the same with
` PREP the NOUN` before the full stop, one sentence per line. Each slot is a uniform choice,
so the information content of the text is countable: no model that predicts each character
from the characters before it can have a lower expected loss than `entropy_per_char()`.
A model that scores below that floor is reading the answer from its input. A model that sees
only the last few characters has a higher floor: `context_entropies` gives it for each window
position.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import torch

from gptlib.data.tokenizer import CharTokenizer


@dataclass(frozen=True)
class Grammar:
    """Word lists for the sentence template; `p_prep` is the chance of the prepositional tail."""

    adjectives: tuple[str, ...]
    nouns: tuple[str, ...]
    verbs: tuple[str, ...]
    prepositions: tuple[str, ...]
    p_prep: float = 0.5

    def __post_init__(self) -> None:
        lists = (self.adjectives, self.nouns, self.verbs, self.prepositions)
        words = [w for group in lists for w in group]
        if not all(lists) or len(set(words)) != len(words) or "the" in words:
            raise ValueError(
                "every word list must be non-empty and all words distinct (and not 'the'), "
                "so that each sentence spells out its choices unambiguously"
            )
        if not all(w.isalpha() and w.islower() for w in words):
            raise ValueError(f"words must be lowercase letters only, got {sorted(words)}")
        if not 0.0 < self.p_prep < 1.0:
            raise ValueError(f"p_prep must be strictly between 0 and 1, got {self.p_prep}")

    def sentence(self, rng: random.Random) -> str:
        """One random sentence, ending in '.\\n'."""
        s = (
            f"the {rng.choice(self.adjectives)} {rng.choice(self.nouns)} "
            f"{rng.choice(self.verbs)} the {rng.choice(self.nouns)}"
        )
        if rng.random() < self.p_prep:
            s += f" {rng.choice(self.prepositions)} the {rng.choice(self.nouns)}"
        return s + ".\n"

    def text(self, n_sentences: int, seed: int) -> str:
        """`n_sentences` sentences drawn with a seeded generator (same seed, same text)."""
        if n_sentences < 1:
            raise ValueError(f"n_sentences must be at least 1, got {n_sentences}")
        rng = random.Random(seed)
        return "".join(self.sentence(rng) for _ in range(n_sentences))

    def words(self) -> frozenset[str]:
        """Every word a sentence can contain."""
        return frozenset(("the", *self.adjectives, *self.nouns, *self.verbs, *self.prepositions))

    def alphabet(self) -> str:
        """The sorted characters the grammar can produce: the model's vocabulary."""
        return "".join(sorted(set("".join(self.words()) + " .\n")))

    def tokenizer(self) -> CharTokenizer:
        """The character tokenizer of `alphabet()`."""
        return CharTokenizer(self.alphabet())

    def entropy_per_sentence(self) -> float:
        """Information in one sentence, in nats: the sum of the entropies of its choices."""
        p = self.p_prep
        tail = -p * math.log(p) - (1 - p) * math.log(1 - p)  # is there a tail?
        tail += p * (math.log(len(self.prepositions)) + math.log(len(self.nouns)))
        return (
            math.log(len(self.adjectives))
            + 2 * math.log(len(self.nouns))
            + math.log(len(self.verbs))
            + tail
        )

    def mean_sentence_length(self) -> float:
        """Expected characters per sentence, newline included."""

        def mean_len(words: tuple[str, ...]) -> float:
            return sum(map(len, words)) / len(words)

        fixed = len("the ") + 2 + len(" the ") + len(".\n")  # two single spaces between words
        body = mean_len(self.adjectives) + 2 * mean_len(self.nouns) + mean_len(self.verbs)
        tail = self.p_prep * (1 + mean_len(self.prepositions) + len(" the ") + mean_len(self.nouns))
        return fixed + body + tail

    def entropy_per_char(self) -> float:
        """The entropy rate of the text in nats per character: the floor under an honest loss.

        Sentences are independent and the characters spell out the choices one-to-one, so the
        information per character is the information per sentence over the mean sentence length.
        """
        return self.entropy_per_sentence() / self.mean_sentence_length()

    def context_entropies(self, T: int) -> list[float]:
        """The floor at each position of a window of T characters cut at a random place in the
        text: entry t is the entropy (nats) of the character after position t given the t + 1
        characters the window holds up to t, [T]. It falls from the entropy of one character's
        successor (t = 0) to `entropy_per_char()` once the window spans a whole sentence.

        Computed exactly: the text is a Markov chain whose states each write one character
        (`_character_chain`); what the visible characters say about the chain's state is a
        distribution over states, and each distinct one is followed, weighted by its chance.
        """
        if not isinstance(T, int) or T < 1:
            raise ValueError(f"T must be a positive int, got {T!r}")
        chars, moves, visits = self._character_chain()
        alphabet = sorted(set(chars))
        writes = torch.tensor([[x == c for c in alphabet] for x in chars], dtype=torch.float64)
        beliefs, chances = _beliefs(visits[None, :, None] * writes[None], (visits @ writes)[None])
        floors = []
        for _ in range(T):
            after = beliefs @ moves  # [N, S]: where the chain goes next
            p = after @ writes  # [N, A]: the next character
            floors.append(float(-(chances * torch.special.xlogy(p, p)).sum()))
            beliefs, chances = _beliefs(after[:, :, None] * writes[None], chances * p)
        return floors

    def _character_chain(self) -> tuple[list[str], torch.Tensor, torch.Tensor]:
        """The text as a Markov chain: (the character each state writes [S], transition
        probabilities [S, S], each state's share of the text's characters [S])."""
        chars: list[str] = []
        edges: list[tuple[int, int, float]] = []
        share: list[float] = []  # visits per sentence, before normalising

        def segments(parts: list[tuple[str, ...]], visit: float) -> tuple[list[int], list[int]]:
            """States for words chosen in turn from `parts`; (first states, last states)."""
            starts: list[int] = []
            ends: list[int] = []
            for alternatives in parts:
                firsts, lasts = [], []
                for word in alternatives:
                    ids = list(range(len(chars), len(chars) + len(word)))
                    chars.extend(word)
                    share.extend([visit / len(alternatives)] * len(word))
                    edges.extend((a, b, 1.0) for a, b in zip(ids, ids[1:], strict=False))
                    firsts.append(ids[0])
                    lasts.append(ids[-1])
                link(ends, firsts, 1.0)
                starts = starts or firsts
                ends = lasts
            return starts, ends

        def link(ends: list[int], firsts: list[int], p: float) -> None:
            edges.extend((a, b, p / len(firsts)) for a in ends for b in firsts)

        main = [("the ",), self.adjectives, (" ",), self.nouns, (" ",), self.verbs, (" the ",)]
        main_first, main_last = segments([*main, self.nouns], 1.0)
        tail = [(" ",), self.prepositions, (" the ",), self.nouns]
        tail_first, tail_last = segments(tail, self.p_prep)
        end_first, end_last = segments([(".\n",)], 1.0)
        link(main_last, tail_first, self.p_prep)
        link(main_last, end_first, 1 - self.p_prep)
        link(tail_last, end_first, 1.0)
        link(end_last, main_first, 1.0)
        moves = torch.zeros(len(chars), len(chars), dtype=torch.float64)
        for a, b, p in edges:
            moves[a, b] += p
        visits = torch.tensor(share, dtype=torch.float64)
        return chars, moves, visits / visits.sum()


def _beliefs(weights: torch.Tensor, chances: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Distinct beliefs over the chain's states and their chances, [M, S] and [M, 1], from
    weights [N, S, A] (belief n after seeing character a, unnormalised) and chances [N, A];
    pairs of chance 0 are dropped, equal beliefs merged."""
    S = weights.shape[1]
    keep = chances.flatten() > 0
    rows = weights.permute(0, 2, 1).reshape(-1, S)[keep]
    rows = rows / rows.sum(-1, keepdim=True)
    distinct, which = torch.unique(rows.mul(1e12).round(), dim=0, return_inverse=True)
    merged = torch.zeros(len(distinct), 1, dtype=torch.float64)
    merged.index_add_(0, which, chances.flatten()[keep][:, None])
    return distinct / 1e12, merged


TOY_GRAMMAR = Grammar(
    adjectives=("big", "small", "red", "old", "quiet", "happy", "dark", "bright"),
    nouns=("cat", "dog", "bird", "fox", "horse", "mouse", "king", "child", "river", "tree"),
    verbs=("sees", "likes", "follows", "finds", "chases", "meets", "watches", "hears"),
    prepositions=("near", "under", "behind", "beside", "over"),
)


def word_hit_rate(text: str, words: frozenset[str]) -> float:
    """Fraction of the whitespace-separated words of `text` (full stops removed) in `words`."""
    tokens = text.replace(".", " ").split()
    if not tokens:
        return 0.0
    return sum(t in words for t in tokens) / len(tokens)
