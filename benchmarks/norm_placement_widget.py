"""Redraw time of notebook 06's gradient-norm explorer (target: well under 0.5 s per change).

    PYTHONPATH=$PWD python benchmarks/norm_placement_widget.py

Prints the median time of a slider step to a depth not yet computed (both placements, the
slowest case) and to a depth already cached, with one torch thread as the notebook uses. A
step is the whole redraw: the profiles, the figure and its PNG.
"""

from __future__ import annotations

import statistics
import time

import torch

from gptlib.lessons.engine.checks import REGISTRY
from gptlib.lessons.nb06.widgets import GradientNormExplorer


def timed_step(explorer: GradientNormExplorer, depth: int) -> float:
    start = time.perf_counter()
    explorer.depth.value = depth  # one redraw
    return time.perf_counter() - start


def main() -> None:
    torch.set_num_threads(1)
    measure = REGISTRY["block_gradient_norms"].reference  # what a student's answer computes
    explorer = GradientNormExplorer(measure, depth=2)  # loads the corpus, as the notebook has
    for depths, label in (((8, 16, 24), "new depth"), ((8, 16, 24), "cached depth")):
        times = [timed_step(explorer, depth) for depth in depths]
        print(
            f"{label:13s} redraw: median {statistics.median(times):z.3f} s, "
            f"max {max(times):z.3f} s over depths {depths}"
        )


if __name__ == "__main__":
    main()
