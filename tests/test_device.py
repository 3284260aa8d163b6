import random

import numpy as np
import pytest
import torch

from gptlib import pick_device, seed_everything


def test_seed_everything_repeats_all_generators():
    g = seed_everything(7)
    a = (random.random(), np.random.rand(), torch.rand(2), torch.rand(2, generator=g))
    g = seed_everything(7)
    b = (random.random(), np.random.rand(), torch.rand(2), torch.rand(2, generator=g))
    assert a[0] == b[0] and a[1] == b[1]
    assert torch.equal(a[2], b[2]) and torch.equal(a[3], b[3])
    with pytest.raises(ValueError, match="seed must be an int"):
        seed_everything(1.5)


def test_pick_device(monkeypatch):
    monkeypatch.delenv("GPTLIB_DEVICE", raising=False)
    expected = (
        "cuda"
        if torch.cuda.is_available()
        else "mps"
        if torch.backends.mps.is_available()
        else "cpu"
    )
    assert pick_device().type == expected
    assert pick_device("cpu") == torch.device("cpu")
    monkeypatch.setenv("GPTLIB_DEVICE", "cpu")
    assert pick_device() == torch.device("cpu")
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        pick_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA GPU"):
            pick_device("cuda")
