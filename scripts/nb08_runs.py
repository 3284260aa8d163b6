"""Make notebook 08's long runs and store them in gptlib/data/nb08_runs.json.

    python scripts/nb08_runs.py chapter            # the chapter's GPT, 5,000 steps (~8 min)
    python scripts/nb08_runs.py ablation --jobs 2  # leave-one-out, 36 runs (~22 min on 2 cores)
    python scripts/nb08_runs.py lookups            # the two-lookups task on 3 seeds (~1 min)

Every run uses the reference training loop and batch function of notebook 08's exercises (the
`train` and `get-batch` exercises of `gptlib.lessons.nb08.checks`), on one thread, so the notebook's
live runs of the student's loop land on the stored curves. `ablation` trains every row of the
leave-one-out table on every seed at the chapter's learning rate, every row on seed 0 at a second
rate, and the rows still falling at the end on seed 0 for twice the steps; each run ends with its
loss on every held-out character. It keeps what is already in the file, so it can be run in
pieces: `--minutes` stops starting new runs after that long. Run it again until it says nothing is
left.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

import torch

import gptlib
from gptlib import GPT, GPTConfig
from gptlib.data import CharTokenizer, tiny_shakespeare, train_val_split
from gptlib.lessons.engine.checks import REGISTRY
from gptlib.lessons.nb08.experiments.ablation import (
    BY_NAME,
    held_out_loss,
    held_out_windows,
    train_row,
)
from gptlib.lessons.nb08.experiments.long_runs import RUNS, Curves, fixed_batches
from gptlib.lessons.nb08.experiments.two_lookups import TwoLookups, evaluate_heads, train_heads

TRAIN, GET_BATCH = REGISTRY["train"].reference, REGISTRY["get-batch"].reference
CHAPTER = {"steps": 5000, "lr": 3e-3, "eval_every": 50, "eval_batches": 10, "batch_size": 12,
           "block_size": 64, "seed": 0, "init": "gpt2", "embedding_std": 1.0}  # fmt: skip
ABLATION = {"steps": 3000, "eval_every": 250, "eval_batches": 20, "batch_size": 12,
            "block_size": 64, "d_model": 64, "n_layers": 2, "n_heads": 4}  # fmt: skip
LR, OTHER_LR, SEEDS = 3e-3, 1e-3, (0, 1, 2)
LONGER, LONGER_ROWS = 6000, ("no positions", "no MLP", "no residuals", "no attention")
LOOKUPS = {"steps": 500, "lr": 1e-2, "held_out_seed": 12345, "held_out": 512}


def corpus() -> tuple[torch.Tensor, torch.Tensor, int]:
    tokenizer = CharTokenizer.from_text(tiny_shakespeare())
    train_ids, val_ids = train_val_split(tokenizer.encode(tiny_shakespeare()))
    return train_ids, val_ids, tokenizer.vocab_size


def chapter_run() -> dict:
    """The chapter's GPT as notebook 08 builds it (GPT-2's initialisation, embeddings N(0, 1),
    64 positions), trained by the reference loop at the chapter's learning rate."""
    c = CHAPTER
    train_ids, val_ids, V = corpus()
    gptlib.seed_everything(c["seed"])
    model = GPT(GPTConfig(vocab_size=V, max_len=c["block_size"]), embedding_std=c["embedding_std"])
    generator = torch.Generator().manual_seed(c["seed"])
    batches = fixed_batches(GET_BATCH, train_ids, val_ids, c["eval_batches"], 12, 64)
    start = time.perf_counter()
    out = TRAIN(model, lambda: GET_BATCH(train_ids, 12, 64, generator), batches, c["steps"],
                c["lr"], c["eval_every"])  # fmt: skip
    seconds = round(time.perf_counter() - start, 1)
    return {"settings": {**c, "seconds": seconds}, **Curves.of(out).to_dict()}


def ablation_run(config: str, seed: int, lr: float, steps: int) -> dict:
    torch.set_num_threads(1)
    train_ids, val_ids, V = corpus()
    s = ABLATION
    start = time.perf_counter()
    model, curves = train_row(TRAIN, GET_BATCH, BY_NAME[config], train_ids, val_ids, V, lr=lr,
                              steps=steps, eval_every=s["eval_every"], seed=seed,
                              n_eval=s["eval_batches"])  # fmt: skip
    held_out = held_out_loss(model, *held_out_windows(val_ids, s["block_size"]))
    data = curves.to_dict()
    del data["losses"]  # the estimates are enough for the table
    return {"config": config, "seed": seed, "lr": lr, "held_out": round(held_out, 4),
            "seconds": round(time.perf_counter() - start, 1), **data}  # fmt: skip


