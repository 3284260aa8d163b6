"""Time one redraw of every explorer of the course: compute, update the figure, PNG.

    PYTHONPATH=$PWD python benchmarks/widget_redraw.py [--repeats 5] [--threads 1]

A redraw is what a slider step costs in the notebook: the explorer's pure function
(`compute`), the in-place figure update (`draw`) and the PNG the Image widget shows. It must
stay well under 0.5 s. For each explorer
(`gptlib.lessons.under_the_hood.timing.course_explorers`) it
prints, over every setting the sweep visits, the median wall time, the worst setting's median,
the median CPU time of this process and each stage's share: on a busy shared machine the wall
time overstates the cost, and the CPU time is close to what a redraw takes with a core to
itself. Notebook 10 runs the same sweep once; `norm_placement_widget.py` separates notebook
06's first visit of a depth from a cached one.
"""

from __future__ import annotations

import argparse

import torch
from _common import machine_line  # the script's folder

from gptlib.lessons.under_the_hood.timing import LIVE_S, course_explorers, time_explorer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (notebooks: 1)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(machine_line())
    slow = []
    for case in course_explorers():
        timing = time_explorer(case.name, case.build(), case.settings, args.repeats)
        print(*timing.lines())
        if timing.cpu_s > LIVE_S:
            slow.append(case.name)
    print(f"explorers above {LIVE_S} s of CPU time per redraw: {slow or 'none'}")


if __name__ == "__main__":
    main()
