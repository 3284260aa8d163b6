"""Quality per CPU second: held-out loss on Tiny Shakespeare after 60 s of training.

    PYTHONPATH=. python benchmarks/train_quality.py                 # 60 s budget, wall clock
    PYTHONPATH=. python benchmarks/train_quality.py --steps 1700    # a fixed number of steps
    PYTHONPATH=. python benchmarks/train_quality.py --reference     # the chapter's code too

Runs the real command, `python -m gptlib train --corpus tinyshakespeare --time-budget 60`
(the command's defaults: one of the chapter's blocks, L=1 h=4 d=128, `gptlib/cli.py`), in a child
process, and reports its JSON summary, its peak memory and CPU seconds, and the validation
loss estimated like the widely used reference does (200 random batches of 12 × 64 from the
last 10% of the text; it reaches 1.886 after 2000 steps, 123 s). On a machine shared with
other work, `--steps` with the step count a quiet machine reaches in 60 s separates quality
from speed. `--reference` then trains the chapter's model (benchmarks/_chapter.py) in a plain
loop the same way in this process, at the command's default shape and schedule, for the same
seconds of steps, and reports its held-out loss estimated alike: the same-hour comparison; as
written (float32) and, where the command picks bfloat16 matrix products, under the same autocast.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
from _chapter import chapter_gpt
from _common import machine_line

from gptlib.checkpoint import load_checkpoint
from gptlib.cli import DEFAULTS, MODEL_DEFAULTS
from gptlib.data import BatchSampler, CharTokenizer, tiny_shakespeare, train_val_split
from gptlib.train import learning_rate, make_optimizer


def held_out_loss(loss_of: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], val_ids,
                  batches: int = 200) -> float:  # fmt: skip
    """Mean loss over `batches` random 12 × 64 windows of the validation split (seed 1337)."""
    sampler = BatchSampler(val_ids, 12, 64, seed=1337)
    with torch.no_grad():
        return torch.stack([loss_of(*sampler.sample()) for _ in range(batches)]).mean().item()


def checkpoint_loss(checkpoint_path: Path) -> float:
    checkpoint = load_checkpoint(checkpoint_path)
    model = checkpoint.build_model()
    _, val_ids = train_val_split(checkpoint.tokenizer.encode(tiny_shakespeare()))
    return held_out_loss(lambda x, y: model(x, y)[1], val_ids)


def train_chapter_code(seconds: float, precision: str) -> tuple[float, int]:
    """The chapter's model code at the command's default shape, trained with the command's
    default schedule (AdamW, warmup, cosine, clipping) for `seconds` of steps, its forward pass
    under the Trainer's autocast when `precision` is "bfloat16": (loss, steps)."""
    text = tiny_shakespeare()
    tokenizer = CharTokenizer.from_text(text)
    train_ids, val_ids = train_val_split(tokenizer.encode(text))
    c, m = DEFAULTS, MODEL_DEFAULTS
    torch.manual_seed(c.seed)
    model = chapter_gpt(tokenizer.vocab_size, m["d_model"], m["n_heads"], m["n_layers"],
                        c.block_size)  # fmt: skip
    optimizer = make_optimizer(model, c)
    sampler = BatchSampler(train_ids, c.batch_size, c.block_size, seed=c.seed)

    def loss_of(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return model(x, y)[1]

    step, spent = 0, 0.0
    while spent < seconds:
        start = time.perf_counter()
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, spent / seconds, c)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bfloat16"):
            loss = loss_of(*sampler.sample())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), c.grad_clip)
        optimizer.step()
        step += 1
        spent += time.perf_counter() - start
    model.eval()
    return held_out_loss(loss_of, val_ids), step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="training time budget")
    parser.add_argument("--steps", type=int, help="train this many steps instead of a budget")
    parser.add_argument("--threads", type=int, help="torch threads in the training process")
    parser.add_argument(
        "--reference", action="store_true", help="also train the chapter's code the same way"
    )
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
        val = checkpoint_loss(out)
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
    if args.reference:
        if args.threads:
            torch.set_num_threads(args.threads)
        for precision in dict.fromkeys(("float32", summary["precision"])):
            loss, steps = train_chapter_code(summary["seconds"], precision)
            print(
                f"the chapter's code, same shape and schedule, {precision} matrix products, "
                f"{summary['seconds']:z.1f} s: validation loss {loss:z.3f} after {steps} steps"
            )


if __name__ == "__main__":
    main()
