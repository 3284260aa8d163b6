"""Readable axis labels for characters (used by the attention, causality and sampling plots)."""

from __future__ import annotations

from collections.abc import Iterable

_VISIBLE = {" ": "␣", "\n": "⏎", "\t": "⇥"}


def char_labels(chars: Iterable[str]) -> list[str]:
    """Characters as tick labels: space, newline and tab become visible symbols."""
    return [_VISIBLE.get(c, c) for c in chars]
