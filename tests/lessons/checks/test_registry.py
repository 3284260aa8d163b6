"""Every registered exercise: an answer written independently of its reference passes (so the
reference is compared with another implementation, not with itself), the stub is 'not
implemented yet', and each catalogued mistake fails with its own message and name, which the
notebook-facing `check` writes in the form the class report reads back."""

import pytest

from gptlib.lessons.checks import (
    REGISTRY,
    CheckError,
    NotImplementedYet,
    Outcome,
    check,
    read_outcome,
    verify,
)
from gptlib.lessons.checks.core import forget_tries
from gptlib.lessons.checks.outcomes import MISTAKE, NOT_IMPLEMENTED, PASSED
from tests.lessons.checks import (
    test_nb01,
    test_nb02,
    test_nb03,
    test_nb04,
    test_nb05,
    test_nb06,
    test_nb07,
    test_nb08,
    test_nb09,
)

EXERCISES = sorted(REGISTRY)
# For each exercise one right answer that shares no code with its reference (torch's own
# functions, another formula, another dtype); the notebooks' test files hold more of them.
INDEPENDENT = {
    "attention": test_nb02._by_einsum,
    "attention-module": test_nb04._BySdpa,
    "block_forward": test_nb06._in_float64,
    "causal-attention-weights": test_nb03.WEIGHTS["torch.where in float64"],
    "causal-mask": test_nb03.MASKS["arange comparison"],
    "effective-choices": test_nb08.CHOICES["float64"],
    "embed": test_nb01.EMBED_ANSWERS["one-hot product"],
    "ffn_parameter_count": test_nb05.COUNTS["a float"],
    "generate": test_nb07._generate_by_scatter,
    "gpt": test_nb07.ChapterStyleGPT,
    "gpt-attention": test_nb04._BySdpa,
    "gpt-block": test_nb07.TrilBlock,
    "gpt-mlp": test_nb05.ByHand,
    "kv-cache": test_nb07._attend_by_einsum,
    "llama-block-parameters": test_nb09.LLAMA_COUNTS["a float formula"],
    "layer_norm": test_nb06.LAYER_NORMS["nn.LayerNorm"],
    "merge-heads": test_nb04.MERGES["cat of heads"],
    "mlp": test_nb05.ByHand,
    "sinusoidal-positions": test_nb01._sinusoidal_by_loops,
    "softmax-rows": test_nb02.SOFTMAXES["log-sum-exp"],
    "split-heads": test_nb04.SPLITS["stack of chunks"],
    "surprisal": test_nb08.SURPRISALS["float64 probabilities"],
    "top-p-probabilities": test_nb08._top_p_by_searchsorted,
    "training-gpu-hours": test_nb09.HOURS["another order"],
}
MISTAKES = [(name, m) for name in EXERCISES for m in REGISTRY[name].mistakes]


def _stub(*args, **kwargs):
    raise NotImplementedError()


def test_every_exercise_has_an_independent_answer():
    assert sorted(INDEPENDENT) == EXERCISES


@pytest.mark.parametrize("name", EXERCISES)
def test_an_independent_answer_passes(name, capsys):
    check(name, INDEPENDENT[name], namespace={})
    out, err = capsys.readouterr()
    assert err == ""
    assert read_outcome(out) == Outcome(name, PASSED)


@pytest.mark.parametrize("name", EXERCISES)
def test_stub_reports_not_implemented(name, capsys):
    with pytest.raises(NotImplementedYet, match="not implemented yet"):
        verify(name, _stub)
    check(name, _stub, namespace={})
    outcome = read_outcome(capsys.readouterr().err)
    assert (outcome.exercise, outcome.status) == (name, NOT_IMPLEMENTED)


@pytest.mark.parametrize(("name", "mistake"), MISTAKES, ids=[f"{n}-{m.name}" for n, m in MISTAKES])
def test_each_mistake_is_named(name, mistake, capsys):
    with pytest.raises(CheckError) as info:
        verify(name, mistake.implementation)
    assert str(info.value) == f"{name}: {mistake.message}"
    assert info.value.mistake == mistake.name
    forget_tries(name)  # a second report would add the fix
    check(name, mistake.implementation, namespace={})
    assert read_outcome(capsys.readouterr().err) == Outcome(
        name, MISTAKE, " ".join(mistake.message.split()), mistake.name
    )


def test_every_exercise_has_mistakes_and_unique_names():
    for name in EXERCISES:
        exercise = REGISTRY[name]
        assert exercise.mistakes, f"{name} has no catalogued mistakes"
        names = [m.name for m in exercise.mistakes]
        assert len(names) == len(set(names)), f"{name}: duplicate mistake names {names}"
        assert all("\n" not in n and n.strip() == n for n in names), names
