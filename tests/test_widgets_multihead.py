"""Notebook 04's explorer: head patterns of one layer, and the selector over head counts."""

import ipywidgets as widgets
import matplotlib
import pytest
import torch

from gptlib import GPT, GPTConfig
from gptlib.widgets.multihead import HeadPatterns, head_patterns, heads_explorer, show_head_patterns

matplotlib.use("Agg")


def _model(h: int, layers: int = 2) -> GPT:
    torch.manual_seed(h)
    return GPT(GPTConfig(vocab_size=9, d_model=16, n_heads=h, n_layers=layers, max_len=12)).eval()


IDX = torch.tensor([[1, 2, 3, 4, 5, 6]])


@pytest.mark.parametrize("h", [1, 2, 4, 8])
def test_head_patterns_are_causal_distributions_with_a_fixed_parameter_count(h):
    model = _model(h)
    result = head_patterns(model, IDX, layer=1)
    assert result.n_heads == h and result.d_head == 16 // h
    assert result.n_parameters == 4 * 16 * 16 + 4 * 16  # W_QKV, W_O and their biases
    assert result.weights.shape == (h, 6, 6)
    torch.testing.assert_close(result.weights.sum(-1), torch.ones(h, 6))
    assert (result.weights.triu(1) == 0).all()
    torch.testing.assert_close(result.weights, model.attention_maps(IDX)[1, 0])


def test_entropies_and_lines():
    uniform = torch.tril(torch.ones(3, 3))
    uniform = uniform / uniform.sum(-1, keepdim=True)
    sharp = torch.eye(3)
    result = HeadPatterns(2, 8, 1088, torch.stack([uniform, sharp]))
    expected = (0.0 + torch.log(torch.tensor(2.0)) + torch.log(torch.tensor(3.0))) / 3
    torch.testing.assert_close(result.entropies(), torch.stack([expected, torch.tensor(0.0)]))
    assert result.lines()[:3] == ["n_heads = 2", "d_head = 8", "parameters = 1,088"]
    torch.testing.assert_close(
        result.previous_token_weights(), torch.tensor([0.5 / 2 + 1 / 3 / 2, 0.0])
    )
    assert result.lines()[3] == "head 0: mean entropy = 0.597, weight on previous token = 0.417"
    assert result.lines()[4] == "head 1: mean entropy = 0.000, weight on previous token = 0.000"


def test_head_patterns_refuses_bad_input():
    with pytest.raises(ValueError, match=r"\[1, T\]"):
        head_patterns(_model(2), torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="layer"):
        head_patterns(_model(2), IDX, layer=2)


def test_show_and_explorer(capsys):
    models = {h: _model(h) for h in (1, 2, 4)}
    result = show_head_patterns(models, IDX, 2, "abcdef")
    assert capsys.readouterr().out.splitlines() == result.lines()
    box = heads_explorer(models, IDX, "abcdef", n_heads=2)
    picker = box.children[0]
    assert isinstance(picker, widgets.SelectionSlider)
    assert list(picker.options) == [1, 2, 4] and picker.value == 2
