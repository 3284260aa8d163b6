"""Helpers shared by the benchmark scripts: medians of interleaved timings, machine load."""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable

import torch


def machine_line() -> str:
    """CPU, thread count and load average: the conditions a figure was measured under."""
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, torch "
        f"{torch.__version__} with {torch.get_num_threads()} threads; load average {load}"
    )


def interleaved_medians(
    candidates: dict[str, Callable[[], None]],
    rounds: int,
    per_round: int = 1,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, float]:
    """Median seconds per call of each candidate, timed in alternation so load hits all alike.

    `clock=time.process_time` counts this process's CPU seconds instead of wall seconds: on a
    machine shared with other work, single-threaded runs then measure the work, not the wait.
    """
    times: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(rounds):
        for name, fn in candidates.items():
            start = clock()
            for _ in range(per_round):
                fn()
            times[name].append((clock() - start) / per_round)
    return {name: statistics.median(values) for name, values in times.items()}


def matmul_peak_flops(n: int = 1024, repeats: int = 20) -> float:
    """Measured fp32 matmul throughput (FLOP/s) of this CPU with torch's current threads."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    for _ in range(3):
        a @ b
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    return 2 * n**3 / min(times)
