"""Predict, then reveal: committing locks the guess; the reveal compares it with the measurement."""

import math

import pytest
import torch

from gptlib.lessons.engine.predict import NOT_COMMITTED, Comparison, Prediction, Question


def _status(guess: Prediction) -> str:
    (output,) = guess.status.outputs
    return output["text"]


def test_nothing_committed_prints_the_measurement_only(capsys):
    guess = Prediction("How large is std(q·k) at d_k = 128?")
    guess.reveal(11.277)
    assert capsys.readouterr().out == f"your prediction = {NOT_COMMITTED}\nmeasured = 11.28\n"


def test_a_typed_and_committed_number_is_compared(capsys):
    guess = Prediction("std(q·k) at d_k = 128?")
    assert _status(guess) == "your prediction = 0 (not committed)\n"
    guess.input.value = 8.0
    assert _status(guess) == "your prediction = 8 (not committed)\n"
    guess.commit_button.click()
    assert guess.committed == 8.0 and guess.input.disabled and guess.commit_button.disabled
    assert _status(guess) == "your prediction = 8 (committed)\n"
    guess.reveal(torch.tensor(11.28))  # a scalar tensor is a number too
    assert capsys.readouterr().out.splitlines() == [
        "your prediction = 8",
        "measured = 11.28",
        "off by = 3.28 (29% of the measurement, too low)",
    ]


def test_commit_locks_the_guess():
    guess = Prediction("q?")
    guess.commit(12.5)
    with pytest.raises(ValueError, match="already committed 12.5"):
        guess.commit(3.0)
    assert guess.comparison(10).lines()[-1] == "off by = 2.5 (25% of the measurement, too high)"


def test_comparison_of_numbers_by_hand():
    assert Comparison(2.0, 2.0).lines()[-1] == "off by = 0 (exact)"
    assert Comparison(0.5, 0.0).lines()[-1] == "off by = 0.5 (too high)"
    assert Comparison(1 / 3, 1.0, fmt=".2f").lines() == [
        "your prediction = 0.33",
        "measured = 1.00",
        "off by = 0.67 (67% of the measurement, too low)",
    ]


def test_a_choice(capsys):
    guess = Prediction("Does the loss fall below the floor?", kind="choice", choices=["yes", "no"])
    assert _status(guess) == "your prediction = none yet (pick one of ['yes', 'no'])\n"
    guess.commit_button.click()  # nothing picked: nothing committed
    assert guess.committed is None and not guess.input.disabled
    guess.input.value = "yes"
    guess.commit_button.click()
    guess.reveal("yes")
    assert capsys.readouterr().out.splitlines() == [
        "your prediction = 'yes'",
        "measured = 'yes'",
        "right = yes",
    ]
    assert guess.comparison("no").lines()[-1] == "right = no"


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="kind must be one of"):
        Prediction("q?", kind="slider")
    with pytest.raises(ValueError, match="two distinct choices"):
        Prediction("q?", kind="choice", choices=["a", "a"])
    with pytest.raises(ValueError, match="takes no choices"):
        Prediction("q?", choices=["a", "b"])
    choice = Prediction("q?", kind="choice", choices=["a", "b"])
    with pytest.raises(ValueError, match="choose one of"):
        choice.commit("c")
    with pytest.raises(ValueError, match="nothing to commit"):
        choice.commit()
    with pytest.raises(ValueError, match="measured must be one of"):
        choice.reveal("c")
    with pytest.raises(ValueError, match="finite"):
        Prediction("q?").commit(math.inf)


def test_it_displays_as_a_widget_with_a_plain_text_fallback():
    guess = Prediction("std(q·k) at d_k = 128?")
    question, row, status = guess.widget.children
    assert "std(q·k) at d_k = 128?" in question.value
    assert list(row.children) == [guess.input, guess.commit_button] and status is guess.status
    bundle = guess._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"].startswith("Predict: std(q·k) at d_k = 128?")
    assert "press commit" in bundle["text/plain"]


def test_a_choice_lists_its_choices_in_plain_text():
    """Without widgets a student cannot see the buttons: a student trial printed the choices'
    source to spell one."""
    guess = Prediction("Which removal costs most?", kind="choice", choices=["no MLP", "one head"])
    plain = guess._repr_mimebundle_()["text/plain"]
    assert plain.endswith("\nchoices: ['no MLP', 'one head']")
    assert "choices:" not in Prediction("std?")._repr_mimebundle_()["text/plain"]


def test_shown_again_after_a_commit_it_says_what_was_committed():
    """A front end without widgets shows the plain text: once committed, it says so."""
    guess = Prediction("std(q·k) at d_k = 128?")
    guess.commit(11.5)
    plain = guess._repr_mimebundle_()["text/plain"]
    assert plain.splitlines()[1] == "your prediction = 11.5 (committed)"
    assert "press commit" not in plain
    question = Question(QUESTION[0], **QUESTION[1])
    question.commit("120 of them")
    plain = question._repr_mimebundle_()["text/plain"]
    assert plain.startswith("your answer = 120 of them\nthe course's answer:\n")


QUESTION = ("03.masked-entries", {"blocked": 120, "n_scores": 256, "seen_by_last": 16})


def test_a_question_shows_nothing_of_the_courses_answer_before_a_commit(capsys):
    question = Question(QUESTION[0], **QUESTION[1])
    bundle = question._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "commit" in bundle["text/plain"] and "120" not in str(bundle)
    assert question.lines() == [
        "your answer = none committed (the course's answer appears once you commit)"
    ]
    assert capsys.readouterr().out == ""
    shown = "".join(output["text"] for output in question.revealed.outputs)
    assert shown == question.lines()[0] + "\n"  # the status line under the button


def test_a_question_committed_from_code_prints_both_answers(capsys):
    question = Question(QUESTION[0], **QUESTION[1])
    question.commit("  half of them,\n minus the diagonal ")
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ["your answer = half of them, minus the diagonal", "the course's answer:"]
    assert "T(T-1)/2 = 120 of the 256 scores" in out[2]
    assert question.input.disabled and question.commit_button.disabled
    with pytest.raises(ValueError, match="already committed"):
        question.commit("another")


def test_a_question_committed_with_the_button_shows_the_answer_under_it():
    question = Question(QUESTION[0], **QUESTION[1])
    question.commit_button.click()  # an empty box commits nothing
    assert question.committed is None
    question.input.value = "120 of them"
    question.commit_button.click()
    assert question.committed == "120 of them"
    shown = "".join(output["text"] for output in question.revealed.outputs)
    assert shown.startswith("your answer = 120 of them\nthe course's answer:\n")
    assert "T(T-1)/2 = 120 of the 256 scores" in shown


def test_an_empty_answer_or_an_unknown_key_is_refused():
    with pytest.raises(ValueError, match="write an answer first"):
        Question(QUESTION[0], **QUESTION[1]).commit("   ")
    with pytest.raises(ValueError, match="no stored answer"):
        Question("03.no-such-question")
