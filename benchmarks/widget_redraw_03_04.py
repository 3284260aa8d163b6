"""Redraw time of notebook 03's and 04's explorers, as the notebook backend renders them.

    PYTHONPATH=$PWD python benchmarks/widget_redraw_03_04.py

Each state is computed, printed and drawn to a PNG with bbox_inches="tight" (what Jupyter's
inline backend does); the median of several repeats is printed. The goal is well under 0.5 s.
"""

from __future__ import annotations

import contextlib
import io
import statistics
import time
from collections.abc import Callable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from gptlib import GPT, GPTConfig  # noqa: E402
from gptlib.experiments.grammar import TOY_GRAMMAR  # noqa: E402
from gptlib.widgets.causal_mask import mask_twins, show_perturbation  # noqa: E402
from gptlib.widgets.multihead import show_head_patterns  # noqa: E402

REPEATS = 7


def _render() -> None:
    plt.gcf().savefig(io.BytesIO(), format="png", bbox_inches="tight")
    plt.close("all")


def median_seconds(draw: Callable[[], object]) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            draw()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    plt.show = _render  # the show_* functions end with plt.show(); render instead
    torch.set_num_threads(1)  # as notebooks 03 and 04 do
    torch.manual_seed(0)
    V = len(TOY_GRAMMAR.alphabet())
    text = "the red fox sees the cat."
    idx = TOY_GRAMMAR.encode(text)[None]
    twins = mask_twins(GPT(GPTConfig(vocab_size=V, d_model=32, n_heads=4, n_layers=2, max_len=32)))
    sentence = "the cat sees the dog."
    idx2 = TOY_GRAMMAR.encode(sentence)[None]
    models = {
        h: GPT(GPTConfig(vocab_size=V, d_model=32, n_heads=h, n_layers=1, max_len=32)).eval()
        for h in (1, 2, 4, 8)
    }
    print(f"{'widget state':40}{'median s':>10}")
    for causal in (True, False):
        seconds = median_seconds(lambda c=causal: show_perturbation(twins, idx, 10, c, text))
        print(f"{f'03 perturbation, mask {causal}':40}{seconds:>10.3f}")
    for h in models:
        seconds = median_seconds(lambda h=h: show_head_patterns(models, idx2, h, sentence))
        print(f"{f'04 head patterns, n_heads={h}':40}{seconds:>10.3f}")


if __name__ == "__main__":
    main()
