"""Reading a change matrix (change[p, t]: how far position t moved when token p changed), and
the model's twin without the mask."""

import pytest
import torch

from gptlib import GPT, GPTConfig
from gptlib.lessons.nb03.experiments import perturbation, with_causal
from gptlib.lessons.shared.experiments.variants import is_masked


@pytest.fixture
def model():
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=11, d_model=16, n_heads=4, n_layers=2, max_len=16)).eval()


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
    idx = torch.randint(0, 11, (2, 9), generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(with_causal(twin, True)(idx)[0], model(idx)[0])
    assert not torch.allclose(twin(idx)[0][:, 0], model(idx)[0][:, 0], atol=1e-5)


CAUSAL = torch.tensor([[0.5, 1e-3, 2e-5], [0.0, 0.4, 1e-7], [0.0, 0.0, 0.3]])


@pytest.mark.parametrize(
    ("position", "changed", "earlier"), [(0, [0, 1, 2], True), (1, [1], True), (2, [2], True)]
)
def test_perturbation_reads_one_row_against_the_tolerance(position, changed, earlier):
    result = perturbation(CAUSAL, position, causal=True)
    assert result.changed == changed
    assert result.unchanged == [t for t in range(3) if t not in changed]
    torch.testing.assert_close(result.change, CAUSAL[position])
    lines = result.lines()
    assert lines[:2] == ["causal mask = on", f"perturbed position = {position}"]
    assert f"changed positions = {changed}" in lines
    assert f"number changed = {len(changed)}" in lines
    assert f"earliest changed position = {changed[0]}" in lines
    assert f"earlier positions unchanged = {earlier}" in lines


def test_perturbation_of_a_model_without_the_mask():
    result = perturbation(torch.full((3, 3), 0.1), 2, causal=False)
    assert result.changed == [0, 1, 2] and result.unchanged == []
    assert "causal mask = off" in result.lines()
    assert "earliest changed position = 0" in result.lines()
    assert "earlier positions unchanged = False" in result.lines()
    assert perturbation(torch.full((3, 3), 0.1), 1, False, atol=0.5).changed == []


def test_perturbation_accepts_a_students_matrix_with_gradients_or_in_float64():
    grad = CAUSAL.clone().requires_grad_()
    assert perturbation(grad * 1, 0, True).change.requires_grad is False
    assert perturbation(CAUSAL.double(), 0, True).change.dtype == torch.float32


def test_perturbation_refuses_what_is_not_a_change_matrix():
    with pytest.raises(ValueError, match=r"\[T, T\]"):
        perturbation(torch.zeros(3), 0, True)
    with pytest.raises(ValueError, match=r"0\.\.2"):
        perturbation(CAUSAL, 3, True)


def test_change_path_factors_multiply_to_the_measured_logit_ratio(model):
    from gptlib.lessons.nb03.experiments import change_path
    from gptlib.lessons.shared.experiments.attention_maps import attention_maps

    idx = torch.randint(0, 11, (1, 9), generator=torch.Generator().manual_seed(1))
    other = (idx + 1) % 11
    path = change_path(model, idx, other, 4)
    edited = idx.clone()
    edited[0, 4] = other[0, 4]
    with torch.no_grad():
        moved = (model(edited)[0] - model(idx)[0]).abs().amax(-1)[0]  # [T]
    assert path.logit_ratio == pytest.approx((moved[4] / moved[5]).item(), rel=1e-5)
    assert torch.tensor(list(path.factors().values())).prod().item() == pytest.approx(
        path.logit_ratio, rel=1e-5
    )
    weight = attention_maps(model, idx)[0, 0, :, 5, 4].mean().item()  # block 0, query 5, key 4
    assert path.weight == pytest.approx(weight, rel=1e-5)
    own = (model.tok_emb.weight[other[0, 4]] - model.tok_emb.weight[idx[0, 4]]).norm().item()
    assert path.own == pytest.approx(own, rel=1e-5)


def test_change_path_refuses_bad_input(model):
    from gptlib.lessons.nb03.experiments import change_path

    idx = torch.zeros(1, 6, dtype=torch.long)
    with pytest.raises(ValueError, match="position must be in 0..4"):
        change_path(model, idx, idx + 1, 5)
    with pytest.raises(ValueError, match=r"\[1, T\]"):
        change_path(model, idx.expand(2, 6), idx.expand(2, 6) + 1, 2)


def test_with_diagonal_blocked_is_nan_written_out_and_silent_through_the_fused_call(model):
    from gptlib.lessons.nb03.experiments import with_diagonal_blocked

    idx = torch.randint(0, 11, (2, 7), generator=torch.Generator().manual_seed(2))
    written = with_diagonal_blocked(model, fused=False)(idx)[0]  # [B, T, V]
    assert written.isnan().all()  # position 0's NaN reaches every position through layer 2
    fused = with_diagonal_blocked(model)
    logits = fused(idx)[0]
    assert not logits.isnan().any()
    # position 0 gets exactly nothing from attention (W_O's bias, 0 at GPT-2's init): a copy
    # with every W_O zeroed, which gets nothing anywhere, gives position 0 the same logits
    silent = with_diagonal_blocked(model)
    for block in silent.blocks:
        torch.nn.init.zeros_(block.attn.proj.weight)
    torch.testing.assert_close(silent(idx)[0][:, 0], logits[:, 0])
    assert not model(idx)[0].isnan().any()  # the original keeps its own mask
