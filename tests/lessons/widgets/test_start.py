"""Notebook 00's vocabulary explorer: parameter counts of the chapter's GPT."""

from gptlib import GPT, GPTConfig
from gptlib.lessons.widgets.start import PARTS, ModelSize, ModelSizeExplorer, chapter_model_size


def test_chapter_model_size_adds_up():
    size = chapter_model_size(65)
    assert size.total == 842_752 == GPT(GPTConfig(vocab_size=65)).num_parameters()
    assert size.parts["embeddings"] == 65 * 128 + 256 * 128
    assert list(size.parts) == list(PARTS)
    # each extra character costs one embedding row and one unembedding column
    assert chapter_model_size(66).total - size.total == 2 * 128


def test_lines_have_thousands_separators():
    size = ModelSize(10, {"embeddings": 1280, "blocks": 2_000_000})
    assert size.lines() == ["embeddings = 1,280", "blocks = 2,000,000", "total = 2,001,280"]


def test_slider_redraws():
    explorer = ModelSizeExplorer(10)
    assert explorer.lines == chapter_model_size(10).lines()
    explorer.vocab_size.value = 65
    assert "total = 842,752" in explorer.lines
    assert explorer.vocab_size.description == "vocab size"
    bars = [bar.get_width() for bar in explorer.view.bars]
    assert bars == list(chapter_model_size(65).parts.values())
