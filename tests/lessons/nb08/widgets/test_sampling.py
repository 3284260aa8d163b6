"""The sampling explorer follows its sliders through `next_char_report`."""

import torch

from gptlib import GPT, GPTConfig, seed_everything
from gptlib.data import SONNETS, CharTokenizer
from gptlib.lessons.nb08.experiments.sampling import next_char_report
from gptlib.lessons.nb08.widgets.sampling import SamplingExplorer

TOKENIZER = CharTokenizer.from_text(SONNETS)


def test_explorer_redraws_when_a_slider_moves():
    seed_everything(0)
    model = GPT(
        GPTConfig(vocab_size=TOKENIZER.vocab_size, d_model=32, n_heads=2, n_layers=1, max_len=32)
    )
    with torch.no_grad():
        model.lm_head.weight.mul_(40)
    explorer = SamplingExplorer(model, TOKENIZER, "When", n_sample=10)
    assert explorer.lines == next_char_report(model, TOKENIZER, "When", n_sample=10).lines()
    assert explorer.top_k.max == TOKENIZER.vocab_size
    explorer.top_k.value = 2
    assert "characters with p > 0 = 2 of 57" in explorer.lines
    explorer.temperature.value = 0.0
    greedy = next_char_report(model, TOKENIZER, "When", 0.0, 2, n_sample=10)
    assert explorer.lines == greedy.lines()
    heights = [bar.get_height() for bar in explorer.view.bars]
    assert heights[0] == 1.0 and sum(heights[1:]) == 0
