"""Notebook 09's exercises: right answers written in other ways and other number types pass."""

import numpy as np
import pytest
import torch

from gptlib.lessons.checks import verify
from gptlib.lessons.experiments.llama_shape import LlamaBlock

LLAMA_COUNTS = {
    "a real block": lambda d, h, kv, d_ff: sum(
        p.numel() for p in LlamaBlock(d, h, d_ff, kv).parameters()
    ),
    "a float formula": lambda d, h, kv, d_ff: 2.0 * d * d * (1 + kv / h) + 3.0 * d * d_ff + 2 * d,
    "NumPy integers by part": lambda d, h, kv, d_ff: (
        np.int64(d) * d * 2 + np.int64(2) * d * (kv * (d // h)) + np.int64(3) * d * d_ff + 2 * d
    ),
}


@pytest.mark.parametrize("answer", LLAMA_COUNTS.values(), ids=LLAMA_COUNTS)
def test_other_right_llama_block_counts_pass(answer):
    assert verify("llama-block-parameters", answer) == 4


HOURS = {
    "another order": lambda n, d, peak, mfu: n * d * 6 / 3600 / mfu / peak,
    "NumPy": lambda n, d, peak, mfu: np.float64(6) * n * d / (np.float64(peak) * mfu * 3600),
    "a float32 tensor": lambda n, d, peak, mfu: torch.tensor(6 * n * d / (peak * mfu) / 3600),
}


@pytest.mark.parametrize("answer", HOURS.values(), ids=HOURS)
def test_other_right_gpu_hours_pass(answer):
    verify("training-gpu-hours", answer)
