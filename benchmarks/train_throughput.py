"""Training throughput at the reference config: gptlib vs the chapter's code or nanoGPT.

    PYTHONPATH=. python benchmarks/train_throughput.py [--rounds 15] [--threads N] [--processes 2]
    PYTHONPATH=. python benchmarks/train_throughput.py --nanogpt PATH/model.py [--compile]
    PYTHONPATH=. python benchmarks/train_throughput.py --device cuda    # make gpu-check

With `--nanogpt` (the model.py of a karpathy/nanoGPT checkout; nothing of nanoGPT ships with
gptlib) the candidates are nanoGPT's own training step (its GPT, its `configure_optimizers`,
its get_batch, clipping at 1.0) and gptlib's `Trainer.train_step` on the same model (tied
unembedding, biases, GPT-2 initialisation, the same AdamW groups and betas, the same batch
size), both float32, and where bfloat16 is native both under bfloat16 (nanoGPT under CPU
autocast, a control; gptlib as `gptlib train` picks); `--compile` adds gptlib's Trainer with
`TrainConfig(compile=True)`. Ratios are then against nanoGPT in float32. The slowest first
step (a compilation, when there is one) is printed, not counted in the medians.

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
import contextlib
import importlib.util
import io
import multiprocessing
import socket
import time
from collections.abc import Callable
from multiprocessing.connection import Connection

import numpy as np
import torch
import torch.distributed as dist
from _chapter import chapter_gpt  # the script's folder
from _common import interleaved_medians, machine_line
from torch.utils.flop_counter import FlopCounterMode

from gptlib import GPT, GPTConfig
from gptlib.device import fast_precision, pick_device
from gptlib.distributed import World
from gptlib.lessons.nb09.experiments.costs import measure_matmul_peak
from gptlib.lessons.shared.experiments.variants import Variant, build_gpt
from gptlib.train import TrainConfig, Trainer

B, T, V = 12, 64, 65


def chapter_step_fn(data: torch.Tensor, precision: str = "float32", device: str = "cpu"):
    """The chapter's loop body; with "bfloat16", its forward pass under the same autocast
    gptlib's Trainer uses (a control: how much of gptlib's lead mixed precision alone gives)."""
    model = chapter_gpt(V).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    enabled = precision == "bfloat16"

    def step() -> None:
        ix = torch.randint(len(data) - T - 1, (B,))
        x = torch.stack([data[i : i + T] for i in ix])
        y = torch.stack([data[i + 1 : i + T + 1] for i in ix])
        x, y = x.to(device), y.to(device)
        with torch.autocast(model.lm_head.weight.device.type, torch.bfloat16, enabled=enabled):
            loss = model(x, y)[1]
        opt.zero_grad()
        loss.backward()
        opt.step()

    return model, step


def load_nanogpt(path: str):
    """nanoGPT's own model.py (karpathy/nanoGPT, not part of gptlib), imported from `path`."""
    spec = importlib.util.spec_from_file_location("nanogpt_model", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"--nanogpt: {path} is not a Python file (give nanoGPT's model.py)")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def nanogpt_step_fn(module, data: torch.Tensor, precision: str = "float32", device: str = "cpu"):
    """nanoGPT's training step as its train.py runs it on a CPU: its GPT (L4 h4 d128, block T,
    dropout 0, its default bias=True, tied unembedding, GPT-2 initialisation), its
    `configure_optimizers` (AdamW with decay on tensors of dim >= 2; it asks for the fused kernel
    only on CUDA), its get_batch (windows sliced from a uint16 array), clipping at 1.0, the
    learning rate set every step. With "bfloat16", the forward pass under CPU autocast (a
    control: nanoGPT itself uses no autocast on the CPU)."""
    config = module.GPTConfig(
        block_size=T, vocab_size=V, n_layer=4, n_head=4, n_embd=128, dropout=0.0
    )
    with contextlib.redirect_stdout(io.StringIO()):  # it prints its parameter counts
        model = module.GPT(config).to(device)
        optimizer = model.configure_optimizers(0.1, 3e-3, (0.9, 0.99), torch.device(device).type)
    tokens = data.numpy().astype(np.uint16)
    enabled = precision == "bfloat16"

    def step() -> None:
        for group in optimizer.param_groups:
            group["lr"] = 3e-3
        ix = torch.randint(len(tokens) - T, (B,))
        x = torch.stack([torch.from_numpy(tokens[i : i + T].astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy(tokens[i + 1 : i + 1 + T].astype(np.int64)) for i in ix])
        x, y = x.to(device), y.to(device)
        with torch.autocast(torch.device(device).type, torch.bfloat16, enabled=enabled):
            _, loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return model, step


def gptlib_as_nanogpt_step_fn(
    data: torch.Tensor, precision: str = "float32", compile: bool = False, device: str = "cpu"
):
    """gptlib's Trainer on nanoGPT's model: the same shape, tied unembedding, biases, GPT-2
    initialisation, AdamW groups and betas, clipping at 1.0, batch B x T."""
    model = GPT(GPTConfig(vocab_size=V, max_len=T, tie_weights=True)).to(device)
    train = TrainConfig(
        steps=10**9, batch_size=B, block_size=T, precision=precision, beta2=0.99, compile=compile
    )
    return model, Trainer(model, data, data[:1000], train).train_step


def benchmark_data() -> torch.Tensor:
    torch.manual_seed(0)
    return torch.randint(V, (200_000,))


def gptlib_step_fn(
    data: torch.Tensor,
    attention: str,
    world: World | None = None,
    precision: str = "float32",
    device: str = "cpu",
):
    model = build_gpt(GPTConfig(vocab_size=V, max_len=T), Variant(attention=attention)).to(device)
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
    device = next(model.parameters()).device
    x, y = data[:T].repeat(B, 1).to(device), data[1 : T + 1].repeat(B, 1).to(device)
    with FlopCounterMode(display=False) as counter:
        model(x, y)[1].backward()
    model.zero_grad()
    return counter.get_total_flops()


def nanogpt_candidates(args: argparse.Namespace, data: torch.Tensor, device: torch.device):
    """(the baseline's name, {name: step}): nanoGPT's step and gptlib's Trainer on its model."""
    nanogpt, on = load_nanogpt(args.nanogpt), str(device)
    base_name = "nanoGPT, float32"
    candidates = {
        base_name: nanogpt_step_fn(nanogpt, data, device=on)[1],
        "gptlib Trainer, float32": gptlib_as_nanogpt_step_fn(data, device=on)[1],
    }
    if args.compile:
        compiled = gptlib_as_nanogpt_step_fn(data, compile=True, device=on)[1]
        candidates["gptlib Trainer, float32, compiled"] = compiled
    if fast_precision(device) == "bfloat16":  # what `gptlib train` picks here
        bf16 = nanogpt_step_fn(nanogpt, data, "bfloat16", device=on)[1]
        candidates["nanoGPT under bfloat16 autocast"] = bf16
        bf16 = gptlib_as_nanogpt_step_fn(data, "bfloat16", device=on)[1]
        candidates["gptlib Trainer, bfloat16 products"] = bf16
    return base_name, candidates


def chapter_candidates(args: argparse.Namespace, data: torch.Tensor, device: torch.device):
    """(the baseline's name, {name: step}): the chapter's plain loop and gptlib's Trainer."""
    on = str(device)
    base_name = "chapter code (explicit attention, AdamW)"
    candidates = {
        base_name: chapter_step_fn(data, device=on)[1],
        "gptlib (SDPA, fused AdamW, clipping)": gptlib_step_fn(data, "fused", device=on)[1],
        "gptlib, written-out attention": gptlib_step_fn(data, "written-out", device=on)[1],
    }
    if fast_precision(device) == "bfloat16":  # what `gptlib train` picks here
        bf16 = gptlib_step_fn(data, "fused", None, "bfloat16", device=on)[1]
        candidates["gptlib, bfloat16 matrix products"] = bf16
        bf16 = chapter_step_fn(data, "bfloat16", device=on)[1]
        candidates["chapter code, same autocast (control)"] = bf16
    return base_name, candidates


def _synchronized(step: Callable[[], None]) -> Callable[[], None]:
    def run() -> None:
        step()
        torch.cuda.synchronize()

    return run


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
    parser.add_argument(
        "--nanogpt",
        metavar="MODEL_PY",
        help="nanoGPT's model.py: time nanoGPT's GPT and optimizer against gptlib's Trainer on "
        "the same model instead of the chapter's code",
    )
    parser.add_argument(
        "--compile",
        action="store_true",
        help="with --nanogpt: also gptlib's Trainer with TrainConfig(compile=True), float32",
    )
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = pick_device(args.device)
    data = benchmark_data()
    chapter_model = chapter_gpt(V).to(device)
    base_name, candidates = (nanogpt_candidates if args.nanogpt else chapter_candidates)(
        args, data, device
    )
    stop = None
    # CPU time of this process misses the workers; gloo's data parallelism is the CPU's
    if args.processes > 1 and not (args.cpu_time or args.nanogpt or device.type != "cpu"):
        name = f"gptlib, {args.processes} processes x 1 thread"
        candidates[name], stop = data_parallel_step_fn(args.processes)
    if device.type == "cuda":  # time the GPU's work, not its queueing
        candidates = {name: _synchronized(step) for name, step in candidates.items()}
    first_step = {}
    for name, step in candidates.items():
        start = time.perf_counter()
        step()
        first_step[name] = time.perf_counter() - start
        for _ in range(2):
            step()
    print(machine_line())
    flops = flops_per_step(chapter_model, data)
    peak = measure_matmul_peak(size=1024, repeats=20, device=device)
    clock = time.process_time if args.cpu_time else time.perf_counter
    medians = interleaved_medians(candidates, rounds=args.rounds, per_round=4, clock=clock)
    if stop is not None:
        stop()
    base = medians[base_name]
    print(f"config: L=4 h=4 d=128 block {T} batch {B} V={V}; {flops / 1e9:z.2f} GFLOP per step")
    kind = "CPU" if args.cpu_time else "wall"
    print(f"timing: median of {args.rounds} rounds of 4 steps, {kind} seconds")
    print(f"fp32 matmul peak on {device} (1024², best of 20): {peak / 1e9:z.1f} GFLOP/s")
    slowest = max(first_step, key=first_step.get)
    print(f"slowest first step (compiling, warming up): {slowest}, {first_step[slowest]:z.1f} s")
    for name, seconds in medians.items():
        print(
            f"{name:44s} {seconds * 1e3:z7.1f} ms/step  {B * T / seconds:z8.0f} tokens/s  "
            f"vs {base_name}: {base / seconds:z4.2f}x  {flops / seconds / 1e9:z6.1f} GFLOP/s "
            f"= {flops / seconds / peak:z.0%} of peak"
        )


if __name__ == "__main__":
    main()
