"""Time one redraw of the explorers of notebooks 03 and 04: compute, update the figure, PNG.

    PYTHONPATH=$PWD python benchmarks/widget_redraw_03_04.py [--repeats 5]

The same measurement as `benchmarks/widget_redraw.py` (notebooks 01 and 02), whose helpers it
uses: per setting the median wall time of the pure function, the in-place figure update and the
PNG, then the median over settings, the worst setting and the CPU time. It must stay well under
0.5 s. Torch runs on one thread, as in the notebooks.
"""

from __future__ import annotations

import argparse

import torch
from widget_redraw import report, time_redraws  # benchmarks/ is the script's own folder

from gptlib import GPT, GPTConfig
from gptlib.data.grammar import TOY_GRAMMAR
from gptlib.lessons.widgets.causal_mask import CausalMaskExplorer
from gptlib.lessons.widgets.multihead import HeadsExplorer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"torch threads: {torch.get_num_threads()}")
    torch.manual_seed(0)
    V = len(TOY_GRAMMAR.alphabet())

    text = "the red fox sees the cat."
    model = GPT(GPTConfig(vocab_size=V, d_model=32, n_heads=4, n_layers=2, max_len=32))
    explorer = CausalMaskExplorer(model, TOY_GRAMMAR.encode(text)[None], text)
    settings = [
        {"position": position, "causal": causal}
        for causal in (True, False)
        for position in (0, 10, 24)
    ]
    report("causal-mask explorer (03)", time_redraws(explorer, settings, args.repeats))

    sentence = "the cat sees the dog."
    idx = TOY_GRAMMAR.encode(sentence)[None]
    models = {
        h: GPT(GPTConfig(vocab_size=V, d_model=32, n_heads=h, n_layers=1, max_len=32)).eval()
        for h in (1, 2, 4, 8)
    }
    heads = HeadsExplorer(models, idx, sentence)
    settings = [{"n_heads": h} for h in models]
    report("heads explorer (04)", time_redraws(heads, settings, args.repeats))


if __name__ == "__main__":
    main()
