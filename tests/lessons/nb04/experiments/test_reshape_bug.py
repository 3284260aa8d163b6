"""The reshape bug trained: the positions that can read their target copy it, the rest predict."""

import dataclasses
import functools

import pytest
import torch

from gptlib import GPT, GPTConfig
from gptlib.data.batches import BatchSampler
from gptlib.data.grammar import TOY_GRAMMAR
from gptlib.lessons.engine.checks import REGISTRY
from gptlib.lessons.nb04.experiments.reshape_bug import (
    BUG_SETUP,
    ReshapeBugRun,
    future_replaced_loss,
    held_out_position_loss,
    leaking_positions,
    leaking_positions_in_model,
    run_reshape_bug,
)
from gptlib.lessons.shared.experiments import mask_ablation
from gptlib.lessons.shared.experiments.mask_ablation import AblationRun, AblationSetup
from gptlib.lessons.shared.experiments.toy import toy_text_ids

MOVED = REGISTRY["moved-by-token"].reference  # the student's measurement, as the reference


def test_leaking_positions_follow_the_index_arithmetic_of_the_scrambled_split():
    # T = 32, h = 4: head i's slot t holds token (32 i + t) // 4, so output t reads tokens
    # 8 i .. 8 i + t // 4 through head i; it sees its target t + 1 when one head covers it.
    T, h = BUG_SETUP.block_size, BUG_SETUP.n_heads
    covered = [
        t for t in range(T - 1) if any(i * T // h <= t + 1 <= (i * T + t) // h for i in range(h))
    ]
    assert leaking_positions(MOVED) == covered
    assert covered == [7, 8, 9, *range(15, 21), *range(23, 31)]


def _run(position_loss: list[float]) -> AblationRun:
    return AblationRun(
        causal=True,
        model=None,
        losses=[],
        val_loss=0.0,
        prefix_loss=0.0,
        position_loss=position_loss,
        sample="",
        word_hit_rate=0.0,
    )


def test_a_stack_of_scrambled_layers_reaches_more_targets_than_one_layer():
    one_layer, stack = leaking_positions(MOVED), leaking_positions_in_model()
    assert set(one_layer) < set(stack)  # a later layer reads what an earlier one gathered
    assert BUG_SETUP.block_size - 1 not in stack  # the last target lies outside the window
    single = leaking_positions_in_model(dataclasses.replace(BUG_SETUP, n_layers=1))
    assert single == one_layer  # one block of the model: the layer's own leaks, no more


def test_a_causal_model_reaches_no_target(monkeypatch):
    from gptlib.lessons.nb04.experiments import reshape_bug

    monkeypatch.setattr(reshape_bug, "scramble_head_split", lambda model: model)  # right split
    assert leaking_positions_in_model() == []


def test_groups_split_the_window_and_below_floor_compares_each_position_with_its_floor():
    result = ReshapeBugRun(
        _run([]),
        leaking=[1],
        leaking_in_model=[0, 1],
        position_loss=[1.0, 0.0, 2.0, 0.5],
        floors=[1.4, 0.3, 0.3, 0.3],
        replaced_loss=3.0,
    )
    assert result.groups() == {
        "one layer": [1],
        "only through the stack": [0],
        "not at all": [2, 3],
    }
    assert result.below_floor([0, 1, 2, 3]) == [0, 1]
    assert result.below_floor([0, 1, 2, 3], margin=0.35) == [0]


def test_held_out_position_loss_is_the_mean_cross_entropy_at_each_position():
    torch.manual_seed(0)
    config = GPTConfig(vocab_size=27, d_model=16, n_heads=2, n_layers=1, max_len=8)
    model = GPT(config)
    setup = AblationSetup(d_model=16, n_heads=2, n_layers=1, block_size=8)
    losses = held_out_position_loss(model, setup, windows=64)
    ids, _ = toy_text_ids(400, setup.seed + 1, TOY_GRAMMAR)
    x, y = BatchSampler(ids, 64, 8, seed=1).sample()
    with torch.no_grad():
        logp = torch.log_softmax(model(x)[0].double(), -1)
    by_hand = -logp.gather(-1, y[..., None])[..., 0].mean(0)
    torch.testing.assert_close(
        torch.tensor(losses, dtype=torch.float64), by_hand, atol=1e-5, rtol=0
    )


@pytest.mark.slow
def test_a_small_scrambled_model_copies_where_it_can_and_fails_from_a_prefix():
    small = AblationSetup(
        d_model=32,
        n_heads=4,
        n_layers=1,
        block_size=16,
        steps=300,
        lr=1e-2,
        train_sentences=100,
        val_sentences=20,
        val_windows=8,
        sample_chars=20,
    )
    result = run_reshape_bug(MOVED, small)
    assert result.leaking == leaking_positions(MOVED, small) == result.leaking_in_model != []
    # Where the target is in view the loss mostly beats the floor (copying); elsewhere, on
    # average, it stays above.
    groups = result.groups()
    one, none = groups["one layer"], groups["not at all"]
    assert len(result.below_floor(one, margin=0.1)) >= 2 * len(one) / 3
    loss, floor = (sum(values[t] for t in none) for values in (result.position_loss, result.floors))
    assert loss > floor + 0.1 * len(none)
    # From a prefix alone (as in generation) there is nothing to copy.
    assert result.run.prefix_loss > 2 * result.run.val_loss


def test_the_bug_is_planted_before_training(monkeypatch):
    seen = []

    def fake_train_losses(model, ids, config):
        seen.append([isinstance(b.attn.split_heads, functools.partial) for b in model.blocks])
        return torch.zeros(config.steps)

    monkeypatch.setattr(mask_ablation, "train_losses", fake_train_losses)
    tiny = AblationSetup(d_model=8, n_heads=2, n_layers=2, block_size=8, steps=2, sample_chars=4)
    result = run_reshape_bug(MOVED, tiny)
    assert seen == [[True, True]]
    assert result.run.causal and len(result.position_loss) == len(result.floors) == tiny.block_size


def test_future_replaced_loss_equals_the_prefix_only_loss_of_a_causal_model():
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=27, d_model=16, n_heads=2, n_layers=2, max_len=8)).eval()
    ids, _ = toy_text_ids(50, 1, TOY_GRAMMAR)
    x, y = BatchSampler(ids, 6, 8, seed=1).sample()
    replaced = future_replaced_loss(model, x, y)
    _, alone = REGISTRY["held-out-losses"].reference(model, x, y)  # prefix passes, [T]
    torch.testing.assert_close(torch.tensor(replaced), alone.float(), atol=1e-5, rtol=0)


