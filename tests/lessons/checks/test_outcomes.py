"""The check's printed report reads back into the outcome it reports, and nothing else does."""

from gptlib.lessons.checks import CheckError, NotImplementedYet, Outcome, read_outcome
from gptlib.lessons.checks.outcomes import (
    MISTAKE,
    NOT_IMPLEMENTED,
    PASSED,
    UNEXPLAINED,
    not_yet_text,
    passed_line,
)


def test_each_outcome_reads_back():
    assert read_outcome(passed_line("embed", 2)) == Outcome("embed", PASSED)
    stub = not_yet_text(NotImplementedYet("embed"))
    assert stub.startswith("✘ embed: not implemented yet\nReplace `raise NotImplementedError()`")
    assert read_outcome(stub).status == NOT_IMPLEMENTED
    named = not_yet_text(CheckError("attention", "you divided by d_k;\ndivide by √d_k.", "by d_k"))
    assert named == (
        "✘ attention: not right yet\nyou divided by d_k; divide by √d_k.\nmisconception: by d_k\n"
    )
    assert read_outcome(named) == Outcome(
        "attention", MISTAKE, "you divided by d_k; divide by √d_k.", "by d_k"
    )
    other = not_yet_text(CheckError("attention", "the result differs from the reference"))
    assert read_outcome(other) == Outcome(
        "attention", UNEXPLAINED, "the result differs from the reference"
    )


def test_text_around_the_report_does_not_change_it():
    named = not_yet_text(CheckError("top-k", "one token too few survives", "k minus one"))
    text = f"Note: while it was checked, your code said:\n  x\n{named}\nmisconception: other\n"
    assert read_outcome(text).mistake == "k minus one"
    assert read_outcome("all good\n") is None
    assert read_outcome("✔ top-k is correct") is None
