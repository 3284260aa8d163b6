"""Quality per CPU second: held-out loss on Tiny Shakespeare after 60 s of training.

    PYTHONPATH=. python benchmarks/train_quality.py                 # 60 s budget, wall clock
    PYTHONPATH=. python benchmarks/train_quality.py --steps 1700    # a fixed number of steps

Runs the real command, `python -m gptlib train --corpus tinyshakespeare --time-budget 60`
(the chapter's model, L=4 h=4 d=128, at gptlib's default training settings), in a child
process, and reports its JSON summary, its peak memory and CPU seconds, and the validation
loss estimated like the widely used reference does (200 random batches of 12 × 64 from the
last 10% of the text; it reaches 1.886 after 2000 steps, 123 s). On a machine shared with
other work, `--steps` with the step count a quiet machine reaches in 60 s separates quality
from speed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from _common import machine_line

from gptlib.checkpoint import load_checkpoint
from gptlib.data import BatchSampler, tiny_shakespeare, train_val_split


def held_out_loss(checkpoint_path: Path, batches: int = 200) -> float:
    """Mean loss over `batches` random 12 × 64 windows of the validation split (seed 1337)."""
    checkpoint = load_checkpoint(checkpoint_path)
    model = checkpoint.build_model()
    _, val_ids = train_val_split(checkpoint.tokenizer.encode(tiny_shakespeare()))
    sampler = BatchSampler(val_ids, 12, 64, seed=1337)
    with torch.no_grad():
        return torch.stack([model(*sampler.sample())[1] for _ in range(batches)]).mean().item()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="training time budget")
    parser.add_argument("--steps", type=int, help="train this many steps instead of a budget")
    parser.add_argument("--threads", type=int, help="torch threads in the training process")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "quality.pt"
        command = [sys.executable, "-m", "gptlib", "train", "--corpus", "tinyshakespeare",
                   "--eval-interval", "0", "--no-progress", "--out", str(out)]  # fmt: skip
        if args.steps:
            command += ["--steps", str(args.steps)]
        else:
            command += ["--steps", "1000000", "--time-budget", str(args.seconds)]
        if args.threads:
            command += ["--threads", str(args.threads)]
        done = subprocess.run(command, capture_output=True, text=True, env=os.environ)
        if done.returncode:
            raise SystemExit(f"training failed:\n{done.stderr}")
        summary = json.loads(done.stdout.strip().splitlines()[-1])
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        val = held_out_loss(out)
    print(machine_line())
    shown = ["python"] + [a for a in command[1:] if a != str(out) and a != "--out"]
    print("command:", " ".join(shown))
    print("summary:", json.dumps(summary))
    print(
        f"peak memory of the training process: {usage.ru_maxrss / 1024:z.0f} MB; "
        f"CPU seconds: {usage.ru_utime + usage.ru_stime:z.1f}"
    )
    print(
        f"validation loss (200 batches of 12 × 64): {val:z.3f} after {summary['steps']} steps, "
        f"{summary['seconds']:z.1f} s of training ({summary['tokens_per_s']:z.0f} tokens/s)"
    )


if __name__ == "__main__":
    main()
