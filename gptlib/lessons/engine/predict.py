"""Predict, then reveal; answer, then read the course's answer.

`Prediction`: the student commits to a guess before a key experiment.

A cell before the experiment ends with a `Prediction` (a number typed into a box, or one of a
few choices, then "commit"); a cell after it calls `reveal(measured)`, which prints the
committed guess next to the measurement as `name = value` lines:

    guess = Prediction("How large is std(q·k) at d_k = 128?")      # last value of its cell
    ...                                                           # the experiment
    guess.reveal(std_128)
    # your prediction = 8
    # measured = 11.39
    # off by = 3.39 (30% of the measurement, too low)

Nobody commits anything when a notebook runs unattended (nbval, CI, Run All), so `reveal`
then prints `your prediction = none committed ...` and the measurement: stored outputs stay
reproducible. A student who ran ahead commits above and runs the reveal cell again. Outside
JupyterLab's widgets (VS Code, a script, a grader) `guess.commit(8)` commits from code.

`Question`: a "Check your understanding" question takes the student's answer before it shows the
course's. The course's answer (`gptlib.lessons.engine.answers`, filled with the notebook's measured
numbers) is held by the object and is in no output until an answer is committed, in the box or from
code (`question.commit("...")`).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets

from gptlib.lessons.engine.answers import answer_text

KINDS = ("number", "choice")
NOT_COMMITTED = "none committed (commit one above, then run this cell again)"


def _shown(value: float | str, fmt: str) -> str:
    """A choice in quotes, a number with `fmt`."""
    return repr(value) if isinstance(value, str) else f"{value:{fmt}}"


@dataclass(frozen=True)
class Comparison:
    """A committed prediction (None if there is none) next to the measurement.

    For a number, how far off it was (absolute, and relative to a non-zero measurement); for a
    choice, whether it was right. `fmt` formats the numbers.
    """

    prediction: float | str | None
    measured: float | str
    fmt: str = ".4g"

    def lines(self) -> list[str]:
        """The comparison as `name = value` lines (what `Prediction.reveal` prints)."""
        measured = f"measured = {_shown(self.measured, self.fmt)}"
        if self.prediction is None:
            return [f"your prediction = {NOT_COMMITTED}", measured]
        lines = [f"your prediction = {_shown(self.prediction, self.fmt)}", measured]
        if isinstance(self.measured, str):
            return [*lines, f"right = {'yes' if self.prediction == self.measured else 'no'}"]
        miss = self.prediction - self.measured
        if miss == 0:
            return [*lines, "off by = 0 (exact)"]
        side = "too high" if miss > 0 else "too low"
        note = (
            side
            if self.measured == 0
            else f"{abs(miss / self.measured):z.0%} of the measurement, {side}"
        )
        return [*lines, f"off by = {abs(miss):{self.fmt}} ({note})"]


class Prediction:
    """A question, an input ("number": a text box; "choice": one button per choice) and a
    commit button that locks the input. `committed` holds the committed value (or None).

    Make it the last value of a cell to show it; building it displays nothing.
    """

    def __init__(
        self, question: str, kind: str = "number", choices: Sequence[str] = (), fmt: str = ".4g"
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        choices = list(choices)
        if kind == "choice" and (len(choices) < 2 or len(set(choices)) != len(choices)):
            raise ValueError(f"a choice needs at least two distinct choices, got {choices}")
        if kind == "number" and choices:
            raise ValueError(f"a number prediction takes no choices, got {choices}")
        self.question_text, self.kind, self.choices, self.fmt = question, kind, choices, fmt
        self.committed: float | str | None = None
        if kind == "number":
            self.input = widgets.FloatText(value=0.0, description="prediction")
        else:
            self.input = widgets.ToggleButtons(
                options=choices, value=None, description="prediction"
            )
        self.commit_button = widgets.Button(description="commit", button_style="primary")
        self.status = widgets.Output()
        self.question = widgets.HTML(f"<b>Predict:</b> {html.escape(question)}")
        self.widget = widgets.VBox(
            [self.question, widgets.HBox([self.input, self.commit_button]), self.status]
        )
        self.input.observe(lambda _: self._show_status(), names="value")
        self.commit_button.on_click(lambda _: self._commit_clicked())
        self._show_status()

    def status_line(self) -> str:
        """The `name = value` line under the input: the guess and whether it is committed."""
        if self.committed is not None:
            return f"your prediction = {_shown(self.committed, self.fmt)} (committed)"
        if self.input.value is None:
            return f"your prediction = none yet (pick one of {self.choices})"
        return f"your prediction = {_shown(self.input.value, self.fmt)} (not committed)"

    def _show_status(self) -> None:
        text = self.status_line() + "\n"
        self.status.outputs = ({"output_type": "stream", "name": "stdout", "text": text},)

    def _commit_clicked(self) -> None:
        if self.input.value is not None:
            self.commit()

    def commit(self, value: float | str | None = None) -> None:
        """Lock in `value` (or, without one, the input's current value)."""
        if self.committed is not None:
            raise ValueError(f"already committed {_shown(self.committed, self.fmt)}; it stays")
        if value is not None:
            if self.kind == "choice" and value not in self.choices:
                raise ValueError(f"choose one of {self.choices}, got {value!r}")
            self.input.value = value
        if self.input.value is None:
            raise ValueError(f"nothing to commit: pick one of {self.choices} first")
        if self.kind == "number" and not math.isfinite(self.input.value):
            raise ValueError(f"a prediction must be a finite number, got {self.input.value}")
        self.committed = self.input.value
        self.input.disabled = self.commit_button.disabled = True
        self.commit_button.description = "committed"
        self._show_status()

    def comparison(self, measured: Any) -> Comparison:
        """The committed prediction next to `measured` (a number, or one of the choices)."""
        if self.kind == "choice":
            if measured not in self.choices:
                raise ValueError(f"measured must be one of {self.choices}, got {measured!r}")
            return Comparison(self.committed, measured, self.fmt)
        return Comparison(self.committed, float(measured), self.fmt)

    def reveal(self, measured: Any) -> None:
        """Print the committed prediction, the measurement and how far off it was."""
        print("\n".join(self.comparison(measured).lines()))

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        if self.committed is not None:
            plain = f"Predict: {self.question_text}\n{self.status_line()}"
        else:
            plain = (
                f"Predict: {self.question_text} (type it in the box and press commit; without "
                "JupyterLab's widgets, call commit(your_guess) on this prediction in a cell)"
            )
            if self.kind == "choice":
                plain += f"\nchoices: {self.choices}"
        bundle["text/plain"] = plain
        return bundle


class Question:
    """A "Check your understanding" question (its text is the markdown above the cell): a box
    for the student's answer and a commit button; committing shows the course's answer.

    `key` names the stored answer in `gptlib.lessons.engine.answers` and `values` fill its
    placeholders with the notebook's own numbers. Make it the last value of a cell to show it;
    building it displays nothing and puts the course's answer in no output.
    """

    def __init__(self, key: str, **values: object) -> None:
        self.key = key
        self._course_answer = answer_text(key, **values)  # shown only after a commit
        self.committed: str | None = None
        self.input = widgets.Textarea(
            placeholder="Your answer, in a sentence or two", layout=widgets.Layout(width="95%")
        )
        self.commit_button = widgets.Button(
            description="commit, then show the course's answer",
            button_style="primary",
            layout=widgets.Layout(width="auto"),
        )
        self.revealed = widgets.Output()  # the status line under the button, then both answers
        self._show_in_widget()
        self.widget = widgets.VBox([self.input, self.commit_button, self.revealed])
        self.commit_button.on_click(lambda _: self._commit_clicked())

    def _show_in_widget(self) -> None:
        text = "\n".join(self.lines()) + "\n"
        self.revealed.outputs = ({"output_type": "stream", "name": "stdout", "text": text},)

    def _commit_clicked(self) -> None:
        if self.input.value.strip() and self.committed is None:
            self._lock(self.input.value)

    def _lock(self, text: object) -> None:
        if self.committed is not None:
            raise ValueError("an answer is already committed; it stays")
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f'write an answer first, got {text!r}: commit("your answer in words")')
        self.committed = " ".join(text.split())
        self.input.value, self.input.disabled = self.committed, True
        self.commit_button.disabled, self.commit_button.description = True, "committed"
        self._show_in_widget()

    def commit(self, text: str | None = None) -> None:
        """Lock in `text` (or, without it, what the box holds) and print the course's answer."""
        self._lock(self.input.value if text is None else text)
        print("\n".join(self.lines()))

    def lines(self) -> list[str]:
        """Your committed answer, then the course's (nothing of it before a commit)."""
        if self.committed is None:
            return ["your answer = none committed (the course's answer appears once you commit)"]
        return [f"your answer = {self.committed}", "the course's answer:", self._course_answer]

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = (
            "\n".join(self.lines())
            if self.committed is not None
            else "Your answer first: write it in the box and press commit (without JupyterLab's "
            'widgets, call commit("your answer") on this question in a cell); the course\'s '
            "answer appears then."
        )
        return bundle
