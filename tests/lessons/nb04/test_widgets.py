"""Notebook 04's explorer: the head-count slider redraws from `multihead.head_patterns`."""

import pytest
import torch

from gptlib import GPT, GPTConfig
from gptlib.lessons.nb04.experiments.multihead import head_patterns
from gptlib.lessons.nb04.widgets import HeadsExplorer

PNG_MAGIC = b"\x89PNG"
IDX = torch.tensor([[1, 2, 3, 4, 5, 6]])


def _models() -> dict[int, GPT]:
    torch.manual_seed(0)
    return {
        h: GPT(GPTConfig(vocab_size=9, d_model=16, n_heads=h, n_layers=1, max_len=12)).eval()
        for h in (1, 2, 8)
    }


def test_explorer_starts_at_its_default_and_follows_the_slider():
    models = _models()
    explorer = HeadsExplorer(models, IDX, "abcdef", n_heads=2)
    assert explorer.lines == head_patterns(models[2], IDX).lines()
    first_png = bytes(explorer.image.value)
    assert first_png.startswith(PNG_MAGIC)
    assert list(explorer.n_heads.options) == [1, 2, 8]

    explorer.n_heads.value = 8
    (output,) = explorer.numbers.outputs
    assert output["text"].startswith("n_heads = 8\nd_head = 2\nparameters = 1,088\n")
    assert sum(ax.get_visible() for ax in explorer.view.axes) == 8
    explorer.n_heads.value = 1
    assert sum(ax.get_visible() for ax in explorer.view.axes) == 1
    assert bytes(explorer.image.value) != first_png


def test_the_default_must_be_one_of_the_models():
    with pytest.raises(ValueError, match=r"\[1, 2, 8\]"):
        HeadsExplorer(_models(), IDX, "abcdef", n_heads=4)
