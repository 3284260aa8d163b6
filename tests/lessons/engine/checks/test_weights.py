"""`load_weights`: gptlib's state dict into a student's module, or a message naming the misfit."""

import pytest
import torch
from torch import nn

from gptlib import MLP
from gptlib.lessons.engine.checks.weights import load_weights, unexpected_buffers


class StoredMask(nn.Module):
    """A right module with a buffer of its own, which gptlib's state dict does not have."""

    def __init__(self):
        super().__init__()
        self.up, self.down = nn.Linear(4, 16), nn.Linear(16, 4)
        self.register_buffer("mask", torch.ones(3, 3))


def test_the_weights_are_loaded_and_the_modules_own_buffers_kept():
    source, student = MLP(4), StoredMask()
    load_weights(student, source.state_dict())
    assert torch.equal(student.up.weight, source.up.weight)
    assert torch.equal(student.down.bias, source.down.bias)
    assert torch.equal(student.mask, torch.ones(3, 3))


def test_a_misfit_is_named_and_nothing_is_loaded():
    class Misfit(nn.Module):
        def __init__(self):
            super().__init__()
            self.up, self.out = nn.Linear(4, 8), nn.Linear(16, 4)

    source, student = MLP(4), Misfit()
    before = student.up.weight.clone()
    with pytest.raises(ValueError) as info:
        load_weights(student, source.state_dict())
    assert str(info.value) == (
        "the weights do not fit: your module has no down.weight, down.bias; gptlib's has no "
        "weight for your out.weight, out.bias; up.weight is [8, 4] in yours and [16, 4] in "
        "gptlib's; up.bias is [8] in yours and [16] in gptlib's. Name and shape the parameters "
        "as gptlib does: up.weight [16, 4], up.bias [16], down.weight [4, 16], down.bias [4]"
    )
    assert torch.equal(student.up.weight, before)


def test_the_expected_names_fold_the_blocks():
    source = nn.Module()
    source.blocks = nn.ModuleList(nn.Linear(2, 2, bias=False) for _ in range(3))
    with pytest.raises(ValueError, match=r"as gptlib does: blocks\.\{i\}\.weight \[2, 2\]$"):
        load_weights(nn.Module(), source.state_dict())


def test_strictly_a_buffer_of_the_modules_own_is_a_misfit_as_for_load_state_dict():
    source, student = MLP(4), StoredMask()
    assert unexpected_buffers(student, source.state_dict()) == ["mask"]
    with pytest.raises(ValueError, match=r"your state dict also holds mask, which is no weight"):
        load_weights(student, source.state_dict(), strict=True)
    with pytest.raises(RuntimeError, match=r"Missing key\(s\) in state_dict: \"mask\""):
        student.load_state_dict(source.state_dict(), strict=True)  # what the check forestalls


def test_a_buffer_kept_out_of_the_state_dict_is_no_misfit():
    class KeptOut(StoredMask):
        def __init__(self):
            super().__init__()
            self.register_buffer("mask", torch.ones(3, 3), persistent=False)

    source, student = MLP(4), KeptOut()
    assert unexpected_buffers(student, source.state_dict()) == []
    load_weights(student, source.state_dict(), strict=True)
    assert torch.equal(student.down.weight, source.down.weight)
