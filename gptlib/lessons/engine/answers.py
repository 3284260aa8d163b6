"""Answers to the notebooks' "Check your understanding" questions, kept out of the notebooks.

The answer texts live in each lesson's folder (`gptlib/lessons/nbNN/answers.py`), each a dict
`ANSWERS` of templates keyed "NN.short-name" with named placeholders (`{std:z.2f}`). A notebook
cell fills one with its own measured numbers and shows it folded:

    answer("02.dk-64", sqrt_dk=math.sqrt(64), std=run64.score_std, ...)

so the reasoning is not readable under the question, and the numbers are still computed.
The answer shows as a closed `<details>` block in JupyterLab (click to open) and as plain text
elsewhere. An unknown key, a missing placeholder or an unused value is a `ValueError`.

In a template, paragraphs are separated by blank lines; line breaks inside a paragraph are
only for the source and become spaces.
"""

from __future__ import annotations

import difflib
import html
import re
import string

from gptlib.lessons.engine.discover import lesson_modules

# Every lesson's `answers` module holds that notebook's answers; they are found here.
NOTEBOOK_MODULES = tuple(lesson_modules("answers"))
ANSWERS: dict[str, str] = {key: text for m in NOTEBOOK_MODULES for key, text in m.ANSWERS.items()}
KEY = re.compile(r"\d\d\.[a-z0-9]+(?:-[a-z0-9]+)*")


class FoldedAnswer:
    """Answer text shown folded; paragraphs are separated by blank lines."""

    def __init__(self, text: str, summary: str = "Answer") -> None:
        if not text.strip():
            raise ValueError("an answer needs some text")
        self.text, self.summary = text.strip(), summary

    def _repr_html_(self) -> str:
        paragraphs = "".join(f"<p>{html.escape(p.strip())}</p>" for p in self.text.split("\n\n"))
        return f"<details><summary>{html.escape(self.summary)}</summary>{paragraphs}</details>"

    def __repr__(self) -> str:
        return f"{self.summary}: {self.text}"


def placeholders(template: str) -> set[str]:
    """The names a template needs, e.g. {"std", "max_weight"} for "{std:z.2f} ... {max_weight}".

    Only plain names are allowed: no positional `{}` / `{0}`, no `{x.attr}` or `{x[0]}`.
    """
    names = set()
    for _, field, _, _ in string.Formatter().parse(template):
        if field is None:
            continue
        if not field.isidentifier():
            raise ValueError(f"placeholder {{{field}}} is not a plain name in {template[:60]!r}…")
        names.add(field)
    return names


def _reflow(text: str) -> str:
    """Paragraphs (split at blank lines) with their inner line breaks and runs of spaces
    turned into single spaces."""
    return "\n\n".join(" ".join(p.split()) for p in re.split(r"\n\s*\n", text.strip()))


def answer(key: str, summary: str = "Answer", **values: object) -> FoldedAnswer:
    """The stored answer `key` ("NN.short-name") filled with `values`, shown folded."""
    return FoldedAnswer(answer_text(key, **values), summary)


def answer_text(key: str, **values: object) -> str:
    """The stored answer `key` ("NN.short-name") filled with `values`, as reflowed text."""
    if key not in ANSWERS:
        same_notebook = sorted(k for k in ANSWERS if k[:3] == key[:3])
        close = difflib.get_close_matches(key, ANSWERS, n=3)
        raise ValueError(
            f"no stored answer {key!r}; close: {close}; notebook {key[:2]!r} has "
            f"{same_notebook} (add it to gptlib/lessons/nb{key[:2]}/answers.py)"
        )
    template = ANSWERS[key]
    needed = placeholders(template)
    missing, unused = sorted(needed - values.keys()), sorted(values.keys() - needed)
    if missing or unused:
        raise ValueError(
            f"answer {key!r} needs values for {sorted(needed)}: missing {missing}, "
            f"not used {unused}"
        )
    return _reflow(template.format(**values))
