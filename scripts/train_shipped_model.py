"""Train the model that ships with gptlib (gptlib/data/shakespeare_gpt.pt) and write its manifest.

    python scripts/train_shipped_model.py              # about 15 minutes on a 2-core laptop
    python scripts/train_shipped_model.py --check      # only re-measure the shipped file

The chapter's GPT (L=4, h=4, d=128) on Tiny Shakespeare, trained by the project's own command
(`python -m gptlib train`, with `torchrun` when --processes > 1) for a fixed number of steps, so
a rerun repeats it (to float rounding on another CPU). The optimizer state is dropped: what
ships is the weights, the tokenizer and the run's numbers (`meta`). The manifest beside it holds
the file's SHA-256 (checked by `gptlib.trained.load_shakespeare_gpt`), its size, the command,
and the held-out loss over the whole validation split (the last 10% of the text, cut into
consecutive windows), which is what notebooks 01, 04, 05 and 08 quote.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from gptlib.checkpoint import load_checkpoint, save_checkpoint
from gptlib.data import tiny_shakespeare, train_val_split
from gptlib.trained import MANIFEST, WEIGHTS, sha256_of

# The chapter's shape (4 layers of 4 heads, d = 128) with 128 positions, batches of 24 windows,
# GPT-2's initialisation and float32 throughout (the command's defaults when the model was made).
STEPS = 4000
TRAIN_ARGS = ["--corpus", "tinyshakespeare", "--n-layers", "4", "--n-heads", "4", "--d-model",
              "128", "--block-size", "128", "--batch-size", "24", "--steps", str(STEPS), "--lr",
              "5e-3", "--warmup", "100", "--eval-interval", "500", "--init", "gpt2",
              "--precision", "float32", "--no-progress"]  # fmt: skip


@torch.no_grad()
def whole_split_loss(path: Path) -> tuple[float, int]:
    """Mean next-character loss over every position of the validation split, and the count."""
    checkpoint = load_checkpoint(path)
    model = checkpoint.build_model().eval()
    _, val_ids = train_val_split(checkpoint.tokenizer.encode(tiny_shakespeare()))
    T = model.config.max_len
    n = (len(val_ids) - 1) // T
    x = val_ids[: n * T].view(n, T)
    y = val_ids[1 : n * T + 1].view(n, T)
    batches = zip(x.split(64), y.split(64), strict=True)
    total = sum(model(xb, yb)[1].item() * len(xb) for xb, yb in batches)
    return total / n, n * T


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=1, help="torchrun processes")
    parser.add_argument("--check", action="store_true", help="measure the shipped file only")
    args = parser.parse_args()
    if args.check:
        loss, tokens = whole_split_loss(WEIGHTS)
        manifest = json.loads(MANIFEST.read_text())
        print(f"sha256 {sha256_of(WEIGHTS)} (manifest: {manifest['sha256']})")
        print(f"held-out loss {loss:z.4f} over {tokens:,} positions "
              f"(manifest: {manifest['val_loss']:z.4f})")  # fmt: skip
        return
    launcher = [sys.executable, "-m", "gptlib"]
    if args.processes > 1:
        launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                    f"--nproc_per_node={args.processes}", "-m", "gptlib"]  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run.pt"
        command = [*launcher, "train", *TRAIN_ARGS, "--out", str(run)]
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        wall = time.perf_counter() - start
        if done.returncode:
            raise SystemExit(f"training failed:\n{done.stderr[-4000:]}")
        summary = json.loads(done.stdout.strip().splitlines()[-1])
        checkpoint = load_checkpoint(run)
        model = checkpoint.build_model()
        history = checkpoint.trainer_state["history"]
        meta = {
            "corpus": "tinyshakespeare",
            "made_by": "scripts/train_shipped_model.py",
            "summary": summary,
            "eval_step": history["eval_step"],
            "eval_val_loss": history["eval_val_loss"],
        }
        save_checkpoint(WEIGHTS, model, checkpoint.tokenizer, meta=meta)
    loss, tokens = whole_split_loss(WEIGHTS)
    shown = ["python", "-m", "gptlib"] if args.processes == 1 else launcher[1:]
    manifest = {
        "sha256": sha256_of(WEIGHTS),
        "bytes": WEIGHTS.stat().st_size,
        "command": " ".join([*shown, "train", *TRAIN_ARGS]),
        "processes": args.processes,
        "steps": summary["steps"],
        "train_seconds": summary["seconds"],
        "wall_seconds": round(wall, 1),
        "val_loss": round(loss, 4),
        "val_positions": tokens,
        "torch": torch.__version__,
    }
    MANIFEST.write_text(json.dumps(manifest, indent=2) + "\n")
    print(json.dumps(manifest, indent=2))


if __name__ == "__main__":
    main()
