"""Make notebook 08's long runs and store them in gptlib/data/nb08_runs.json.

    python scripts/nb08_runs.py chapter            # the chapter's GPT, 5,000 steps (~8 min)
    python scripts/nb08_runs.py ladder --jobs 2    # the ablation ladder (~10 min on 2 cores)

Every run uses the reference training loop and batch function of notebook 08's exercises (the
`train` and `get-batch` exercises of `gptlib.lessons.nb08.checks`), on one thread, so the notebook's
live runs of the student's loop land on the stored curves. `ladder` trains every rung on every seed
at the chapter's learning rate; it keeps what is already in the file, so it can be run in pieces:
`--minutes` stops starting new runs after that long. Run it again until it says nothing is left.
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
from gptlib.lessons.nb08.experiments.ablation import RUNGS, train_rung
from gptlib.lessons.nb08.experiments.long_runs import RUNS, Curves, fixed_batches

TRAIN, GET_BATCH = REGISTRY["train"].reference, REGISTRY["get-batch"].reference
CHAPTER = {"steps": 5000, "lr": 3e-3, "eval_every": 50, "eval_batches": 10, "batch_size": 12,
           "block_size": 64, "seed": 0, "init": "gpt2", "embedding_std": 1.0}  # fmt: skip
LADDER_SETTINGS = {"steps": 4000, "eval_every": 250, "eval_batches": 20, "batch_size": 12,
                   "block_size": 64, "d_model": 64, "n_layers": 2, "n_heads": 4}  # fmt: skip
LR, SEEDS = 3e-3, (0, 1, 2)


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


def ladder_run(config: str, seed: int) -> dict:
    torch.set_num_threads(1)
    train_ids, val_ids, V = corpus()
    s = LADDER_SETTINGS
    start = time.perf_counter()
    curves = train_rung(TRAIN, GET_BATCH, RUNGS[config], train_ids, val_ids, V, lr=LR,
                        steps=s["steps"], eval_every=s["eval_every"], seed=seed,
                        n_eval=s["eval_batches"])  # fmt: skip
    data = curves.to_dict()
    del data["losses"]  # the estimates are enough for the ladder
    return {"config": config, "seed": seed, "seconds": round(time.perf_counter() - start, 1),
            **data}  # fmt: skip


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


def ladder_jobs(data: dict) -> list[tuple[str, int]]:
    """The runs still to make: every rung on every seed."""
    ladder = data.setdefault("ladder", {})
    ladder.update(settings=LADDER_SETTINGS, lr=LR, seeds=list(SEEDS),
                  steps=LADDER_SETTINGS["steps"])  # fmt: skip
    done = {(r["config"], r["seed"]) for r in ladder.setdefault("runs", [])}
    return [(c, s) for s in SEEDS for c in RUNGS if (c, s) not in done]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=["chapter", "ladder"])
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
    deadline = time.monotonic() + 60 * args.minutes
    running: dict = {}  # future → job
    with ProcessPoolExecutor(args.jobs) as pool:
        while True:
            jobs = [j for j in ladder_jobs(data) if j not in running.values()]
            while jobs and len(running) < args.jobs and time.monotonic() < deadline:
                job = jobs.pop(0)
                running[pool.submit(ladder_run, *job)] = job
            if not running:
                break
            future = next(as_completed(running))
            del running[future]
            run = future.result()
            data["ladder"]["runs"].append(run)
            write(data)
            print(f"{run['config']:20s} seed={run['seed']} val {run['val'][-1]:z.3f} "
                  f"({run['seconds']} s)", flush=True)  # fmt: skip
    left = ladder_jobs(data)
    print(f"{len(left)} runs left" if left else "complete")


if __name__ == "__main__":
    main()
