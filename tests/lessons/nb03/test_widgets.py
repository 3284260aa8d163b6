"""Notebook 03's explorer: every control change redraws from `causality.perturbation`."""

import pytest
import torch

from gptlib.lessons.nb03.experiments import perturbation
from gptlib.lessons.nb03.widgets import CausalMaskExplorer

PNG_MAGIC = b"\x89PNG"
MOVED = torch.rand(8, 8, generator=torch.Generator().manual_seed(0)) + 0.1
CHANGES = {True: MOVED.triu(), False: MOVED}


def _printed(explorer) -> str:
    (output,) = explorer.numbers.outputs
    return output["text"]


def test_explorer_starts_at_its_default_and_follows_the_controls():
    explorer = CausalMaskExplorer(CHANGES, "abcdefgh", position=3)
    assert explorer.lines == perturbation(CHANGES[True], 3, causal=True).lines()
    assert "changed positions = [3, 4, 5, 6, 7]" in _printed(explorer)
    first_png = bytes(explorer.image.value)
    assert first_png.startswith(PNG_MAGIC)

    explorer.causal.value = False
    assert explorer.lines == perturbation(CHANGES[False], 3, causal=False).lines()
    assert "earliest changed position = 0" in _printed(explorer)
    explorer.position.value = 7
    assert "perturbed position = 7" in _printed(explorer)
    assert bytes(explorer.image.value) != first_png


def test_controls_and_their_ranges():
    explorer = CausalMaskExplorer(CHANGES, "abcdefgh", position=5)
    assert explorer.causal.description == "causal mask" and explorer.causal.value is True
    assert (explorer.position.min, explorer.position.max, explorer.position.value) == (0, 7, 5)
    assert "application/vnd.jupyter.widget-view+json" in explorer._repr_mimebundle_()


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="one label per token"):
        CausalMaskExplorer(CHANGES, "abc")
    with pytest.raises(ValueError, match=r"0\.\.7"):
        CausalMaskExplorer(CHANGES, "abcdefgh", position=8)
    with pytest.raises(ValueError, match="with the mask"):
        CausalMaskExplorer({True: MOVED}, "abcdefgh")
