"""Notebook 09's exercises: right answers written in other ways and other number types pass."""

import numpy as np
import pytest
import torch

from gptlib import Block
from gptlib.lessons.checks import verify

BLOCK_COUNTS = {
    "a real block": lambda d: sum(p.numel() for p in Block(d, 4).parameters()),
    "a float formula": lambda d: 12.0 * d**2 + 13.0 * d,
    "a NumPy integer": lambda d: np.int64(4 * d * d + 4 * d) + np.int64(8 * d * d + 5 * d + 4 * d),
}


@pytest.mark.parametrize("answer", BLOCK_COUNTS.values(), ids=BLOCK_COUNTS)
def test_other_right_block_counts_pass(answer):
    verify("gpt-block-parameters", answer)


HOURS = {
    "another order": lambda n, d, peak, mfu: n * d * 6 / 3600 / mfu / peak,
    "NumPy": lambda n, d, peak, mfu: np.float64(6) * n * d / (np.float64(peak) * mfu * 3600),
    "a float32 tensor": lambda n, d, peak, mfu: torch.tensor(6 * n * d / (peak * mfu) / 3600),
}


@pytest.mark.parametrize("answer", HOURS.values(), ids=HOURS)
def test_other_right_gpu_hours_pass(answer):
    verify("training-gpu-hours", answer)
