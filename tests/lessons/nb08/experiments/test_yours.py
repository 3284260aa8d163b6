"""`whose` says "your" only for the student's own function: a check's stand-in is named as the
reference."""

import torch

from gptlib.lessons.engine.checks import REGISTRY
from gptlib.lessons.engine.checks.in_notebook import check
from gptlib.lessons.nb08.experiments.yours import whose


def test_the_student_s_function_is_theirs():
    def top_p_probabilities(logits, p):
        return logits.softmax(-1)

    assert whose(top_p_probabilities, "top_p_probabilities") == "your top_p_probabilities"


def test_the_stand_in_a_failed_check_leaves_is_named_as_the_reference(capsys):
    def top_p_probabilities(logits, p):  # no nucleus at all: wrong
        return logits.softmax(-1)

    namespace = {"top_p_probabilities": top_p_probabilities}
    check("top-p-probabilities", top_p_probabilities, namespace=namespace)
    stand_in = namespace["top_p_probabilities"]
    assert stand_in is not top_p_probabilities
    logits = torch.randn(2, 9)
    reference = REGISTRY["top-p-probabilities"].reference
    torch.testing.assert_close(stand_in(logits, 0.5), reference(logits, 0.5))
    assert whose(stand_in, "top_p_probabilities") == (
        "the reference top_p_probabilities (yours has not passed its check)"
    )
