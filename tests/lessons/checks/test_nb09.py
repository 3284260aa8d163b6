"""Notebook 09's exercises: right answers written in other ways and other number types pass."""

import numpy as np
import pytest
import torch

from gptlib.lessons.checks import REGISTRY, verify
from gptlib.lessons.experiments.llama_shape import LlamaBlock


def _real_block(d, h, kv, d_ff):
    with torch.device("meta"):  # shapes only: Llama 3 405B's block holds 3.2 billion numbers
        return sum(p.numel() for p in LlamaBlock(d, h, d_ff, kv).parameters())


LLAMA_COUNTS = {
    "a real block": _real_block,
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


MISTAKES = [(name, m) for name in ("llama-block-parameters", "training-gpu-hours")
            for m in REGISTRY[name].mistakes]  # fmt: skip


@pytest.mark.parametrize(("name", "mistake"), MISTAKES, ids=[f"{n}-{m.name}" for n, m in MISTAKES])
def test_mistakes_teach_in_words_first_and_keep_the_line_that_fixes_it(name, mistake):
    for code in ("`", "torch.", "*", "//", "return", "="):
        assert code not in mistake.message, f"{name}/{mistake.name}: {code!r} in the message"
    assert mistake.fix, f"{name}/{mistake.name}: no fix"
