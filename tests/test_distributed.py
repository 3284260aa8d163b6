"""Data-parallel training (gptlib.distributed): two CPU processes under torchrun train what one
process trains with the combined batch, and a checkpoint resumes under either."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from gptlib.checkpoint import load_checkpoint
from gptlib.distributed import World

# Two processes sum their halves of the gradient in another order than one process does, and
# run one thread each (torchrun's default) where one process runs two: the curves agree to
# float rounding, which grows over steps. Seen: 3.6e-7 over 24 steps (torch 2.13, AMD EPYC);
# allowed: 1e-4. In float32: bfloat16 products of half a batch round apart by more (1.9e-4).
TOLERANCE = 1e-4
RUN = ["--corpus", "sonnets", "--steps", "24", "--eval-interval", "8", "--eval-batches", "4",
       "--precision", "float32"]  # fmt: skip


def test_each_rank_takes_its_own_rows_of_the_global_batch():
    rows = [World(rank, 3).share(12) for rank in range(3)]
    assert rows == [slice(0, 4), slice(4, 8), slice(8, 12)]
    assert World().share(12) == slice(0, 12)


def test_a_batch_that_does_not_split_says_what_to_use():
    with pytest.raises(ValueError, match=r"batch_size=13 .* 2 processes.*\(e\.g\. 12\)"):
        World(0, 2).share(13)


def test_one_process_averages_nothing():
    assert World().mean([1.5, 2.5]) == [1.5, 2.5]


def _train(tmp_path: Path, name: str, processes: int, *extra: str) -> dict:
    launcher = [sys.executable, "-m", "gptlib"]
    if processes > 1:
        launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
        launcher += [f"--nproc_per_node={processes}", "-m", "gptlib"]
    out = tmp_path / f"{name}.pt"
    args = ["train", *RUN, "--no-progress", "--out", str(out), *extra]
    done = subprocess.run(
        [*launcher, *args], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summaries = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(summaries) == 1, done.stdout  # only rank 0 prints
    return {"summary": json.loads(summaries[0]), "history": _history(out), "path": out}


def _history(path: Path) -> dict:
    return load_checkpoint(path).trainer_state["history"]


def _assert_same_curve(a: dict, b: dict) -> float:
    """Every step's loss and every held-out estimate both runs made (a paused run adds one at
    its pause) agree within TOLERANCE; returns the largest difference."""
    assert a["step"] == b["step"]
    pairs = list(zip(a["train_loss"], b["train_loss"], strict=True))
    val_a = dict(zip(a["eval_step"], a["eval_val_loss"], strict=True))
    val_b = dict(zip(b["eval_step"], b["eval_val_loss"], strict=True))
    shared = sorted(set(val_a) & set(val_b))
    assert shared == [0, 8, 16, 24]
    pairs += [(val_a[s], val_b[s]) for s in shared]
    worst = max(abs(x - y) for x, y in pairs)
    assert worst < TOLERANCE, worst
    return worst


@pytest.mark.slow
def test_two_processes_follow_one_process_and_resume_under_either(tmp_path):
    one = _train(tmp_path, "one", 1)
    two = _train(tmp_path, "two", 2)
    assert two["summary"]["steps"] == one["summary"]["steps"] == 24
    assert two["summary"]["tokens"] == one["summary"]["tokens"]  # the same global batch
    print(f"two processes vs one: {_assert_same_curve(one['history'], two['history']):z.1e}")
    assert one["history"]["train_loss"][-1] < one["history"]["train_loss"][0] - 0.5  # it learns

    # Paused by two processes, finished by one; and the other way round.
    paused = _train(tmp_path, "paused_by_two", 2, "--pause-after", "10")
    assert paused["history"]["step"][-1] == 9
    resumed = _train(tmp_path, "resumed_by_one", 1, "--resume", str(paused["path"]))
    worst = _assert_same_curve(one["history"], resumed["history"])
    print(f"paused by two, resumed by one: {worst:z.1e}")

    paused = _train(tmp_path, "paused_by_one", 1, "--pause-after", "10")
    resumed = _train(tmp_path, "resumed_by_two", 2, "--resume", str(paused["path"]))
    worst = _assert_same_curve(one["history"], resumed["history"])
    print(f"paused by one, resumed by two: {worst:z.1e}")


@pytest.mark.slow
def test_a_batch_the_processes_cannot_split_is_refused_before_training(tmp_path):
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    done = subprocess.run(
        [*launcher, "--nproc_per_node=2", "-m", "gptlib", "train", *RUN, "--batch-size", "13"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode != 0
    assert "error: batch_size=13 does not split evenly over 2 processes" in done.stderr


def test_the_trainer_refuses_fewer_held_out_batches_than_processes():
    from gptlib import GPT, GPTConfig
    from gptlib.train import TrainConfig, Trainer

    ids = torch.arange(200) % 7
    model = GPT(GPTConfig(vocab_size=7, d_model=16, n_heads=2, n_layers=1, max_len=8))
    config = TrainConfig(batch_size=4, block_size=8, eval_batches=1)
    with pytest.raises(ValueError, match="eval_batches=1 .* 2 processes"):
        Trainer(model, ids, ids, config, World(0, 2))
