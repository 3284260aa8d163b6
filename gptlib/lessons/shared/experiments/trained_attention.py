"""Where a trained model's heads look: one head's attention on a text, in numbers (notebook 08).

`attention_summary(model, tokenizer, text, layer, head)` returns the head's weights [T, T] and
the numbers that tell heads apart: how far back it reads on average, how spread its rows are,
how much it reads the previous character or itself, and which character receives the most of
its attention.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gptlib.data.tokenizer import CharTokenizer
from gptlib.lessons.shared.experiments.attention_maps import attention_maps
from gptlib.model import GPT


@dataclass(frozen=True)
class AttentionSummary:
    """One head's weights [T, T] on `text` (row i: what query i reads from keys j <= i)."""

    layer: int
    head: int
    weights: torch.Tensor
    text: str

    def __post_init__(self) -> None:
        T = len(self.text)
        if tuple(self.weights.shape) != (T, T):
            raise ValueError(
                f"weights must be [T, T] for a text of T={T} characters, got "
                f"{list(self.weights.shape)}"
            )

    @property
    def mean_look_back(self) -> float:
        """Average distance i − j from a query to the keys it reads, weighted by attention."""
        T = self.weights.shape[0]
        distance = (torch.arange(T)[:, None] - torch.arange(T)[None, :]).clamp(min=0)
        return (self.weights * distance).sum(-1).mean().item()

    @property
    def previous_char_weight(self) -> float:
        """Mean weight a character puts on the one just before it."""
        return self.weights.diagonal(offset=-1).mean().item()

    @property
    def mean_entropy(self) -> float:
        """Mean entropy (nats) of the rows: ln(i + 1) for query i if it spread evenly, 0 if it
        read one key."""
        return torch.special.entr(self.weights).sum(-1).mean().item()

    @property
    def self_weight(self) -> float:
        return self.weights.diagonal().mean().item()

    @property
    def received(self) -> torch.Tensor:
        """Attention each position receives, summed over all queries, [T]; it sums to T."""
        return self.weights.sum(0)

    @property
    def most_attended(self) -> int:
        """The position that receives the most attention (a bright column of the map)."""
        return int(self.received.argmax())

    @property
    def most_attended_share(self) -> float:
        """The share of all the head's attention (T rows of weight 1) that goes there."""
        return self.received.max().item() / len(self.text)

    def title(self) -> str:
        return f"layer {self.layer}, head {self.head}"

    def lines(self) -> list[str]:
        """The numbers as `name = value` lines (what the explorer prints)."""
        j = self.most_attended
        return [
            f"layer = {self.layer}",
            f"head = {self.head}",
            f"max weight = {self.weights.max().item():z.3f}",
            f"mean look-back = {self.mean_look_back:z.2f} characters",
            f"weight on the previous character = {self.previous_char_weight:z.3f}",
            f"weight on itself = {self.self_weight:z.3f}",
            f"most attended = {self.text[j]!r} at position {j} "
            f"({self.most_attended_share:z.0%} of all attention)",
        ]


def attention_summary(
    model: GPT, tokenizer: CharTokenizer, text: str, layer: int, head: int
) -> AttentionSummary:
    """The attention weights of (layer, head) on `text`, [T, T], with summary numbers."""
    return attention_summaries(model, tokenizer, text, layers=[layer], heads=[head])[0]


def attention_summaries(
    model: GPT,
    tokenizer: CharTokenizer,
    text: str,
    layers: list[int] | None = None,
    heads: list[int] | None = None,
) -> list[AttentionSummary]:
    """Summaries of every (layer, head) pair asked for (all by default), from one forward pass,
    layer by layer."""
    c = model.config
    layers = list(range(c.n_layers)) if layers is None else layers
    heads = list(range(c.n_heads)) if heads is None else heads
    for layer, head in ((i, j) for i in layers for j in heads):
        if not (0 <= layer < c.n_layers and 0 <= head < c.n_heads):
            raise ValueError(
                f"layer must be in 0..{c.n_layers - 1} and head in 0..{c.n_heads - 1}, got "
                f"layer={layer}, head={head}"
            )
    idx = tokenizer.encode(text)[None].to(next(model.parameters()).device)
    maps = attention_maps(model, idx)[:, 0].cpu()  # [L, h, T, T]
    return [AttentionSummary(i, j, maps[i, j], text) for i in layers for j in heads]
