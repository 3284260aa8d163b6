"""Where a training step's time goes: torch.profiler over gptlib's float32 Trainer step.

    PYTHONPATH=. python benchmarks/profile_step.py [--steps 30] [--top 12] [--compile]
    PYTHONPATH=. python benchmarks/profile_step.py --nanogpt PATH/model.py   # nanoGPT's step

The model and batch are train_throughput.py's side-by-side ones (L4 h4 d128, block 64,
batch 12, V 65, tied unembedding, biases). After 5 warm-up steps, `--steps` steps are
profiled; the script prints the operators with the largest self CPU time (their share of all
self time, milliseconds per step, calls per step) and the step's wall milliseconds.
"""

from __future__ import annotations

import argparse
import time

from torch.profiler import ProfilerActivity, profile
from train_throughput import (  # the script's folder
    benchmark_data,
    gptlib_as_nanogpt_step_fn,
    load_nanogpt,
    nanogpt_step_fn,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--compile", action="store_true", help="TrainConfig(compile=True)")
    parser.add_argument("--nanogpt", metavar="MODEL_PY", help="profile nanoGPT's step instead")
    args = parser.parse_args()
    data = benchmark_data()
    if args.nanogpt:
        _, step = nanogpt_step_fn(load_nanogpt(args.nanogpt), data)
    else:
        _, step = gptlib_as_nanogpt_step_fn(data, compile=args.compile)
    for _ in range(5):
        step()
    start = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(args.steps):
            step()
    wall = (time.perf_counter() - start) / args.steps
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    print(f"{args.steps} steps profiled: {wall * 1e3:z.1f} ms/step wall (profiler on)")
    print(f"{'operator':40s} {'share':>6s} {'ms/step':>8s} {'calls/step':>10s}")
    for e in sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)[: args.top]:
        print(
            f"{e.key[:40]:40s} {e.self_cpu_time_total / total:z6.1%} "
            f"{e.self_cpu_time_total / args.steps / 1e3:z8.2f} {e.count / args.steps:z10.1f}"
        )


if __name__ == "__main__":
    main()
