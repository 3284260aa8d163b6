"""The toy grammar: its entropy and mean length against a brute-force enumeration."""

import itertools
import math
import random

import pytest

from gptlib.data.grammar import TOY_GRAMMAR, Grammar, word_hit_rate

SMALL = Grammar(
    adjectives=("big", "red"),
    nouns=("cat", "ox", "eel"),
    verbs=("sees",),
    prepositions=("by", "on"),
)


def _all_sentences(g: Grammar):
    """Every sentence with its probability, by enumerating the choices."""
    for adj, n1, verb, n2 in itertools.product(g.adjectives, g.nouns, g.verbs, g.nouns):
        base = f"the {adj} {n1} {verb} the {n2}"
        p = 1 / (len(g.adjectives) * len(g.nouns) ** 2 * len(g.verbs))
        yield base + ".\n", p * (1 - g.p_prep)
        for prep, n3 in itertools.product(g.prepositions, g.nouns):
            tail_p = g.p_prep / (len(g.prepositions) * len(g.nouns))
            yield f"{base} {prep} the {n3}.\n", p * tail_p


@pytest.mark.parametrize("g", [SMALL, TOY_GRAMMAR], ids=["small", "toy"])
def test_entropy_and_length_match_enumeration(g):
    sentences = dict(_all_sentences(g))
    assert len(sentences) == sum(1 for _ in _all_sentences(g))  # distinct: choices are readable
    assert math.isclose(sum(sentences.values()), 1.0)
    entropy = -sum(p * math.log(p) for p in sentences.values())
    length = sum(p * len(s) for s, p in sentences.items())
    assert math.isclose(g.entropy_per_sentence(), entropy, rel_tol=1e-9)
    assert math.isclose(g.mean_sentence_length(), length, rel_tol=1e-9)
    assert math.isclose(g.entropy_per_char(), entropy / length, rel_tol=1e-9)


def test_toy_floor_value():
    assert round(TOY_GRAMMAR.entropy_per_char(), 3) == 0.296


def test_sampled_sentences_follow_the_grammar_and_the_seed():
    text = TOY_GRAMMAR.text(200, seed=3)
    assert text == TOY_GRAMMAR.text(200, seed=3) != TOY_GRAMMAR.text(200, seed=4)
    lines = text.splitlines(keepends=True)
    assert len(lines) == 200
    allowed = set(dict(_all_sentences(TOY_GRAMMAR)))
    assert all(line in allowed for line in lines)
    long = TOY_GRAMMAR.text(5000, seed=0)
    assert abs(len(long) / 5000 - TOY_GRAMMAR.mean_sentence_length()) < 0.3


def test_the_tokenizer_covers_every_character_the_grammar_writes():
    text = TOY_GRAMMAR.text(300, seed=0)
    tokenizer = TOY_GRAMMAR.tokenizer()
    assert tokenizer.chars == TOY_GRAMMAR.alphabet() == "".join(sorted(set(text)))
    assert tokenizer.decode(tokenizer.encode(text)) == text
    with pytest.raises(ValueError, match="'Z'"):
        tokenizer.encode("the Zebra")


def test_bad_grammars_are_refused():
    with pytest.raises(ValueError, match="distinct"):
        Grammar(("big",), ("cat", "cat"), ("sees",), ("by",))
    with pytest.raises(ValueError, match="lowercase"):
        Grammar(("Big",), ("cat",), ("sees",), ("by",))
    with pytest.raises(ValueError, match="p_prep"):
        Grammar(("big",), ("cat",), ("sees",), ("by",), p_prep=1.0)
    with pytest.raises(ValueError, match="n_sentences"):
        SMALL.text(0, seed=0)


def test_sentence_uses_the_given_generator():
    assert SMALL.sentence(random.Random(1)) == SMALL.sentence(random.Random(1))


def test_word_hit_rate():
    words = TOY_GRAMMAR.words()
    assert word_hit_rate("the big cat sees the dog.", words) == 1.0
    assert word_hit_rate("the bg cat xx.", words) == 0.5
    assert word_hit_rate("  ", words) == 0.0


def _window_distribution(g: Grammar, n: int) -> dict[str, float]:
    """The chance of each n-character window cut at a random place of an endless text of
    independent sentences: start in sentence s1 at any of its characters (weighted by s1's
    chance over the mean sentence length), the window running on into sentences s2, s3..."""
    sentences = dict(_all_sentences(g))
    windows: dict[str, float] = {}
    shortest = min(map(len, sentences))
    assert n <= shortest  # a window spans at most two sentences
    for s1, p1 in sentences.items():
        for start in range(len(s1)):
            head = s1[start:]
            if len(head) >= n:
                windows[head[:n]] = windows.get(head[:n], 0) + p1
                continue
            for s2, p2 in sentences.items():
                w = (head + s2)[:n]
                windows[w] = windows.get(w, 0) + p1 * p2
    total = g.mean_sentence_length()
    return {w: p / total for w, p in windows.items()}


def _block_entropy(g: Grammar, n: int) -> float:
    return -sum(p * math.log(p) for p in _window_distribution(g, n).values())


def test_context_entropies_are_the_differences_of_window_entropies():
    # H(next | the t + 1 characters before it) = H(windows of t + 2) - H(windows of t + 1)
    T = 6
    floors = SMALL.context_entropies(T)
    blocks = [_block_entropy(SMALL, n) for n in range(1, T + 2)]
    for t in range(T):
        assert math.isclose(floors[t], blocks[t + 1] - blocks[t], rel_tol=1e-9, abs_tol=1e-12)


def test_toy_context_entropies_fall_to_the_entropy_rate():
    floors = TOY_GRAMMAR.context_entropies(32)
    assert len(floors) == 32
    assert all(a >= b - 1e-12 for a, b in zip(floors, floors[1:], strict=False))
    assert round(floors[0], 2) == 1.41  # a model that reads one character
    assert math.isclose(floors[-1], TOY_GRAMMAR.entropy_per_char(), rel_tol=1e-9)
    with pytest.raises(ValueError, match="positive int"):
        TOY_GRAMMAR.context_entropies(0)
