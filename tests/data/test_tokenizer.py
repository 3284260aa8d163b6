"""CharTokenizer: round trips, unknown characters, errors."""

import pytest
import torch

from gptlib.data import SONNETS, CharTokenizer


def test_tokenizer_round_trip_and_sorted_vocabulary():
    tok = CharTokenizer.from_text("hello, world")
    assert tok.chars == " ,dehlorw"
    assert tok.vocab_size == 9
    ids = tok.encode("hello")
    assert ids.dtype == torch.long
    assert ids.tolist() == [4, 3, 5, 5, 6]  # positions of h, e, l, l, o in " ,dehlorw"
    assert tok.decode(ids) == "hello"
    assert tok.decode([0, 1]) == " ,"


def test_encode_matches_a_python_dictionary_on_unicode_text():
    text = "naïve café — Ω≈ç √x ∫ 🙂 done 🙂"
    tok = CharTokenizer.from_text(text)
    stoi = {c: i for i, c in enumerate(sorted(set(text)))}
    assert tok.encode(text).tolist() == [stoi[c] for c in text]
    assert tok.decode(tok.encode(text)) == text


def test_unknown_characters_are_listed():
    tok = CharTokenizer.from_text("abc")
    with pytest.raises(ValueError, match=r"2 character\(s\) not in the vocabulary of 3: 'x', 'z'"):
        tok.encode("abzxa")
    with pytest.raises(ValueError, match="build the tokenizer from a text that contains them"):
        tok.encode("?")


def test_tokenizer_errors():
    with pytest.raises(ValueError, match="the text is empty"):
        CharTokenizer.from_text("")
    with pytest.raises(ValueError, match="sorted and free of repeats"):
        CharTokenizer("ba")
    tok = CharTokenizer.from_text("ab")
    with pytest.raises(ValueError, match=r"ids \[2, -1\] are not in the vocabulary"):
        tok.decode([0, 2, -1])
    with pytest.raises(ValueError, match="decode each row"):
        tok.decode(torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="encode takes a str"):
        tok.encode(["a"])


def test_tokenizer_dict_round_trip():
    tok = CharTokenizer.from_text(SONNETS)
    assert CharTokenizer.from_dict(tok.to_dict()) == tok
    with pytest.raises(ValueError, match="needs a 'chars' string"):
        CharTokenizer.from_dict({"stoi": {}})
