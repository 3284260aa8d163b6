"""Make notebook 06's long Post-LN runs and store them in gptlib/lessons/nb06/long_runs.json.

    python scripts/nb06_runs.py        # 6 runs of 400 steps (~2 minutes on one core)

The grid of notebook 06 trains 50 steps; its stalled Post-LN cells (no warmup) are trained here
for 400 from the same weights and batches, on one thread, so that the notebook can show whether
a stalled run leaves the letter-frequency entropy later (a slow start) or stays there (a stall).
"""

from __future__ import annotations

import json
import platform

import torch

from gptlib.lessons.nb06 import experiments as npl


def main() -> None:
    torch.set_num_threads(1)
    runs = npl.long_runs(npl.toy_data())
    data = runs.to_dict()
    data["about"] = (
        "Written by scripts/nb06_runs.py: Post-LN without warmup at notebook 06's stalled grid "
        f"cells, every step's training loss; {platform.machine()}, torch {torch.__version__}."
    )
    npl.LONG_RUNS.write_text(json.dumps(data) + "\n", encoding="utf-8")
    for depth, lr, seed in runs.curves:
        losses = [f"{runs.at(depth, lr, seed, s):z.3f}" for s in (50, 100, 200, 400)]
        print(f"{depth} blocks, lr {lr:zg}, seed {seed}: steps 50, 100, 200, 400 -> {losses}")


if __name__ == "__main__":
    main()
