"""Time one redraw of each explorer (notebooks 01 and 02): compute, update the figure, PNG.

    PYTHONPATH=$PWD python benchmarks/widget_redraw.py [--repeats 5]

A redraw is what a slider step costs in the notebook: the explorer's pure function
(`compute`), the in-place figure update (`draw`) and the PNG the Image widget shows. It must
stay well under 0.5 s. Prints, over every setting the sweep visits, the median wall time, the
worst setting's median, each stage's share, and the median CPU time of this process: on a busy
shared machine the wall time overstates the cost, and the CPU time is close to what a redraw
takes with a core to itself.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from typing import Any

import torch

from gptlib.lessons.widgets.explorer import Explorer, figure_png
from gptlib.lessons.widgets.positions import PositionExplorer
from gptlib.lessons.widgets.saturation import DK_CHOICES, SaturationExplorer

STAGES = ("compute", "update", "png")


def time_redraws(
    explorer: Explorer, settings: Sequence[dict[str, Any]], repeats: int
) -> dict[str, list[float]]:
    """Per setting (control name -> value), the median seconds of each stage of a redraw
    (`compute`, `draw`, the PNG), of the whole redraw, and its CPU time."""
    medians: dict[str, list[float]] = {name: [] for name in (*STAGES, "total", "cpu")}
    for setting in settings:
        with explorer.holding(redraw=False):
            for name, value in setting.items():
                getattr(explorer, name).value = value
        runs = []
        for _ in range(repeats):
            cpu0, t0 = time.process_time(), time.perf_counter()
            result = explorer.compute()
            t1 = time.perf_counter()
            explorer.draw(result)
            t2 = time.perf_counter()
            figure_png(explorer.figure, explorer.dpi)
            t3, cpu3 = time.perf_counter(), time.process_time()
            runs.append((t1 - t0, t2 - t1, t3 - t2, t3 - t0, cpu3 - cpu0))
        for name, values in zip(medians, zip(*runs, strict=True), strict=True):
            medians[name].append(statistics.median(values))
    return medians


def report(name: str, medians: dict[str, list[float]]) -> None:
    def ms(values: list[float]) -> str:
        return f"{statistics.median(values) * 1000:5.0f} ms"

    stages = ", ".join(f"{stage} {ms(medians[stage])}" for stage in STAGES)
    worst = max(medians["total"]) * 1000
    print(
        f"{name:24s} wall {ms(medians['total'])} (worst setting {worst:5.0f} ms)  "
        f"cpu {ms(medians['cpu'])}  [{stages}]"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"torch threads: {torch.get_num_threads()}")

    settings = [{"d_k": d_k, "scaled": scaled} for scaled in (False, True) for d_k in DK_CHOICES]
    report("d_k explorer (02)", time_redraws(SaturationExplorer(), settings, args.repeats))

    settings = [
        {"length": T, "d_model": d, "base": base}
        for T in (8, 128, 512)
        for d in (4, 64, 256)
        for base in (10, 1e4)
    ]
    report("positions explorer (01)", time_redraws(PositionExplorer(), settings, args.repeats))


if __name__ == "__main__":
    main()
