"""Where the chapter's GPT keeps its parameters, as the vocabulary changes (notebook 00).

`chapter_model_size` builds the model and counts its parameters by group; notebook 00's
explorer (`gptlib.lessons.nb00.widgets`) puts a vocabulary slider on it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gptlib.model import GPT, GPTConfig

PARTS = ("embeddings", "blocks", "final norm and unembedding")


@dataclass(frozen=True)
class ModelSize:
    """Parameter counts of the chapter's GPT for one vocabulary size, by group (`PARTS`)."""

    vocab_size: int
    parts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.parts.values())

    def lines(self) -> list[str]:
        """One `name = value` line per group and the total, with thousands separators."""
        counts = {**self.parts, "total": self.total}
        return [f"{name} = {value:,}" for name, value in counts.items()]


def chapter_model_size(vocab_size: int) -> ModelSize:
    """Parameter counts of the chapter's GPT (d=128, h=4, L=4, max_len=256) for a vocabulary."""
    model = GPT(GPTConfig(vocab_size=vocab_size))
    embeddings = model.tok_emb.weight.numel() + model.pos_emb.weight.numel()
    blocks = sum(p.numel() for p in model.blocks.parameters())
    rest = model.num_parameters() - embeddings - blocks
    return ModelSize(vocab_size, dict(zip(PARTS, (embeddings, blocks, rest), strict=True)))
