"""The check's report reads back into the outcome it reports, and nothing else does: the text a
student reads names no internal mistake name; the notice's metadata carries it for the report."""

from gptlib.lessons.engine.checks import CheckError, NotImplementedYet, Outcome, read_outcome
from gptlib.lessons.engine.checks.outcomes import (
    MISTAKE,
    NOT_IMPLEMENTED,
    OUTCOME_KEY,
    PASSED,
    UNEXPLAINED,
    not_yet_text,
    outcome_from_outputs,
    outcome_metadata,
    outcome_of,
    passed_line,
)


def test_each_outcome_reads_back_from_the_text():
    assert read_outcome(passed_line("embed", 2)) == Outcome("embed", PASSED)
    stub = not_yet_text(NotImplementedYet("embed"))
    assert stub.startswith("✘ embed: not implemented yet\nReplace `raise NotImplementedError()`")
    assert read_outcome(stub).status == NOT_IMPLEMENTED
    named = not_yet_text(CheckError("attention", "you divided by d_k;\ndivide by √d_k.", "by d_k"))
    assert named == "✘ attention: not right yet\nyou divided by d_k; divide by √d_k.\n"
    assert "by d_k\n" not in named.split("\n", 2)[2]  # no tag line for the student
    assert read_outcome(named) == Outcome(
        "attention", UNEXPLAINED, "you divided by d_k; divide by √d_k."
    )


def test_the_mistakes_name_travels_in_the_notices_metadata():
    error = CheckError("attention", "you divided by d_k;\ndivide by √d_k.", "by d_k")
    outcome = outcome_of(error)
    assert outcome == Outcome("attention", MISTAKE, "you divided by d_k; divide by √d_k.", "by d_k")
    outputs = [
        {"output_type": "stream", "name": "stderr", "text": not_yet_text(error)},
        {
            "output_type": "display_data",
            "data": {"text/plain": "Not yet: attention"},
            "metadata": outcome_metadata(outcome),
        },
    ]
    assert outcome_from_outputs(outputs) == outcome
    assert outcome_from_outputs(outputs[:1]).status == UNEXPLAINED  # text alone: no name
    assert OUTCOME_KEY in outputs[1]["metadata"]
    assert outcome_of(NotImplementedYet("embed")).status == NOT_IMPLEMENTED
    assert outcome_of(CheckError("embed", "off by 2")) == Outcome("embed", UNEXPLAINED, "off by 2")


def test_a_passed_check_reads_back_from_stdout():
    outputs = [{"output_type": "stream", "name": "stdout", "text": passed_line("top-k", 3)}]
    assert outcome_from_outputs(outputs) == Outcome("top-k", PASSED)
    assert outcome_from_outputs([]) is None


def test_text_around_the_report_does_not_change_it():
    named = not_yet_text(CheckError("top-k", "one token too few survives", "k minus one"))
    text = f"Note: while it was checked, your code said:\n  x\n{named}\n"
    assert read_outcome(text) == Outcome("top-k", UNEXPLAINED, "one token too few survives")
    assert read_outcome("all good\n") is None
    assert read_outcome("✔ top-k is correct") is None
