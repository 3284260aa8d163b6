"""Every registered exercise: an answer written independently of its reference passes (so the
reference is compared with another implementation, not with itself), the stub is 'not
implemented yet', and each catalogued mistake fails with its own message and name, which the
notebook-facing `check` writes in the form the class report reads back."""

import pytest

from gptlib.lessons.engine.checks import (
    REGISTRY,
    CheckError,
    NotImplementedYet,
    Outcome,
    check,
    in_notebook,
    read_outcome,
    verify,
)
from gptlib.lessons.engine.checks.core import forget_tries
from gptlib.lessons.engine.checks.outcomes import (
    MISTAKE,
    NOT_IMPLEMENTED,
    PASSED,
    UNEXPLAINED,
    outcome_from_outputs,
)
from tests.lessons.nb01 import test_checks as test_nb01
from tests.lessons.nb02 import test_checks as test_nb02
from tests.lessons.nb03 import test_checks as test_nb03
from tests.lessons.nb04 import test_checks as test_nb04
from tests.lessons.nb05 import test_checks as test_nb05
from tests.lessons.nb06 import test_checks as test_nb06
from tests.lessons.nb07 import test_checks as test_nb07
from tests.lessons.nb08 import test_checks as test_nb08
from tests.lessons.nb09 import test_checks as test_nb09

EXERCISES = sorted(REGISTRY)
# For each exercise one right answer that shares no code with its reference (torch's own
# functions, another formula, another dtype); the notebooks' test files hold more of them.
INDEPENDENT = {
    "attention": test_nb02._by_einsum,
    "attention-module": test_nb04._BySdpa,
    "block_forward": test_nb06._in_float64,
    "block_gradient_norms": test_nb06._by_autograd_grad,
    "causal-attention-weights": test_nb03.WEIGHTS["torch.where in float64"],
    "effective-choices": test_nb08.CHOICES["float64"],
    "entropy-floor": test_nb03.FLOORS["every sentence enumerated"],
    "embed": test_nb01.EMBED_ANSWERS["one-hot product"],
    "fan_in_init_": test_nb05.INITS["kaiming_normal_"],
    "generate": test_nb07._generate_by_scatter,
    "first-step-gradients": test_nb02.GRADIENTS["autograd.grad"],
    "flops-per-token": test_nb09.FLOPS["op names as strings, two counters"],
    "get-batch": test_nb08.BATCHES["unfold"],
    "gpt": test_nb07.ChapterStyleGPT,
    "gpt-attention": test_nb04._BySdpa,
    "gpt-block": test_nb07.TrilBlock,
    "gpt-mlp": test_nb05.ByHand,
    "held-out-losses": test_nb03.HELD_OUT["float64, window by window"],
    "kv-cache": test_nb07._attend_by_einsum,
    "llama-block-parameters": test_nb09.LLAMA_COUNTS["a float formula"],
    "layer_norm": test_nb06.LAYER_NORMS["var_mean and rsqrt"],
    "measure-softmax": test_nb02.MEASURES["formulas"],
    "mlp": test_nb05.ByHand,
    "output-changes": test_nb03.CHANGES["one batched pass"],
    "moved-by-token": test_nb04.MOVED_ANSWERS["jacobian"],
    "permutation-test": test_nb01._permutation_test_by_loops,
    "position_similarity": test_nb05.SIMILARITIES["loops over pairs"],
    "similarity-by-offset": test_nb01._similarity_by_loops,
    "sinusoidal-positions": test_nb01._sinusoidal_by_loops,
    "reads-ahead": test_nb04.READS_AHEAD_ANSWERS["upper triangle"],
    "softmax-rows": test_nb02.SOFTMAXES["log-sum-exp"],
    "split-heads": test_nb04.SPLITS["stack of chunks"],
    "stream_profile": test_nb06._by_hooks_in_float64,
    "stream_readout": test_nb05._readout_by_hooks,
    "top-p-probabilities": test_nb08._top_p_by_searchsorted,
    "train": test_nb08.LOOPS["mean over tokens in inference mode, foreach AdamW"],
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
def test_each_mistake_is_named_and_its_fix_comes_only_the_second_time(
    name, mistake, capsys, monkeypatch
):
    with pytest.raises(CheckError) as info:
        verify(name, mistake.implementation)
    assert str(info.value) == f"{name}: {mistake.message}"
    assert info.value.mistake == mistake.name
    if mistake.fix:
        with pytest.raises(CheckError) as again:
            verify(name, mistake.implementation)
        assert again.value.detail.startswith(mistake.message) and mistake.fix in again.value.detail
    forget_tries()
    shown = []
    monkeypatch.setattr(in_notebook, "_in_kernel", lambda: True)
    monkeypatch.setattr(
        "IPython.display.display", lambda data, metadata=None, raw=False: shown.append(metadata)
    )
    check(name, mistake.implementation, namespace={})
    err = capsys.readouterr().err
    assert read_outcome(err) == Outcome(name, UNEXPLAINED, " ".join(mistake.message.split()))
    assert outcome_from_outputs([{"metadata": shown[-1]}]) == Outcome(
        name, MISTAKE, " ".join(mistake.message.split()), mistake.name
    )


def test_every_exercise_has_mistakes_and_unique_names():
    for name in EXERCISES:
        exercise = REGISTRY[name]
        assert exercise.mistakes, f"{name} has no catalogued mistakes"
        names = [m.name for m in exercise.mistakes]
        assert len(names) == len(set(names)), f"{name}: duplicate mistake names {names}"
        assert all("\n" not in n and n.strip() == n for n in names), names