def test_future_replaced_loss_takes_the_future_from_the_neighbouring_window():
    class Echo(torch.nn.Module):  # logits at t put all weight on the token at t + 1 (the future)
        def forward(self, idx):
            ahead = torch.roll(idx, -1, dims=1)
            return torch.nn.functional.one_hot(ahead, 5).float() * 50, None

    x = torch.tensor([[0, 1, 2, 3], [4, 3, 2, 1]])
    y = torch.roll(x, -1, dims=1)
    losses = future_replaced_loss(Echo(), x, y)
    # t = 0 reads the neighbour's token 1 (3 for row 0, 1 for row 1): wrong for both rows;
    # t = 1 reads 2 in both windows (both have 2 at position 2): right for both.
    assert losses[0] > 40 and losses[1] < 1e-6


def test_future_replaced_loss_refuses_bad_input():
    model = GPT(GPTConfig(vocab_size=5, d_model=8, n_heads=2, n_layers=1, max_len=4))
    with pytest.raises(ValueError, match="B >= 2"):
        future_replaced_loss(
            model, torch.zeros(1, 4, dtype=torch.long), torch.zeros(1, 4, dtype=torch.long)
        )
    with pytest.raises(ValueError, match=r"\[B, T\]"):
        future_replaced_loss(
            model, torch.zeros(2, 4, dtype=torch.long), torch.zeros(2, 3, dtype=torch.long)
        )
