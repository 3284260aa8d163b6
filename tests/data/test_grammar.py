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
