"""What a figure shows, in words: the description a reader who cannot see the image gets.

The function or view that draws a figure calls `describe(fig, text)` with a sentence or two:
the axes, what is compared, and the visible result where it is fixed. When the figure is
displayed in IPython (`plt.show()` in a notebook, or `display(fig)`), the description becomes
the image's alt text in the output's metadata, `{"image/png": {"alt": text}}`: the key that
IPython's own `Image(alt=...)` writes and nbconvert's HTML export reads. The course website sets
it as the `alt` of the figure's `<img>` (book/_ext/course_site.py). So the stored notebook, its
page on the site and a student's run of the workbook carry the same words, written once, where
the figure is drawn; no notebook cell mentions them. (JupyterLab 4 does not yet put the alt
text on the images it shows; and with `InlineBackend.figure_format = "retina"` IPython's PNG
formatter writes its own metadata for image/png, which replaces the alt text.)

A description holds no number a measurement could round differently on another machine: only
the inputs of the figure (names, sizes, settings) and results that are exact (a count, a zero).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any
from weakref import WeakKeyDictionary

from matplotlib.axes import Axes
from matplotlib.figure import Figure, SubFigure

# The MIME types IPython can draw a figure as (InlineBackend.figure_formats); the description
# goes under each one that the shell's formatters currently produce for a Figure.
IMAGE_TYPES = ("image/png", "image/jpeg", "image/svg+xml", "application/pdf")
_DESCRIPTIONS: WeakKeyDictionary[Figure, str] = WeakKeyDictionary()


def describe(where: Figure | SubFigure | Axes, text: str) -> None:
    """Set the description of the figure that holds `where` (a figure, or an axes drawn on).

    `text` says what the figure shows; runs of whitespace become one space. A later call
    replaces the description. Raises ValueError for an empty text or a file name.
    """
    while isinstance(where, Axes | SubFigure):  # up to the root figure, which is displayed
        where = where.figure
    if not isinstance(where, Figure):
        raise ValueError(f"describe a matplotlib Figure or Axes, got {type(where).__name__}")
    if not isinstance(text, str):
        raise ValueError(f"a description is text, got {type(text).__name__}")
    text = " ".join(text.split())
    if not text or looks_like_a_file(text):
        raise ValueError(
            f"describe what the figure shows in a sentence or two (its axes, what it compares), "
            f"got {text!r}"
        )
    _DESCRIPTIONS[where] = text
    _show_descriptions_in_ipython()


def description(fig: Figure) -> str | None:
    """The description set by `describe` for `fig` (None when there is none)."""
    return _DESCRIPTIONS.get(fig)


def looks_like_a_file(text: str) -> bool:
    """Whether `text` is a file name or path rather than words (what an image gets as alt text
    when it has no description)."""
    name = text.strip().lower()
    image_file = name.rsplit(".", 1)[-1] in {"png", "jpg", "jpeg", "svg", "gif", "pdf"}
    return " " not in name and (image_file or "/" in name)


def spans(numbers: Iterable[int]) -> str:
    """Whole numbers as words a description can hold: [0, 1, 2, 3, 7, 9] -> "0 to 3, 7 and 9"."""
    runs: list[list[int]] = []
    for n in sorted(set(numbers)):
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    parts = [part for r in runs for part in ([f"{r[0]} to {r[-1]}"] if len(r) > 2 else r)]
    words = [str(part) for part in parts]
    if len(words) < 2:
        return words[0] if words else "none"
    return f"{', '.join(words[:-1])} and {words[-1]}"


def _display_metadata(fig: Figure) -> tuple[dict, dict] | None:
    """IPython's mime-bundle formatter for a Figure: no data of its own (the image formatters
    still draw it), and the description as the alt text of each image type they produce."""
    text = _DESCRIPTIONS.get(fig)
    if text is None:
        return None
    formatters = _shell().display_formatter.formatters
    drawn = [mime for mime in IMAGE_TYPES if _draws_figures(formatters.get(mime))]
    return {}, {mime: {"alt": text} for mime in drawn or ["image/png"]}


def _draws_figures(formatter: Any) -> bool:
    if formatter is None:
        return False
    try:
        formatter.lookup_by_type(Figure)
    except KeyError:
        return False
    return True


def _shell() -> Any:
    """The running IPython shell, or None (IPython is not imported outside a kernel or REPL)."""
    ipython = sys.modules.get("IPython")
    return ipython.get_ipython() if ipython is not None else None


def _show_descriptions_in_ipython() -> None:
    """Register `_display_metadata` for Figures with the running IPython shell, once. It is a
    mime-bundle formatter, which the inline backend's own figure formatters (reset whenever
    InlineBackend.figure_formats changes) leave in place."""
    shell = _shell()
    if shell is None:
        return
    bundles = shell.display_formatter.mimebundle_formatter
    if bundles.type_printers.get(Figure) is not _display_metadata:
        bundles.for_type(Figure, _display_metadata)