def lookups_runs() -> dict:
    """The two-lookups models of notebook 08 (1, 2 and 4 heads, and 4 without positions) on
    seeds 0-2, scored on the notebook's held-out sequences."""
    task, c = TwoLookups(), LOOKUPS
    held_out = task.sample(c["held_out"], torch.Generator().manual_seed(c["held_out_seed"]))
    runs = []
    for seed in SEEDS:
        for heads, positions in ((1, "learned"), (2, "learned"), (4, "learned"), (4, "none")):
            model = train_heads(TRAIN, heads, task, lr=c["lr"], steps=c["steps"], seed=seed,
                                positions=positions)  # fmt: skip
            r = evaluate_heads(model, task, held_out)
            runs.append({"seed": seed, "n_heads": heads, "positions": positions,
                         **{k: round(getattr(r, k), 4) for k in
                            ("loss", "accuracy", "letter_weight", "digit_weight")}})  # fmt: skip
    return {"settings": {**c, "seeds": list(SEEDS)}, "runs": runs}


def read() -> dict:
    return json.loads(RUNS.read_text()) if RUNS.exists() else {}


def write(data: dict) -> None:
    data["about"] = (
        "Written by scripts/nb08_runs.py, never by hand: notebook 08's long runs, made with "
        "the reference training loop of its exercises."
    )
    data["made_with"] = {"torch": torch.__version__, "machine": platform.machine(),
                         "cpus": os.cpu_count(), "threads": 1}  # fmt: skip
    tmp = RUNS.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    tmp.replace(RUNS)


def ablation_jobs(data: dict) -> list[tuple[str, int, float, int]]:
    """The runs still to make, as (row, seed, learning rate, steps): every row on every seed at
    LR, every row on seed 0 at OTHER_LR, then the rows still falling at the end on seed 0 for
    LONGER steps (whose first steps repeat the shorter run's exactly)."""
    ablation = data.setdefault("ablation", {})
    steps = ABLATION["steps"]
    ablation.update(settings=ABLATION, lr=LR, other_lr=OTHER_LR, seeds=list(SEEDS), steps=steps,
                    longer=LONGER, longer_rows=list(LONGER_ROWS))  # fmt: skip
    done = {
        (r["config"], r["seed"], r["lr"], r["eval_steps"][-1])
        for r in ablation.setdefault("runs", [])
    }
    wanted = (
        [(c, s, LR, steps) for s in SEEDS for c in BY_NAME]
        + [(c, 0, OTHER_LR, steps) for c in BY_NAME]
        + [(c, 0, LR, LONGER) for c in LONGER_ROWS]
    )
    return [j for j in wanted if j not in done]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=["chapter", "ablation", "lookups"])
    parser.add_argument("--jobs", type=int, default=1, help="runs at once, one thread each")
    parser.add_argument("--minutes", type=float, default=8.0, help="start no run after this")
    args = parser.parse_args()
    torch.set_num_threads(1)
    data = read()
    if args.part == "chapter":
        data["chapter"] = chapter_run()
        write(data)
        print(f"chapter: {data['chapter']['settings']['seconds']} s")
        return
    if args.part == "lookups":
        data["lookups"] = lookups_runs()
        write(data)
        print("\n".join(map(str, data["lookups"]["runs"])))
        return
    data.pop("ladder", None)  # the ladder this table replaced (issue 43)
    deadline = time.monotonic() + 60 * args.minutes
    running: dict = {}  # future → job
    with ProcessPoolExecutor(args.jobs) as pool:
        while True:
            jobs = [j for j in ablation_jobs(data) if j not in running.values()]
            while jobs and len(running) < args.jobs and time.monotonic() < deadline:
                job = jobs.pop(0)
                running[pool.submit(ablation_run, *job)] = job
            if not running:
                break
            future = next(as_completed(running))
            del running[future]
            run = future.result()
            data["ablation"]["runs"].append(run)
            write(data)
            print(f"{run['config']:15s} seed={run['seed']} lr={run['lr']:zg} "
                  f"steps={run['eval_steps'][-1]} held-out "
                  f"{run['held_out']:z.3f} ({run['seconds']} s)", flush=True)  # fmt: skip
    left = ablation_jobs(data)
    print(f"{len(left)} runs left" if left else "complete")


if __name__ == "__main__":
    main()
