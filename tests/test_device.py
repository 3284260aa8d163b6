import random

import numpy as np
import pytest
import torch

from gptlib import describe_device, pick_device, seed_everything
from gptlib.device import choose_device, fast_precision


def test_seed_everything_repeats_all_generators():
    g = seed_everything(7)
    a = (random.random(), np.random.rand(), torch.rand(2), torch.rand(2, generator=g))
    g = seed_everything(7)
    b = (random.random(), np.random.rand(), torch.rand(2), torch.rand(2, generator=g))
    assert a[0] == b[0] and a[1] == b[1]
    assert torch.equal(a[2], b[2]) and torch.equal(a[3], b[3])
    with pytest.raises(ValueError, match="seed must be an int"):
        seed_everything(1.5)


@pytest.fixture
def machine(monkeypatch):
    """Set what torch reports: `machine(cuda=..., mps=...)`."""
    monkeypatch.delenv("GPTLIB_DEVICE", raising=False)

    def set_up(*, cuda: bool, mps: bool) -> None:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
        monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)

    return set_up


@pytest.mark.parametrize(
    ("cuda", "mps", "expected"),
    [(True, True, "cuda"), (True, False, "cuda"), (False, True, "mps"), (False, False, "cpu")],
)
def test_pick_device_takes_cuda_then_mps_then_the_cpu(machine, cuda, mps, expected):
    machine(cuda=cuda, mps=mps)
    assert pick_device() == torch.device(expected)
    assert choose_device().device == torch.device(expected)


def test_the_reason_says_what_was_found(machine):
    machine(cuda=False, mps=True)
    assert choose_device().reason == "Apple's MPS is available"
    machine(cuda=False, mps=False)
    assert choose_device().reason == "no CUDA GPU or Apple MPS device is available"


def test_describe_device_says_where_it_runs_and_that_stored_outputs_are_from_the_cpu(machine):
    machine(cuda=False, mps=False)
    assert describe_device() == (
        "Running on the CPU (no CUDA GPU or Apple MPS device is available); "
        "the stored outputs of these notebooks were made on the CPU."
    )
    machine(cuda=True, mps=False)
    assert describe_device() == (
        "Running on cuda (a CUDA GPU is available); the stored outputs of these notebooks were "
        "made on the CPU, so numbers computed here may differ from them."
    )
    assert describe_device("cpu").startswith("Running on the CPU ('cpu' was asked for); ")


def test_gptlib_device_overrides_the_choice(machine, monkeypatch):
    machine(cuda=True, mps=True)
    monkeypatch.setenv("GPTLIB_DEVICE", "cpu")
    assert pick_device() == torch.device("cpu")
    assert choose_device().reason == "GPTLIB_DEVICE=cpu asks for it"
    assert pick_device("cuda:1") == torch.device("cuda:1")  # the argument wins over the variable


def test_a_device_asked_for_must_exist(machine):
    machine(cuda=False, mps=False)
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        pick_device("tpu")
    with pytest.raises(ValueError, match="no CUDA GPU"):
        pick_device("cuda")
    with pytest.raises(ValueError, match="MPS is not available"):
        pick_device("mps")


def test_pick_device_on_this_machine(monkeypatch):
    """Unmocked: whatever this machine has, the choice is a device torch can put a tensor on."""
    monkeypatch.delenv("GPTLIB_DEVICE", raising=False)
    device = pick_device()
    assert torch.zeros(1, device=device).device.type == device.type


@pytest.mark.parametrize(("avx512_bf16", "amx", "expected"), [
    (True, False, "bfloat16"), (False, True, "bfloat16"), (False, False, "float32"),
])  # fmt: skip
def test_fast_precision_takes_bfloat16_only_where_the_cpu_multiplies_it(
    monkeypatch, avx512_bf16, amx, expected
):
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: avx512_bf16, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx, raising=False)
    assert fast_precision(torch.device("cpu")) == expected
    assert fast_precision(torch.device("mps")) == "float32"
