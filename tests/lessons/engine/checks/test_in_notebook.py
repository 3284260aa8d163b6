"""`check`, as the notebooks call it: a right answer prints one line and nothing on stderr; any
other answer writes the message on stderr (which nbgrader scores zero), never raises, and the
reference takes the student's place in the notebook's namespace, announced by a box."""

import os
import sys
import warnings

import pytest
import torch
from torch import nn

from gptlib.lessons.engine.checks import (
    REGISTRY,
    CheckError,
    Exercise,
    Mistake,
    Outcome,
    check,
    in_notebook,
    read_outcome,
    verify,
    whose,
)
from gptlib.lessons.engine.checks.outcomes import (
    MISTAKE,
    NOT_IMPLEMENTED,
    OUTCOME_KEY,
    PASSED,
    UNEXPLAINED,
)


def _double(x: torch.Tensor) -> torch.Tensor:
    return 2 * x


class Doubler(nn.Module):
    """A class-shaped reference, like the capstone's `Block`: Doubler()(x) = 2x."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 2 * x


FUNCTION = Exercise(
    name="notebook-demo-double",
    notebook="tests",
    reference=_double,
    make_inputs=lambda g: [(torch.randn(3, generator=g),)],
    mistakes=(Mistake("tripled", "you tripled x; double it.", lambda x: 3 * x),),
)
CLASS = Exercise(
    name="notebook-demo-class",
    notebook="tests",
    reference=lambda x: Doubler()(x),
    make_inputs=lambda g: [(torch.randn(3, generator=g),)],
    mistakes=(Mistake("tripled", "you tripled x.", lambda x: 3 * x),),
    stand_in=Doubler,
)


@pytest.fixture(autouse=True)
def registered():
    for exercise in (FUNCTION, CLASS):
        REGISTRY[exercise.name] = exercise
    yield
    for exercise in (FUNCTION, CLASS):
        del REGISTRY[exercise.name]


def _stub(x):
    raise NotImplementedError()


def test_a_right_answer_prints_one_line_and_keeps_its_name(capfd):
    namespace = {"double": lambda x: x + x}
    student = namespace["double"]
    check(FUNCTION.name, student, namespace=namespace)
    out, err = capfd.readouterr()
    assert err == ""
    assert out == "✔ notebook-demo-double: correct on 1 test input(s).\n"
    assert namespace["double"] is student


def test_a_stub_is_reported_on_stderr_and_the_reference_stands_in(capfd):
    namespace = {"double": _stub, "alias": _stub, "_": _stub, "_7": _stub}
    check(FUNCTION.name, _stub, namespace=namespace)
    out, err = capfd.readouterr()
    assert read_outcome(err).status == NOT_IMPLEMENTED
    assert "The reference `double` stands in for yours below" in out
    assert "autograding counts this exercise as not passed" in out
    stand_in = namespace["double"]
    assert namespace["alias"] is stand_in and stand_in.__name__ == "double"
    assert namespace["_"] is _stub and namespace["_7"] is _stub  # IPython's history stays
    x = torch.arange(3.0)
    assert torch.equal(stand_in(x), 2 * x)


def test_a_catalogued_mistake_is_named_on_stderr(capfd):
    namespace = {"double": lambda x: 3 * x}
    check(FUNCTION.name, namespace["double"], namespace=namespace)
    out, err = capfd.readouterr()
    assert err.splitlines() == [
        "✘ notebook-demo-double: not right yet",
        "you tripled x; double it.",
    ]
    assert "stands in" in out


def test_in_a_kernel_the_notice_carries_the_mistakes_name_for_the_report(monkeypatch, capfd):
    shown = []
    monkeypatch.setattr(in_notebook, "_in_kernel", lambda: True)
    monkeypatch.setattr(
        "IPython.display.display", lambda data, metadata=None, raw=False: shown.append(metadata)
    )
    namespace = {"double": lambda x: 3 * x}
    check(FUNCTION.name, namespace["double"], namespace=namespace)
    assert capfd.readouterr().err.endswith("you tripled x; double it.\n")  # no tag line
    (metadata,) = shown
    assert metadata[OUTCOME_KEY]["status"] == MISTAKE
    assert metadata[OUTCOME_KEY]["mistake"] == "tripled"


def test_checking_the_stand_in_of_a_stub_again_asks_for_the_students_own_answer(capfd):
    namespace = {"double": _stub}
    check(FUNCTION.name, _stub, namespace=namespace)
    capfd.readouterr()
    check(FUNCTION.name, namespace["double"], namespace=namespace)
    err = capfd.readouterr().err
    assert read_outcome(err).status == NOT_IMPLEMENTED
    assert "`double` is still the reference that stood in for your answer" in err
    # the reference itself, passed directly, is no stand-in but a delegation
    with pytest.raises(CheckError) as info:
        verify(FUNCTION.name, FUNCTION.reference)
    assert info.value.mistake == "delegated"


def _tripled(x):
    return 3 * x


def _squared(x):
    return x * x


@pytest.mark.parametrize(("answer", "mistake"), [(_tripled, "tripled"), (_squared, None)])
def test_checking_the_stand_in_of_a_written_answer_says_it_did_not_pass(
    answer, mistake, capfd, monkeypatch
):
    """A student re-runs the check cell, not their own: their answer exists but did not pass,
    so the check says so (not 'not implemented'), and the class report keeps what it made."""
    shown = []
    monkeypatch.setattr(in_notebook, "_in_kernel", lambda: True)
    monkeypatch.setattr(
        "IPython.display.display", lambda data, metadata=None, raw=False: shown.append(metadata)
    )
    namespace = {"double": answer}
    check(FUNCTION.name, answer, namespace=namespace)
    capfd.readouterr()
    for _ in range(2):  # and again: the stand-in of the stand-in remembers the same
        check(FUNCTION.name, namespace["double"], namespace=namespace)
        err = capfd.readouterr().err
        assert err.startswith(f"✘ {FUNCTION.name}: not right yet\n")
        assert "not implemented" not in err
        assert "your `double` did not pass this check, so the reference has stood in" in err
        assert read_outcome(err).status != NOT_IMPLEMENTED
        outcome = shown[-1][OUTCOME_KEY]
        assert (outcome["status"], outcome["mistake"]) == (
            (MISTAKE, mistake) if mistake else (UNEXPLAINED, None)
        )


def test_by_default_the_callers_globals_are_the_notebook(capfd):
    notebook = {"check": check, "torch": torch}  # a notebook's globals are its namespace
    exec(
        "def double(x):\n    raise NotImplementedError()\n\n"
        f"check({FUNCTION.name!r}, double)\n"
        "result = double(torch.ones(2))\n",
        notebook,
    )
    capfd.readouterr()
    assert torch.equal(notebook["result"], torch.full((2,), 2.0))


def test_a_class_answer_is_replaced_by_a_subclass_under_the_students_name(capfd):
    class Model(nn.Module):
        def forward(self, x):
            raise NotImplementedError()

    namespace = {"Model": Model}
    check(CLASS.name, lambda x: Model()(x), namespace=namespace)  # the lambda is bound nowhere
    assert namespace["Model"] is Model
    assert "Nothing stands in" in capfd.readouterr().out

    check(CLASS.name, Model, namespace=namespace)
    capfd.readouterr()
    stand_in = namespace["Model"]
    assert issubclass(stand_in, Doubler) and stand_in.__name__ == "Model"
    assert torch.equal(stand_in()(torch.ones(2)), torch.full((2,), 2.0))

    class Student(stand_in):  # a subclass of the stand-in is the student's own again
        pass

    with pytest.raises(AssertionError) as info:
        verify(CLASS.name, Student)
    assert "stood in" not in str(info.value)


def test_nothing_a_right_answer_writes_reaches_stderr(capfd):
    def noisy(x):
        warnings.warn("a deprecation", DeprecationWarning, stacklevel=1)
        print("debug", file=sys.stderr)
        os.write(2, b"from C\n")
        return 2 * x

    check(FUNCTION.name, noisy, namespace={})
    out, err = capfd.readouterr()
    assert err == ""
    assert read_outcome(out).status == PASSED
    for said in ("DeprecationWarning: a deprecation", "debug", "from C"):
        assert f"  {said}\n" in out


def test_an_unknown_exercise_is_a_bug_and_raises():
    with pytest.raises(ValueError, match="no exercise named 'no-such'"):
        check("no-such", _double, namespace={})


def test_in_a_kernel_the_notice_is_an_html_box(monkeypatch):
    shown = []
    monkeypatch.setattr(in_notebook, "_in_kernel", lambda: True)
    monkeypatch.setattr("IPython.display.display", lambda obj, metadata, raw: shown.append(obj))
    in_notebook._show_notice("embed", ["embed"], Outcome("embed", NOT_IMPLEMENTED))
    [box] = shown
    assert "<code>embed</code> stands in for yours below" in box["text/html"]
    assert box["text/plain"].startswith("Not yet: embed\nThe reference `embed` stands in")


def test_whose_says_when_the_reference_stands_in_and_why(capfd):
    def double(x):
        return 2 * x

    assert whose(double) == "your double"
    namespace = {"double": _stub}
    check(FUNCTION.name, _stub, namespace=namespace)
    assert whose(namespace["double"]) == (
        "the reference double, standing in for yours (yours is not written yet)"
    )
    namespace = {"double": lambda x: 3 * x}
    check(FUNCTION.name, namespace["double"], namespace=namespace)
    assert whose(namespace["double"]) == (
        "the reference double, standing in for yours (yours did not pass its check)"
    )

    class Model(nn.Module):
        def forward(self, x):
            return 3 * x

    namespace = {"Model": Model}
    check(CLASS.name, Model, namespace=namespace)
    capfd.readouterr()
    assert whose(namespace["Model"]).startswith("the reference Model, standing in for yours")

    class Student(namespace["Model"]):  # a subclass of the stand-in is the student's own again
        pass

    assert whose(Student) == "your Student"
