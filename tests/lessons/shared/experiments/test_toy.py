"""Toy-grammar ids, the plain-Adam setting of the Trainer, and losses until a divergence."""

import math

import pytest
import torch

from gptlib import GPT, GPTConfig
from gptlib.data.grammar import TOY_GRAMMAR
from gptlib.lessons.shared.experiments.toy import plain_adam, toy_text_ids, train_losses
from gptlib.train import learning_rate


def test_toy_text_ids_are_the_grammar_text_through_its_tokenizer():
    ids, tokenizer = toy_text_ids(5, seed=2)
    assert tokenizer.chars == TOY_GRAMMAR.alphabet()
    assert tokenizer.decode(ids) == TOY_GRAMMAR.text(5, seed=2)
    assert torch.equal(ids, toy_text_ids(5, seed=2)[0])


def test_plain_adam_is_a_constant_rate_after_a_linear_warmup():
    config = plain_adam(steps=100, lr=1e-2, warmup_steps=4)
    rates = [learning_rate(step, step / 100, config) for step in (0, 1, 3, 50, 99)]
    assert rates == pytest.approx([2.5e-3, 5e-3, 1e-2, 1e-2, 1e-2])
    assert (config.weight_decay, config.grad_clip, config.beta2) == (0.0, 0.0, 0.999)


def _tiny_model(vocab_size):
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=vocab_size, d_model=16, n_heads=2, n_layers=1, max_len=16))


def test_training_lowers_the_loss_and_repeats_exactly():
    ids, tokenizer = toy_text_ids(200, seed=0)
    config = plain_adam(40, 1e-2, block_size=16)
    losses = train_losses(_tiny_model(tokenizer.vocab_size), ids, config)
    again = train_losses(_tiny_model(tokenizer.vocab_size), ids, config)
    assert losses.shape == (40,)
    assert losses[-5:].mean() < losses[:5].mean() - 0.5
    torch.testing.assert_close(losses, again)


def test_a_non_finite_loss_stops_the_run_and_leaves_nan():
    ids, tokenizer = toy_text_ids(200, seed=0)
    model = _tiny_model(tokenizer.vocab_size)
    with torch.no_grad():
        model.lm_head.weight.fill_(math.inf)
    losses = train_losses(model, ids, plain_adam(5, 1e-3, block_size=16))
    assert torch.isnan(losses).all()
