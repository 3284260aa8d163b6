"""Training with and without the causal mask: the unmasked model cheats, and it shows."""

import pytest
import torch

from gptlib import GPT, GPTConfig
from gptlib.data.grammar import TOY_GRAMMAR
from gptlib.lessons.experiments import mask_ablation
from gptlib.lessons.experiments.mask_ablation import (
    AblationSetup,
    next_token_attention,
    run_mask_ablation,
)

SMALL = AblationSetup(
    d_model=32,
    n_layers=1,
    block_size=16,
    steps=250,
    lr=1e-2,
    train_sentences=100,
    val_sentences=20,
    val_windows=8,
    sample_chars=40,
)


@pytest.mark.slow
def test_without_the_mask_the_loss_beats_the_entropy_floor_and_prediction_fails():
    masked, unmasked = run_mask_ablation(SMALL)
    assert masked.causal and not unmasked.causal
    floor = TOY_GRAMMAR.entropy_per_char()
    # No honest predictor beats the floor; the one that reads its target does.
    assert unmasked.val_loss < floor < masked.val_loss
    # With the mask, the training-style loss is exactly the loss of prefix-only predictions.
    assert abs(masked.val_loss - masked.prefix_loss) < 1e-4
    # Without it, predicting from a prefix (as in generation) is far worse than with it.
    assert unmasked.prefix_loss > masked.prefix_loss + 1.0
    assert masked.next_token_attention == 0.0 and unmasked.next_token_attention > 0.5
    # Without the mask only the last position of a window has no target in view.
    *copied, last = unmasked.position_loss
    assert max(copied) < floor < last
    assert sum(masked.position_loss) / SMALL.block_size == pytest.approx(masked.val_loss, abs=1e-5)
    assert len(masked.losses) == len(unmasked.losses) == SMALL.steps
    assert masked.sample.startswith(SMALL.prompt) and len(masked.sample) == 4 + SMALL.sample_chars
    assert 0.0 <= unmasked.word_hit_rate < masked.word_hit_rate <= 1.0


def test_next_token_attention_is_zero_with_the_mask_and_one_for_a_copier(monkeypatch):
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=5, d_model=8, n_heads=2, n_layers=1, max_len=6)).eval()
    idx = torch.randint(0, 5, (2, 6))
    assert next_token_attention(model, idx) == 0.0
    maps = torch.zeros(1, 2, 2, 6, 6)
    maps[..., torch.arange(5), torch.arange(1, 6)] = 1.0  # head attends to t+1 ...
    maps[..., 5, 5] = 1.0  # ... and the last query to itself
    monkeypatch.setattr(mask_ablation, "attention_maps", lambda model, idx: maps)
    assert next_token_attention(model, idx) == 1.0


def test_both_runs_start_from_the_same_weights_and_batches(monkeypatch):
    seen = []

    def fake_train_losses(model, ids, config):
        seen.append(({k: v.clone() for k, v in model.state_dict().items()}, ids, config))
        return torch.zeros(config.steps)

    monkeypatch.setattr(mask_ablation, "train_losses", fake_train_losses)
    tiny = AblationSetup(d_model=8, n_heads=2, n_layers=1, block_size=8, steps=2, sample_chars=4)
    masked, unmasked = run_mask_ablation(tiny)
    (weights_a, ids_a, config_a), (weights_b, ids_b, config_b) = seen
    assert weights_a.keys() == weights_b.keys()
    assert all(torch.equal(weights_a[k], weights_b[k]) for k in weights_a)
    assert torch.equal(ids_a, ids_b) and config_a == config_b
    assert masked.losses == unmasked.losses == [0.0, 0.0]


def test_alter_changes_the_model_before_training(monkeypatch):
    trained = []
    monkeypatch.setattr(
        mask_ablation, "train_losses", lambda m, ids, c: trained.append(m) or torch.zeros(c.steps)
    )
    altered = []
    tiny = AblationSetup(d_model=8, n_heads=2, n_layers=1, block_size=8, steps=2, sample_chars=4)
    run = mask_ablation.train_run(tiny, True, alter=altered.append)
    assert altered == trained == [run.model]
