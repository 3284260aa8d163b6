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
