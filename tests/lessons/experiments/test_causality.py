"""Probes of what each output depends on: prefix runs, token changes, the mask twin."""

import pytest
import torch

from gptlib import GPT, GPTConfig
from gptlib.lessons.experiments.causality import (
    changed_positions,
    mask_twins,
    output_change,
    perturb,
    prefix_logits,
    replace_token,
    with_causal,
)
from gptlib.lessons.experiments.variants import is_masked


@pytest.fixture
def model():
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=11, d_model=16, n_heads=4, n_layers=2, max_len=16)).eval()


@pytest.fixture
def idx():
    return torch.randint(0, 11, (2, 9), generator=torch.Generator().manual_seed(0))


def test_prefix_logits_equal_one_pass_for_a_causal_model(model, idx):
    logits, _ = model(idx)
    separate = prefix_logits(model, idx)
    assert separate.shape == logits.shape
    torch.testing.assert_close(separate, logits, atol=1e-5, rtol=1e-5)
    # Built by hand for one position, as an independent reference.
    torch.testing.assert_close(separate[:, 4], model(idx[:, :5])[0][:, -1])


def test_prefix_logits_differ_without_the_mask(model, idx):
    unmasked = with_causal(model, False)
    logits, _ = unmasked(idx)
    separate = prefix_logits(unmasked, idx)
    torch.testing.assert_close(separate[:, -1], logits[:, -1])  # the last row sees it all anyway
    assert not torch.allclose(separate[:, 0], logits[:, 0], atol=1e-5)


def test_output_change_reaches_only_later_positions(model, idx):
    for position in range(idx.shape[1]):
        change = output_change(model, idx, position)
        assert change.shape == (idx.shape[1],)
        assert changed_positions(change) == list(range(position, idx.shape[1]))


def test_output_change_reaches_everything_without_the_mask(model, idx):
    change = output_change(with_causal(model, False), idx, 3)
    assert changed_positions(change) == list(range(idx.shape[1]))


def test_output_change_with_an_explicit_token(model, idx):
    same = output_change(model, idx, 2, token=int(idx[0, 2]))
    # Only the first sequence is certain to be unchanged; the second may hold another token.
    expected = model(replace_token(idx, 2, int(idx[0, 2])))[0] - model(idx)[0]
    torch.testing.assert_close(same, expected.abs().amax(dim=(0, 2)))
    with pytest.raises(ValueError, match="out of range"):
        output_change(model, idx, 2, token=11)


def test_replace_token_copies_and_checks_the_position(idx):
    changed = replace_token(idx, 4, 7)
    assert (changed[:, 4] == 7).all() and changed.data_ptr() != idx.data_ptr()
    assert torch.equal(changed[:, :4], idx[:, :4]) and torch.equal(changed[:, 5:], idx[:, 5:])
    with pytest.raises(ValueError, match=r"0\.\.8"):
        replace_token(idx, 9, 0)


def test_changed_positions_threshold():
    assert changed_positions(torch.tensor([0.0, 1e-7, 2e-5, 3.0])) == [2, 3]
    assert changed_positions(torch.tensor([0.0, 1e-3]), atol=1e-2) == []


def test_with_causal_keeps_weights_and_flips_only_the_mask(model):
    twin = with_causal(model, False)
    assert not any(is_masked(b.attn) for b in twin.blocks)
    assert all(is_masked(b.attn) for b in model.blocks)
    assert twin.config == model.config
    for (name, a), (_, b) in zip(
        model.state_dict().items(), twin.state_dict().items(), strict=True
    ):
        assert torch.equal(a, b), name
    assert not twin.training  # follows the original's mode


def test_prefix_logits_rejects_bad_shapes(model):
    with pytest.raises(ValueError, match=r"\[B, T\]"):
        prefix_logits(model, torch.zeros(5, dtype=torch.long))


def test_twins_share_weights_and_differ_in_the_mask(model):
    twins = mask_twins(model.train())
    assert all(is_masked(b.attn) for b in twins[True].blocks)
    assert not any(is_masked(b.attn) for b in twins[False].blocks)
    assert not twins[True].training and not twins[False].training
    torch.testing.assert_close(twins[True].lm_head.weight, twins[False].lm_head.weight)


@pytest.mark.parametrize("position", [0, 3, 8])
def test_perturb_reports_who_moved(model, idx, position):
    twins = mask_twins(model)
    on = perturb(twins, idx, position, causal=True)
    assert on.changed == list(range(position, 9)) and on.unchanged == list(range(position))
    torch.testing.assert_close(on.change, output_change(twins[True], idx, position))
    lines = on.lines()
    assert lines[:2] == ["causal mask = on", f"perturbed position = {position}"]
    assert f"changed positions = {on.changed}" in lines
    assert f"number changed = {9 - position}" in lines
    assert f"earliest changed position = {position}" in lines
    assert "earlier positions unchanged = True" in lines
    off = perturb(twins, idx, position, causal=False)
    assert off.changed == list(range(9)) and off.unchanged == []
    assert "causal mask = off" in off.lines()
    assert "earliest changed position = 0" in off.lines()
    expected = "earlier positions unchanged = " + str(position == 0)
    assert expected in off.lines()
