"""A head's attention in numbers: hand-made weights, and the model's own maps."""

import math

import pytest
import torch

from gptlib import GPT, GPTConfig, seed_everything
from gptlib.data import SONNETS, CharTokenizer
from gptlib.lessons.shared.experiments.attention_maps import attention_maps
from gptlib.lessons.shared.experiments.trained_attention import (
    AttentionSummary,
    attention_summaries,
    attention_summary,
)

TOKENIZER = CharTokenizer.from_text(SONNETS)


def test_summary_numbers_by_hand():
    T = 5
    on_itself = AttentionSummary(0, 0, torch.eye(T), "abcde")
    assert on_itself.mean_look_back == 0 and on_itself.self_weight == 1
    on_previous = AttentionSummary(0, 0, torch.diag(torch.ones(T - 1), -1), "abcde")
    on_previous.weights[0, 0] = 1.0  # the first character can only read itself
    assert on_previous.previous_char_weight == 1.0
    assert on_previous.mean_look_back == pytest.approx((T - 1) / T)
    on_first = torch.zeros(T, T)
    on_first[:, 0] = 1.0
    assert AttentionSummary(0, 0, on_first, "abcde").mean_look_back == pytest.approx((T - 1) / 2)
    assert AttentionSummary(0, 0, on_first, "abcde").mean_entropy == 0
    even = torch.ones(T, T).tril()
    uniform = AttentionSummary(0, 0, even / even.sum(-1, keepdim=True), "abcde")
    assert uniform.mean_entropy == pytest.approx(sum(math.log(i + 1) for i in range(T)) / T)
    assert uniform.mean_look_back == pytest.approx((T - 1) / 4)  # query i: i / 2 on average
    assert AttentionSummary(2, 1, on_first, "\nbcde").lines() == [
        "layer = 2",
        "head = 1",
        "max weight = 1.000",
        "mean look-back = 2.00 characters",
        "weight on the previous character = 0.250",
        "weight on itself = 0.200",
        "most attended = '\\n' at position 0 (100% of all attention)",
    ]


def test_most_attended_is_the_brightest_column():
    text = "ab:cd"
    weights = torch.tensor(
        [
            [1.0, 0.0, 0.0, 0.0, 0.0],
            [0.5, 0.5, 0.0, 0.0, 0.0],
            [0.0, 0.0, 1.0, 0.0, 0.0],
            [0.0, 0.0, 0.8, 0.2, 0.0],
            [0.1, 0.0, 0.7, 0.0, 0.2],
        ]
    )
    summary = AttentionSummary(0, 0, weights, text)
    torch.testing.assert_close(summary.received, torch.tensor([1.6, 0.5, 2.5, 0.2, 0.2]))
    assert summary.most_attended == 2 and text[summary.most_attended] == ":"
    assert summary.most_attended_share == pytest.approx(2.5 / 5)


def test_weights_must_fit_the_text():
    with pytest.raises(ValueError, match=r"T=3 characters, got \[4, 4\]"):
        AttentionSummary(0, 0, torch.eye(4), "abc")


def test_summaries_come_from_the_model_s_maps():
    seed_everything(0)
    model = GPT(GPTConfig(vocab_size=TOKENIZER.vocab_size, d_model=32, n_heads=4, n_layers=2))
    text = "Rough winds do shake"
    maps = attention_maps(model, TOKENIZER.encode(text)[None])
    summary = attention_summary(model, TOKENIZER, text, layer=1, head=3)
    assert torch.equal(summary.weights, maps[1, 0, 3])
    everything = attention_summaries(model, TOKENIZER, text)
    assert [(s.layer, s.head) for s in everything] == [(i, j) for i in range(2) for j in range(4)]
    assert torch.equal(everything[7].weights, summary.weights)
    with pytest.raises(ValueError, match=r"layer must be in 0..1 and head in 0..3, got layer=2"):
        attention_summary(model, TOKENIZER, text, layer=2, head=0)
