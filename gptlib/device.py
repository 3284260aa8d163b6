"""Device choice and seeding, used by every notebook (introduced in 00_start_here)."""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

import torch

_KNOWN_DEVICES = ("cpu", "cuda", "mps")


@dataclass(frozen=True)
class DeviceChoice:
    """Where the notebooks run (`device`) and why (`reason`, a phrase for a sentence)."""

    device: torch.device
    reason: str


def choose_device(preferred: str | None = None) -> DeviceChoice:
    """The device `pick_device` returns, with the reason it was chosen.

    An explicit choice (`preferred`, else the environment variable ``GPTLIB_DEVICE``) wins, and
    is refused with a ValueError when the device is unknown or not available. Otherwise: a CUDA
    GPU, then Apple's MPS, then the CPU. (Before torch 2.9, training on MPS could end at wrong
    losses without an error: rasbt/LLMs-from-scratch #635 and #791, stable from 2.9 in #900;
    gptlib needs torch 2.10 or newer.)
    """
    choice = preferred or os.environ.get("GPTLIB_DEVICE")
    if choice is not None:
        kind = choice.split(":")[0]
        if kind not in _KNOWN_DEVICES:
            raise ValueError(
                f"unknown device {choice!r}: use one of {', '.join(_KNOWN_DEVICES)} "
                "(optionally with an index, e.g. 'cuda:1')"
            )
        if kind == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"device {choice!r} was asked for, but torch sees no CUDA GPU")
        if kind == "mps" and not torch.backends.mps.is_available():
            raise ValueError(f"device {choice!r} was asked for, but MPS is not available here")
        asked = f"{choice!r} was asked for" if preferred else f"GPTLIB_DEVICE={choice} asks for it"
        return DeviceChoice(torch.device(choice), asked)
    if torch.cuda.is_available():
        return DeviceChoice(torch.device("cuda"), "a CUDA GPU is available")
    if torch.backends.mps.is_available():
        return DeviceChoice(torch.device("mps"), "Apple's MPS is available")
    return DeviceChoice(torch.device("cpu"), "no CUDA GPU or Apple MPS device is available")


def pick_device(preferred: str | None = None) -> torch.device:
    """Return the best available device: cuda, then mps, then cpu.

    `preferred` (or the environment variable ``GPTLIB_DEVICE``) overrides the choice, e.g.
    ``pick_device("cpu")`` to make a notebook reproduce its stored CPU outputs on a GPU machine.
    `choose_device` says why; `describe_device` says it in a sentence.
    """
    return choose_device(preferred).device


def fast_precision(device: torch.device) -> str:
    """ "bfloat16" where `device` multiplies bfloat16 matrices in hardware, else "float32".

    The CLI's `--precision auto` (notebook 08 shows the command). CPUs qualify with AVX512-BF16
    (AMD Zen 4 and later, Intel Cooper Lake) or AMX (Intel Sapphire Rapids and later); elsewhere
    bfloat16 is emulated and slower than float32.
    """
    if device.type == "cuda":
        return "bfloat16" if torch.cuda.is_bf16_supported() else "float32"
    if device.type == "cpu":
        probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")  # torch.cpu, private
        if any(getattr(torch.cpu, name, lambda: False)() for name in probes):
            return "bfloat16"
    return "float32"


def describe_device(preferred: str | None = None) -> str:
    """One sentence for a notebook: the device `pick_device(preferred)` chooses, why, and that
    the notebooks' stored outputs come from the CPU."""
    choice = choose_device(preferred)
    where = "the CPU" if choice.device.type == "cpu" else str(choice.device)
    stored = "the stored outputs of these notebooks were made on the CPU"
    if choice.device.type != "cpu":
        stored += ", so numbers computed here may differ from them"
    return f"Running on {where} ({choice.reason}); {stored}."


def seed_everything(seed: int) -> torch.Generator:
    """Seed Python's, NumPy's (where installed) and torch's global generators; return a fresh
    seeded torch.Generator.

    One call at the top of a notebook makes its numbers repeat from run to run. The returned
    generator is for code that wants its own stream (batch sampling, generation).
    """
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ValueError(f"seed must be an int, got {seed!r} of type {type(seed).__name__}")
    random.seed(seed)
    try:
        import numpy as np  # not a requirement of gptlib's model wing; the lessons have it
    except ImportError:
        pass
    else:
        np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)
