"""Notebook 09's exercises: right answers written in other ways and other number types pass."""

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from gptlib.lessons.engine.checks import REGISTRY, verify
from gptlib.lessons.nb09.checks import _flops_per_token
from gptlib.lessons.nb09.experiments.costs import architecture_of, parameter_counts
from gptlib.lessons.nb09.experiments.llama_shape import LlamaBlock
from gptlib.lessons.shared.experiments.variants import Variant, build_gpt
from gptlib.model import GPTConfig


def _real_block(d, h, kv, d_ff):
    with torch.device("meta"):  # shapes only: Llama 3 405B's block holds 3.2 billion numbers
        return sum(p.numel() for p in LlamaBlock(d, h, d_ff, kv).parameters())


LLAMA_COUNTS = {
    "a float formula": lambda d, h, kv, d_ff: 2.0 * d * d * (1 + kv / h) + 3.0 * d * d_ff + 2 * d,
    "NumPy integers by part": lambda d, h, kv, d_ff: (
        np.int64(d) * d * 2 + np.int64(2) * d * (kv * (d // h)) + np.int64(3) * d * d_ff + 2 * d
    ),
}


@pytest.mark.parametrize("answer", LLAMA_COUNTS.values(), ids=LLAMA_COUNTS)
def test_other_right_llama_block_counts_pass(answer):
    assert verify("llama-block-parameters", answer) == len(
        REGISTRY["llama-block-parameters"].inputs()
    )


HOURS = {
    "another order": lambda n, d, peak, mfu: n * d * 6 / 3600 / mfu / peak,
    "NumPy": lambda n, d, peak, mfu: np.float64(6) * n * d / (np.float64(peak) * mfu * 3600),
    "a float32 tensor": lambda n, d, peak, mfu: torch.tensor(6 * n * d / (peak * mfu) / 3600),
}


@pytest.mark.parametrize("answer", HOURS.values(), ids=HOURS)
def test_other_right_gpu_hours_pass(answer):
    verify("training-gpu-hours", answer)


def _flops_by_name(model, idx, targets=None):
    """Op names as strings, the total as the sum of the counts, two counters for training."""
    counters = [FlopCounterMode(display=False), FlopCounterMode(display=False)]
    with counters[0]:
        out = model(idx) if targets is None else model(idx, targets)
    if targets is not None:
        with counters[1]:
            out[1].backward()
    by_op = {}
    for counter in counters:
        for op, n in counter.get_flop_counts().get("Global", {}).items():
            by_op[str(op)] = by_op.get(str(op), 0) + n
    return sum(by_op.values()) / idx.numel(), by_op.get("aten.bmm", 0) / idx.numel()


def _flops_by_autograd_grad(model, idx, targets=None):
    """torch.autograd.grad for the weights that train; float64 tensors out."""
    with FlopCounterMode(display=False) as counter:
        if targets is None:
            model(idx)
        else:
            loss = model(idx, targets)[1]
            torch.autograd.grad(loss, [p for p in model.parameters() if p.requires_grad])
    counts = counter.get_flop_counts()["Global"]
    B, T = idx.shape
    total = torch.tensor(counter.get_total_flops(), dtype=torch.float64)
    return total / (B * T), torch.tensor(counts.get(torch.ops.aten.bmm, 0) / B / T)


def _flops_weights_then_attention(model, idx, targets=None):
    """The attention as what the weight products (mm, addmm) leave, in integer arithmetic."""
    with FlopCounterMode(display=False) as counter:
        if targets is not None:
            model(idx, targets)[1].backward()
        else:
            model(idx)
    counts = {str(op).split(".")[-1]: n for op, n in counter.get_flop_counts()["Global"].items()}
    total = counter.get_total_flops()
    weights = counts.get("mm", 0) + counts.get("addmm", 0)
    return total // idx.numel(), (total - weights) // idx.numel()


FLOPS = {
    "op names as strings, two counters": _flops_by_name,
    "autograd.grad, float64 tensors": _flops_by_autograd_grad,
    "integers, attention by subtraction": _flops_weights_then_attention,
}


@pytest.mark.parametrize("answer", FLOPS.values(), ids=FLOPS)
def test_other_right_flop_counts_pass(answer):
    assert verify("flops-per-token", answer) == len(REGISTRY["flops-per-token"].inputs())


def test_counted_flops_agree_with_the_weights_and_the_attention_term():
    """Written-out attention: forward 2·(matrix weights) + 4·L·T·d per token, of which the
    batched products are 4·L·T·d; a training pass exactly three forward passes."""
    config = GPTConfig(vocab_size=13, d_model=48, n_heads=3, n_layers=3, max_len=10)
    model = build_gpt(config, Variant(attention="written-out"))
    idx = torch.randint(0, 13, (4, 10), generator=torch.Generator().manual_seed(1))
    weights = parameter_counts(architecture_of(config)).matmul_weights
    attention = 4 * 3 * 10 * 48
    assert _flops_per_token(model, idx) == (2 * weights + attention, attention)
    assert _flops_per_token(model, idx, idx) == (3 * (2 * weights + attention), 3 * attention)


NAMES = sorted(name for name, e in REGISTRY.items() if e.notebook == "09_cost_accounting")
MISTAKES = [(name, m) for name in NAMES for m in REGISTRY[name].mistakes]


@pytest.mark.parametrize(("name", "mistake"), MISTAKES, ids=[f"{n}-{m.name}" for n, m in MISTAKES])
def test_mistakes_teach_in_words_first_and_keep_the_line_that_fixes_it(name, mistake):
    for code in ("`", "torch.", "*", "//", "return", "="):
        assert code not in mistake.message, f"{name}/{mistake.name}: {code!r} in the message"
    assert mistake.fix, f"{name}/{mistake.name}: no fix"


# ---------------------------------------------------------------- read for every exercise
# tests/lessons/engine/checks/test_every_exercise.py runs, for each exercise of this lesson,
# every right answer written another way (at least two) through its check, and holds the one
# named in INDEPENDENT, which shares no code with the reference, to not copying its formula.
RIGHT_ANSWERS = {
    "llama-block-parameters": LLAMA_COUNTS,
    "flops-per-token": FLOPS,
    "training-gpu-hours": HOURS,
}
INDEPENDENT = {
    "llama-block-parameters": "a float formula",
    "flops-per-token": "op names as strings, two counters",
    "training-gpu-hours": "another order",
}
