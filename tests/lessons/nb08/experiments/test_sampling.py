"""The sampling explorer's pure function, and sampling with a rule given as a function, against
the model's own logits and `generate`."""

import math

import pytest
import torch
import torch.nn.functional as F

from gptlib import GPT, GPTConfig, seed_everything
from gptlib.data import SONNETS, CharTokenizer
from gptlib.lessons.nb08.experiments.sampling import (
    NextCharReport,
    Sampled,
    next_char_report,
    sample_with,
)
from gptlib.model import next_token_probs

TOKENIZER = CharTokenizer.from_text(SONNETS)


@pytest.fixture(scope="module")
def model():
    seed_everything(0)
    m = GPT(
        GPTConfig(vocab_size=TOKENIZER.vocab_size, d_model=32, n_heads=2, n_layers=1, max_len=32)
    )
    with torch.no_grad():
        m.lm_head.weight.mul_(40)  # a peaked distribution, as after training
    return m


def test_probabilities_are_the_tempered_softmax_of_the_last_logits(model):
    prompt = "Shall I compare thee"
    idx = TOKENIZER.encode(prompt)[None]
    logits = model.eval()(idx)[0][0, -1]
    for t in (0.5, 1.0, 1.7):
        report = next_char_report(model, TOKENIZER, prompt, temperature=t, n_sample=5)
        torch.testing.assert_close(report.probs, torch.softmax(logits / t, -1))
        assert report.candidates == TOKENIZER.vocab_size


def test_a_long_prompt_is_read_through_the_model_s_window(model):
    prompt = SONNETS[:100]  # longer than max_len = 32
    report = next_char_report(model, TOKENIZER, prompt, n_sample=3)
    logits = model.eval()(TOKENIZER.encode(prompt[-32:])[None])[0][0, -1]
    torch.testing.assert_close(report.probs, torch.softmax(logits, -1))


def test_top_k_keeps_k_characters_and_greedy_keeps_one(model):
    report = next_char_report(model, TOKENIZER, "Love is", temperature=1.0, top_k=3)
    assert report.candidates == 3
    assert report.probs.sum().item() == pytest.approx(1.0, abs=1e-6)
    greedy = next_char_report(model, TOKENIZER, "Love is", temperature=0)
    assert greedy.top_probability == 1.0 and greedy.candidates == 1 and greedy.entropy == 0.0


def test_sample_is_seeded_and_is_what_generate_writes(model):
    a = next_char_report(model, TOKENIZER, "So long", 0.9, 10, n_sample=30, seed=4)
    b = next_char_report(model, TOKENIZER, "So long", 0.9, 10, n_sample=30, seed=4)
    assert a.sample == b.sample and len(a.sample) == 30
    idx = TOKENIZER.encode("So long")[None]
    out = model.generate(
        idx, 30, temperature=0.9, top_k=10, generator=torch.Generator().manual_seed(4)
    )
    assert a.sample == TOKENIZER.decode(out[0, 7:])


def test_the_model_s_mode_is_restored(model):
    model.train()
    next_char_report(model, TOKENIZER, "Love", n_sample=2)
    assert model.training
    model.eval()


def test_report_lines_by_hand():
    report = NextCharReport("abcd", torch.tensor([0.5, 0.5, 0.0, 0.0]), "ab")
    assert report.lines() == [
        "top probability = 0.500 ('a')",
        "characters with p > 0 = 2 of 4",
        f"entropy = {math.log(2):z.3f} nats (uniform: {math.log(4):z.3f})",
        "sample = 'ab'",
    ]


def test_a_newline_is_written_as_python_writes_it():
    report = NextCharReport("a\n", torch.tensor([0.25, 0.75]), "")
    assert report.top_char == "\n"
    assert report.lines()[0] == "top probability = 0.750 ('\\n')"


def test_sampling_with_a_rule_writes_what_generate_writes_under_the_same_rule(model):
    """Top-k as a function gives the characters `generate` draws with top_k, from the same seed:
    the same draws, one character at a time, over a prompt longer than the window."""
    prompt = SONNETS[:40]  # longer than max_len = 32: each step reads the last 32 characters
    sampled = sample_with(
        model, TOKENIZER, prompt, 30, lambda logits: next_token_probs(logits, top_k=3), seed=4
    )
    idx = TOKENIZER.encode(prompt)[None]
    g = torch.Generator().manual_seed(4)
    expected = model.generate(idx, 30, top_k=3, generator=g, use_cache=False)
    assert sampled.text == TOKENIZER.decode(expected[0, idx.shape[1] :])
    assert sampled.kept == (3,) * 30


def test_sampling_counts_the_characters_each_draw_could_take(model):
    """A rule that keeps one character (the arg-max) writes greedily and keeps 1 at each draw;
    one that keeps every character keeps V."""
    greedy = sample_with(
        model, TOKENIZER, "Shall", 12, lambda logits: F.one_hot(logits.argmax(-1), logits.shape[-1])
    )
    assert greedy.kept == (1,) * 12
    idx = TOKENIZER.encode("Shall")[None]
    assert greedy.text == TOKENIZER.decode(model.generate(idx, 12, temperature=0)[0, 5:])
    assert (
        sample_with(model, TOKENIZER, "Shall", 4, lambda logits: logits.softmax(-1)).kept
        == (TOKENIZER.vocab_size,) * 4
    )
    assert sample_with(model, TOKENIZER, "Shall", 0, lambda logits: logits.softmax(-1)) == Sampled(
        "", ()
    )
