"""Training with and without the causal mask: the unmasked model cheats, and it shows."""

import pytest
import torch

from gptlib.data.grammar import TOY_GRAMMAR
from gptlib.lessons.shared.experiments import mask_ablation
from gptlib.lessons.shared.experiments.mask_ablation import (
    AblationSetup,
    held_out_losses,
    held_out_windows,
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
    # Without the mask only the last position of a window has no target in view.
    *copied, last = unmasked.position_loss
    assert max(copied) < floor < last
    assert sum(masked.position_loss) / SMALL.block_size == pytest.approx(masked.val_loss, abs=1e-5)
    assert len(masked.losses) == len(unmasked.losses) == SMALL.steps
    assert masked.sample.startswith(SMALL.prompt) and len(masked.sample) == 4 + SMALL.sample_chars
    assert 0.0 <= unmasked.word_hit_rate < masked.word_hit_rate <= 1.0


def test_the_runs_are_measured_by_the_function_given(monkeypatch):
    monkeypatch.setattr(mask_ablation, "train_losses", lambda m, ids, c: torch.zeros(c.steps))
    tiny = AblationSetup(d_model=8, n_heads=2, n_layers=1, block_size=8, steps=2, sample_chars=4)
    seen = []

    def measure(model, x, y):
        seen.append((model.training, x.shape, y.shape))
        return torch.arange(8.0), torch.full((8,), 2.0)

    masked, unmasked = run_mask_ablation(tiny, measure=measure)
    assert seen == [(False, (tiny.val_windows, 8), (tiny.val_windows, 8))] * 2
    assert masked.position_loss == list(range(8)) and masked.val_loss == 3.5
    assert unmasked.prefix_loss == 2.0
    x, y = held_out_windows(tiny)
    assert torch.equal(x[:, 1:], y[:, :-1])  # the targets are the windows shifted by one
    default = mask_ablation.train_run(tiny, False)
    visible, alone = held_out_losses(default.model, x, y)
    assert default.position_loss == pytest.approx(visible.tolist())
    assert default.prefix_loss == pytest.approx(alone.mean().item())


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
