"""Helpers shared by the benchmark scripts: medians of interleaved timings, machine load.

The matmul peak comes from gptlib itself
(`gptlib.lessons.nb09.experiments.costs.measure_matmul_peak`, the measurement notebook 09 makes), so
the benchmarks and the notebook agree on it.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable

import torch


def machine_line() -> str:
    """CPU, thread count and load average: the conditions a figure was measured under."""
    load = ", ".join(f"{x:z.2f}" for x in os.getloadavg())
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
