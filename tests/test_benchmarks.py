"""The benchmark scripts' own parts (benchmarks/): what they time is what their tables say.

The timings themselves are never asserted (they live in the scripts' printed tables); these
tests check the alternation, and that the side-by-side candidate is nanoGPT's model and
optimiser (sizes, groups, betas, clipping) counted by hand from nanoGPT's shapes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))  # the scripts import their neighbours, as when they run

import _common  # noqa: E402
import train_throughput  # noqa: E402

# nanoGPT at L4 h4 d128, block 64, V 65, bias=True, tied unembedding, by hand:
D, L, T, V = 128, 4, 64, 65
MATRICES = V * D + T * D + L * (D * 3 * D + D * D + D * 4 * D + 4 * D * D)  # wte, wpe, blocks
VECTORS = L * (2 * D + 3 * D + D + 2 * D + 4 * D + D) + 2 * D  # LayerNorms and biases, ln_f


def test_interleaved_medians_alternate_the_candidates_and_take_each_ones_median():
    calls: list[str] = []
    per_call = {"a": iter([1, 1, 5, 5, 3, 3]), "b": iter([2, 2, 2, 2, 9, 9])}  # seconds
    now = [0.0]

    def candidate(name: str):
        def step() -> None:
            calls.append(name)
            now[0] += next(per_call[name])

        return step

    medians = _common.interleaved_medians(
        {"a": candidate("a"), "b": candidate("b")}, rounds=3, per_round=2, clock=lambda: now[0]
    )
    assert calls == ["a", "a", "b", "b"] * 3
    assert medians == {"a": 3.0, "b": 2.0}  # rounds of a: 1, 5, 3; of b: 2, 2, 9


def test_the_side_by_side_candidate_is_nanogpts_model_and_optimiser():
    model, step = train_throughput.gptlib_as_nanogpt_step_fn(train_throughput.benchmark_data())
    assert model.lm_head.weight is model.tok_emb.weight  # tied, as nanoGPT's wte / lm_head
    assert sum(p.numel() for p in model.parameters()) == MATRICES + VECTORS == 809_856
    trainer = step.__self__
    decay, no_decay = trainer.optimizer.param_groups
    assert (len(decay["params"]), sum(p.numel() for p in decay["params"])) == (18, MATRICES)
    assert (len(no_decay["params"]), sum(p.numel() for p in no_decay["params"])) == (34, VECTORS)
    assert (decay["weight_decay"], no_decay["weight_decay"]) == (0.1, 0.0)
    assert decay["betas"] == (0.9, 0.99)  # nanoGPT's train.py with beta2 0.99
    assert (trainer.config.grad_clip, trainer.config.batch_size, trainer.config.block_size) == (
        1.0,
        12,
        64,
    )
    before = model.tok_emb.weight.detach().clone()
    step()
    assert not torch.equal(before, model.tok_emb.weight)


def test_the_chapter_candidate_writes_its_softmax_out_and_keeps_its_own_unembedding():
    model = train_throughput.chapter_gpt(V)
    assert all(block.attn.fused is False for block in model.blocks)
    assert model.lm_head.weight is not model.tok_emb.weight
    lm_head = V * D  # its own unembedding, no bias
    assert sum(p.numel() for p in model.parameters()) == MATRICES + VECTORS + lm_head


def test_a_nanogpt_path_that_is_no_python_file_is_refused_by_name(tmp_path):
    path = tmp_path / "model.txt"
    path.write_text("")
    with pytest.raises(SystemExit, match="model.txt is not a Python file"):
        train_throughput.load_nanogpt(str(path))
