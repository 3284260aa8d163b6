"""Device choice and seeding, used by every notebook (introduced in 00_start_here)."""

from __future__ import annotations

import os
import random

import numpy as np
import torch

_KNOWN_DEVICES = ("cpu", "cuda", "mps")


def pick_device(preferred: str | None = None) -> torch.device:
    """Return the best available device: cuda, then mps, then cpu.

    `preferred` (or the environment variable ``GPTLIB_DEVICE``) overrides the choice, e.g.
    ``pick_device("cpu")`` to make a notebook reproduce its stored CPU outputs on a GPU machine.
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
        return torch.device(choice)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def seed_everything(seed: int) -> torch.Generator:
    """Seed Python's, NumPy's and torch's global generators; return a fresh seeded torch.Generator.

    One call at the top of a notebook makes its numbers repeat from run to run. The returned
    generator is for code that wants its own stream (batch sampling, generation).
    """
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ValueError(f"seed must be an int, got {seed!r} of type {type(seed).__name__}")
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)
