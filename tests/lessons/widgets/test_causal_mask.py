"""Notebook 03's explorer: every control change redraws from `causality.perturb`."""

import pytest
import torch

from gptlib import GPT, GPTConfig
from gptlib.lessons.experiments.causality import mask_twins, perturb
from gptlib.lessons.widgets.causal_mask import CausalMaskExplorer

PNG_MAGIC = b"\x89PNG"
IDX = torch.tensor([[1, 2, 3, 4, 5, 6, 7, 8]])


@pytest.fixture
def model():
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=9, d_model=16, n_heads=4, n_layers=2, max_len=12))


def _printed(explorer) -> str:
    (output,) = explorer.numbers.outputs
    return output["text"]


def test_explorer_starts_at_its_default_and_follows_the_controls(model):
    explorer = CausalMaskExplorer(model, IDX, "abcdefgh", position=3)
    twins = mask_twins(model)
    assert explorer.lines == perturb(twins, IDX, 3, causal=True).lines()
    assert "changed positions = [3, 4, 5, 6, 7]" in _printed(explorer)
    first_png = bytes(explorer.image.value)
    assert first_png.startswith(PNG_MAGIC)

    explorer.causal.value = False
    assert explorer.lines == perturb(twins, IDX, 3, causal=False).lines()
    assert "earliest changed position = 0" in _printed(explorer)
    explorer.position.value = 7
    assert "perturbed position = 7" in _printed(explorer)
    assert bytes(explorer.image.value) != first_png


def test_controls_and_their_ranges(model):
    explorer = CausalMaskExplorer(model, IDX, "abcdefgh", position=5)
    assert explorer.causal.description == "causal mask" and explorer.causal.value is True
    assert (explorer.position.min, explorer.position.max, explorer.position.value) == (0, 7, 5)
    assert "application/vnd.jupyter.widget-view+json" in explorer._repr_mimebundle_()


def test_bad_arguments_are_refused(model):
    with pytest.raises(ValueError, match="one label per token"):
        CausalMaskExplorer(model, IDX, "abc")
    with pytest.raises(ValueError, match=r"0\.\.7"):
        CausalMaskExplorer(model, IDX, "abcdefgh", position=8)
