"""Notebook 00's parameter counts of the chapter's GPT, by group, as the vocabulary changes."""

from gptlib import GPT, GPTConfig
from gptlib.lessons.nb00.experiments import PARTS, ModelSize, chapter_model_size


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
