"""The attention explorer's numbers on hand-made weights, and against the model's maps."""

import pytest
import torch

from gptlib import GPT, GPTConfig, seed_everything
from gptlib.data import SONNETS, CharTokenizer
from gptlib.lessons.widgets.trained_attention import (
    AttentionExplorer,
    AttentionSummary,
    attention_summary,
)

TOKENIZER = CharTokenizer.from_text(SONNETS)


def test_summary_numbers_by_hand():
    T = 5
    on_itself = AttentionSummary(0, 0, torch.eye(T))
    assert on_itself.mean_look_back == 0 and on_itself.self_weight == 1
    on_previous = AttentionSummary(0, 0, torch.diag(torch.ones(T - 1), -1))
    on_previous.weights[0, 0] = 1.0  # the first character can only read itself
    assert on_previous.previous_char_weight == 1.0
    assert on_previous.mean_look_back == pytest.approx((T - 1) / T)
    on_first = torch.zeros(T, T)
    on_first[:, 0] = 1.0
    assert AttentionSummary(0, 0, on_first).mean_look_back == pytest.approx((T - 1) / 2)
    assert AttentionSummary(2, 1, on_first).lines() == [
        "layer = 2",
        "head = 1",
        "max weight = 1.000",
        "mean look-back = 2.00 characters",
        "weight on the previous character = 0.250",
        "weight on itself = 0.200",
    ]


def test_summary_picks_the_layer_and_head_from_the_model():
    seed_everything(0)
    model = GPT(GPTConfig(vocab_size=TOKENIZER.vocab_size, d_model=32, n_heads=4, n_layers=2))
    text = "Rough winds do shake"
    maps = model.attention_maps(TOKENIZER.encode(text)[None])
    summary = attention_summary(model, TOKENIZER, text, layer=1, head=3)
    assert torch.equal(summary.weights, maps[1, 0, 3])
    assert summary.weights.shape == (len(text), len(text))
    with pytest.raises(ValueError, match=r"layer must be in 0..1 and head in 0..3, got layer=2"):
        attention_summary(model, TOKENIZER, text, layer=2, head=0)


def test_explorer_follows_the_sliders():
    seed_everything(0)
    model = GPT(GPTConfig(vocab_size=TOKENIZER.vocab_size, d_model=32, n_heads=4, n_layers=2))
    text = "Rough winds do shake"
    explorer = AttentionExplorer(model, TOKENIZER, text)
    assert (explorer.layer.max, explorer.head.max) == (1, 3)
    assert explorer.lines == attention_summary(model, TOKENIZER, text, 0, 0).lines()
    explorer.layer.value, explorer.head.value = 1, 3
    assert explorer.lines == attention_summary(model, TOKENIZER, text, 1, 3).lines()
    shown = explorer.view.image.get_array()
    assert (shown == attention_summary(model, TOKENIZER, text, 1, 3).weights.numpy()).all()
