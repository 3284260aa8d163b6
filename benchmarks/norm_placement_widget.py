"""Redraw time of notebook 06's gradient-norm widget (target: well under 0.5 s per change).

    PYTHONPATH=$PWD python benchmarks/norm_placement_widget.py

Prints the median time of a redraw at a depth not yet computed (both placements, the
slowest case) and of a redraw at a depth already cached, with one torch thread as the
notebook uses.
"""

from __future__ import annotations

import statistics
import time

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from gptlib.lessons.widgets import norm_placement as widget  # noqa: E402


def timed_render(depth: int) -> float:
    start = time.perf_counter()
    fig, _ = widget.render_profiles(depth, "both")
    fig.canvas.draw()
    plt.close(fig)
    return time.perf_counter() - start


def main() -> None:
    torch.set_num_threads(1)
    widget.cached_profile("pre", 2)  # load the corpus once, as the notebook has by then
    for depths, label in (((8, 16, 24), "new depth"), ((8, 16, 24), "cached depth")):
        times = [timed_render(depth) for depth in depths]
        print(
            f"{label:13s} redraw: median {statistics.median(times):.3f} s, "
            f"max {max(times):.3f} s over depths {depths}"
        )


if __name__ == "__main__":
    main()
