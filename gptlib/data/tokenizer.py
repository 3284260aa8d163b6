"""The character tokenizer: one id per distinct character of a text (notebook 07).

text (str, N characters) → ids [N] (torch.long) → text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch


def _code_points(text: str) -> torch.Tensor:
    """Unicode code points of `text`, [N] int32 (every code point is below 2^31), without a
    Python loop."""
    if not text:
        return torch.zeros(0, dtype=torch.int32)
    return torch.frombuffer(bytearray(text.encode("utf-32-le")), dtype=torch.int32)


@dataclass(frozen=True)
class CharTokenizer:
    """A vocabulary of characters; id i is the i-th character of `chars` (sorted, no repeats)."""

    chars: str

    def __post_init__(self) -> None:
        if not isinstance(self.chars, str) or not self.chars:
            raise ValueError(
                "a CharTokenizer needs at least one character; build it with "
                "CharTokenizer.from_text(text) on a non-empty text"
            )
        if "".join(sorted(set(self.chars))) != self.chars:
            raise ValueError(
                "chars must be sorted and free of repeats; build the tokenizer with "
                "CharTokenizer.from_text(text)"
            )

    @classmethod
    def from_text(cls, text: str) -> CharTokenizer:
        """The vocabulary of every distinct character in `text`, in code-point order."""
        if not isinstance(text, str) or not text:
            raise ValueError(
                f"cannot build a vocabulary from {text!r}: the text is empty. Load a corpus "
                "first, e.g. gptlib.data.load_corpus('sonnets')"
            )
        return cls("".join(sorted(set(text))))

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> torch.Tensor:
        """text of N characters → ids [N] (torch.long); unknown characters raise ValueError."""
        if not isinstance(text, str):
            raise ValueError(f"encode takes a str, got {type(text).__name__}")
        vocab = _code_points(self.chars)
        codes = _code_points(text)
        ids = torch.searchsorted(vocab, codes).clamp(max=len(vocab) - 1)
        unknown = vocab[ids] != codes
        if unknown.any():
            missing = sorted(set(chr(c) for c in codes[unknown].tolist()))
            shown = ", ".join(repr(c) for c in missing[:20])
            more = f" and {len(missing) - 20} more" if len(missing) > 20 else ""
            raise ValueError(
                f"{len(missing)} character(s) not in the vocabulary of {self.vocab_size}: "
                f"{shown}{more}. Remove them from the text, or build the tokenizer from a text "
                "that contains them"
            )
        return ids.long()

    def decode(self, ids: torch.Tensor | Sequence[int]) -> str:
        """ids [N] (tensor or list of ints) → the text they stand for."""
        values = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
        if values and isinstance(values[0], list):
            raise ValueError(
                f"decode takes one sequence of ids [N], got a nested sequence of "
                f"{len(values)}; decode each row, e.g. tokenizer.decode(out[0])"
            )
        bad = [i for i in values if not isinstance(i, int) or not 0 <= i < self.vocab_size]
        if bad:
            raise ValueError(
                f"ids {bad[:10]} are not in the vocabulary (valid ids are "
                f"0..{self.vocab_size - 1}); were they made by a different tokenizer?"
            )
        return "".join(self.chars[i] for i in values)

    def to_dict(self) -> dict[str, str]:
        """A plain dict that checkpoints can store (loads with `weights_only=True`)."""
        return {"chars": self.chars}

    @classmethod
    def from_dict(cls, data: dict) -> CharTokenizer:
        if not isinstance(data, dict) or not isinstance(data.get("chars"), str):
            raise ValueError(f"a tokenizer dict needs a 'chars' string, got {data!r:.80}")
        return cls(data["chars"])
