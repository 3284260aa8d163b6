"""The synthetic corpus, character batches, warmup schedule and bare training loop."""

import math
import re

import pytest
import torch

from gptlib import GPT, GPTConfig
from gptlib.lessons.experiments.toy_lm import (
    ADJECTIVES,
    DETERMINERS,
    NOUNS,
    VERBS,
    CharData,
    toy_corpus,
    train_losses,
    warmup_factor,
)


def _alternatives(words):
    return "(" + "|".join(words) + ")"


def test_corpus_follows_the_template_and_is_seeded():
    text = toy_corpus(50, seed=3)
    det, adj, noun, verb = map(_alternatives, (DETERMINERS, ADJECTIVES, NOUNS, VERBS))
    sentence = re.compile(f"{det} {adj} {noun} {verb} {det} {noun}\\.")
    sentences = text.strip().split(". ")
    assert len(sentences) == 50
    assert all(sentence.fullmatch(s if s.endswith(".") else s + ".") for s in sentences)
    assert toy_corpus(50, seed=3) == text
    assert toy_corpus(50, seed=4) != text


def test_corpus_rejects_empty():
    with pytest.raises(ValueError, match="n_sentences"):
        toy_corpus(0)


def test_char_data_encodes_with_sorted_alphabet():
    data = CharData.from_text("abca")
    assert data.chars == "abc" and data.vocab_size == 3
    assert data.ids.tolist() == [0, 1, 2, 0]


def test_batches_are_windows_of_the_text_and_targets_are_shifted():
    data = CharData.from_text(toy_corpus(20))
    inputs, targets = data.batch(4, 10, torch.Generator().manual_seed(0))
    assert inputs.shape == targets.shape == (4, 10)
    ids = data.ids.tolist()
    for row_in, row_target in zip(inputs.tolist(), targets.tolist(), strict=True):
        starts = [s for s in range(len(ids) - 10) if ids[s : s + 10] == row_in]
        assert any(ids[s + 1 : s + 11] == row_target for s in starts)


def test_batch_rejects_windows_longer_than_the_text():
    with pytest.raises(ValueError, match="seq_len"):
        CharData.from_text("abc").batch(1, 5, torch.Generator())


@pytest.mark.parametrize(
    ("step", "warmup", "expected"),
    [(0, 4, 0.25), (2, 4, 0.75), (3, 4, 1.0), (9, 4, 1.0), (5, 0, 1.0)],
)
def test_warmup_factor(step, warmup, expected):
    assert warmup_factor(step, warmup) == pytest.approx(expected)


def _tiny_model(vocab_size):
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=vocab_size, d_model=16, n_heads=2, n_layers=1, max_len=16))


def test_training_lowers_the_loss_and_repeats_exactly():
    data = CharData.from_text(toy_corpus(200))
    losses = train_losses(_tiny_model(data.vocab_size), data, 40, 1e-2, seq_len=16)
    again = train_losses(_tiny_model(data.vocab_size), data, 40, 1e-2, seq_len=16)
    assert losses[-5:].mean() < losses[:5].mean() - 0.5
    torch.testing.assert_close(losses, again)


def test_warmup_scales_the_first_step():
    # Step 0 of a 1000-step warmup uses lr / 1000: the same update as lr / 1000 without warmup.
    data = CharData.from_text(toy_corpus(200))
    warm = train_losses(_tiny_model(data.vocab_size), data, 2, 1e-2, warmup_steps=1000, seq_len=16)
    small = train_losses(_tiny_model(data.vocab_size), data, 2, 1e-5, seq_len=16)
    full = train_losses(_tiny_model(data.vocab_size), data, 2, 1e-2, seq_len=16)
    torch.testing.assert_close(warm, small)
    assert not torch.allclose(warm, full)


def test_a_non_finite_loss_stops_the_run_and_leaves_nan():
    data = CharData.from_text(toy_corpus(200))
    model = _tiny_model(data.vocab_size)
    with torch.no_grad():
        model.lm_head.weight.fill_(math.inf)
    losses = train_losses(model, data, 5, 1e-3, seq_len=16)
    assert torch.isnan(losses).all()


def test_train_rejects_bad_settings():
    data = CharData.from_text(toy_corpus(20))
    with pytest.raises(ValueError, match="steps"):
        train_losses(_tiny_model(data.vocab_size), data, 0, 1e-3)
