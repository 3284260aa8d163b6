"""Training throughput at the reference config: gptlib vs the chapter's code written plainly.

    PYTHONPATH=. python benchmarks/train_throughput.py [--rounds 15] [--threads N] [--processes 2]

Config: L=4, h=4, d=128, block 64, batch 12, V=65 (the widely used reference measures about
19.7k tokens/s, 39 ms per step, on the 2-core machine this project targets). Both loops run
in alternation in one process, so load on a shared machine hits them alike; the script prints
median milliseconds per step, tokens per second, their ratio, and the achieved FLOP/s as a
share of this CPU's measured fp32 matmul peak. The data-parallel candidate is gptlib's Trainer
in `--processes` processes of one thread each (torch.distributed, gloo), each computing its
share of the same batch of 12: the thread layout `torchrun --nproc_per_node=2` gives. Its
workers wait on a pipe while the other candidates run, so the alternation holds for it too.
Where this CPU multiplies bfloat16 natively (`gptlib.device.fast_precision`), two more: gptlib
with bfloat16 matrix products (what `python -m gptlib train` picks there) and, as a control, the
chapter's code under the same autocast. Shares of peak are of the float32 peak.
"""

from __future__ import annotations

import argparse
import multiprocessing
import socket
import time
from collections.abc import Callable
from multiprocessing.connection import Connection

import torch
import torch.distributed as dist
from _chapter import chapter_gpt  # the script's folder
from _common import interleaved_medians, machine_line
from torch.utils.flop_counter import FlopCounterMode

from gptlib import GPTConfig
from gptlib.device import fast_precision
from gptlib.distributed import World
from gptlib.lessons.nb09.experiments.costs import measure_matmul_peak
from gptlib.lessons.shared.experiments.variants import Variant, build_gpt
from gptlib.train import TrainConfig, Trainer

B, T, V = 12, 64, 65


def chapter_step_fn(data: torch.Tensor, precision: str = "float32"):
    """The chapter's loop body; with "bfloat16", its forward pass under the same autocast
    gptlib's Trainer uses (a control: how much of gptlib's lead mixed precision alone gives)."""
    model = chapter_gpt(V)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    enabled = precision == "bfloat16"

    def step() -> None:
        ix = torch.randint(len(data) - T - 1, (B,))
        x = torch.stack([data[i : i + T] for i in ix])
        y = torch.stack([data[i + 1 : i + T + 1] for i in ix])
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=enabled):
            loss = model(x, y)[1]
        opt.zero_grad()
        loss.backward()
        opt.step()

    return model, step


def benchmark_data() -> torch.Tensor:
    torch.manual_seed(0)
    return torch.randint(V, (200_000,))


def gptlib_step_fn(
    data: torch.Tensor, attention: str, world: World | None = None, precision: str = "float32"
):
    model = build_gpt(GPTConfig(vocab_size=V, max_len=T), Variant(attention=attention))
    config = TrainConfig(steps=10**9, batch_size=B, block_size=T, precision=precision)
    trainer = Trainer(model, data, data[:1000], config, world)
    return model, trainer.train_step


def _rank_main(rank: int, size: int, port: int, commands: Connection) -> None:
    """One data-parallel worker: a training step each time the pipe says "step"."""
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=size
    )
    _, step = gptlib_step_fn(benchmark_data(), "fused", World(rank, size))
    while commands.recv() == "step":
        step()
        commands.send("done")
    dist.destroy_process_group()


def data_parallel_step_fn(size: int) -> tuple[Callable[[], None], Callable[[], None]]:
    """(one step over `size` worker processes, a function that stops them)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    context = multiprocessing.get_context("spawn")
    pipes, workers = [], []
    for rank in range(size):
        mine, theirs = context.Pipe()
        worker = context.Process(target=_rank_main, args=(rank, size, port, theirs), daemon=True)
        worker.start()
        pipes.append(mine)
        workers.append(worker)

    def step() -> None:
        for pipe in pipes:
            pipe.send("step")
        for pipe in pipes:
            pipe.recv()

    def stop() -> None:
        for pipe in pipes:
            pipe.send("stop")
        for worker in workers:
            worker.join(timeout=30)

    return step, stop


def flops_per_step(model: torch.nn.Module, data: torch.Tensor) -> int:
    """Matmul FLOPs of one forward + backward pass, counted by torch."""
    x, y = data[:T].repeat(B, 1), data[1 : T + 1].repeat(B, 1)
    with FlopCounterMode(display=False) as counter:
        model(x, y)[1].backward()
    model.zero_grad()
    return counter.get_total_flops()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="alternations of 4 steps each")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    parser.add_argument(
        "--processes",
        type=int,
        default=2,
        help="processes of the data-parallel candidate (0: leave it out)",
    )
    parser.add_argument(
        "--cpu-time",
        action="store_true",
        help="time in CPU seconds of this process (use with --threads 1 on a busy machine)",
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    data = benchmark_data()
    chapter_model, chapter_step = chapter_step_fn(data)
    candidates = {
        "chapter code (explicit attention, AdamW)": chapter_step,
        "gptlib (SDPA, fused AdamW, clipping)": gptlib_step_fn(data, "fused")[1],
        "gptlib, written-out attention": gptlib_step_fn(data, "written-out")[1],
    }
    if fast_precision(torch.device("cpu")) == "bfloat16":  # what `gptlib train` picks here
        bf16 = "fused", None, "bfloat16"
        candidates["gptlib, bfloat16 matrix products"] = gptlib_step_fn(data, *bf16)[1]
        candidates["chapter code, same autocast (control)"] = chapter_step_fn(data, "bfloat16")[1]
    stop = None
    if args.processes > 1 and not args.cpu_time:  # CPU time of this process misses the workers
        name = f"gptlib, {args.processes} processes x 1 thread"
        candidates[name], stop = data_parallel_step_fn(args.processes)
    for step in candidates.values():
        for _ in range(3):
            step()
    print(machine_line())
    flops = flops_per_step(chapter_model, data)
    peak = measure_matmul_peak(size=1024, repeats=20)
    clock = time.process_time if args.cpu_time else time.perf_counter
    medians = interleaved_medians(candidates, rounds=args.rounds, per_round=4, clock=clock)
    if stop is not None:
        stop()
    base = medians["chapter code (explicit attention, AdamW)"]
    print(f"config: L=4 h=4 d=128 block {T} batch {B} V={V}; {flops / 1e9:z.2f} GFLOP per step")
    kind = "CPU" if args.cpu_time else "wall"
    print(f"timing: median of {args.rounds} rounds of 4 steps, {kind} seconds")
    print(f"fp32 matmul peak (1024², best of 20): {peak / 1e9:z.1f} GFLOP/s")
    for name, seconds in medians.items():
        print(
            f"{name:44s} {seconds * 1e3:z7.1f} ms/step  {B * T / seconds:z8.0f} tokens/s  "
            f"speed-up {base / seconds:z4.2f}x  {flops / seconds / 1e9:z6.1f} GFLOP/s "
            f"= {flops / seconds / peak:z.0%} of peak"
        )


if __name__ == "__main__":
    main()
