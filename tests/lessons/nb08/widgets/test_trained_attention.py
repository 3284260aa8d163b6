"""The attention explorer follows its sliders through `attention_summary`."""

from gptlib import GPT, GPTConfig, seed_everything
from gptlib.data import SONNETS, CharTokenizer
from gptlib.lessons.nb08.widgets.trained_attention import AttentionExplorer
from gptlib.lessons.shared.experiments.trained_attention import attention_summary

TOKENIZER = CharTokenizer.from_text(SONNETS)


def test_explorer_follows_the_sliders():
    seed_everything(0)
    model = GPT(GPTConfig(vocab_size=TOKENIZER.vocab_size, d_model=32, n_heads=4, n_layers=2))
    text = "Rough winds do shake"
    explorer = AttentionExplorer(model, TOKENIZER, text)
    assert (explorer.layer.max, explorer.head.max) == (1, 3)
    assert explorer.lines == attention_summary(model, TOKENIZER, text, 0, 0).lines()
    explorer.layer.value, explorer.head.value = 1, 3
    assert explorer.lines == attention_summary(model, TOKENIZER, text, 1, 3).lines()
    shown = explorer.view.image.get_array()
    assert (shown == attention_summary(model, TOKENIZER, text, 1, 3).weights.numpy()).all()
