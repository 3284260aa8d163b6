"""Notebook 03's exercises: the references agree with independent computations, right answers
written in other ways pass, and the lesson's edge cases fail the answers they are there for."""

import itertools
import math
import statistics

import pytest
import torch
import torch.nn.functional as F

from gptlib import GPT, GPTConfig, causal_mask
from gptlib.data.grammar import Grammar
from gptlib.hooks import evaluating
from gptlib.lessons.engine.checks import REGISTRY, CheckError, verify
from gptlib.lessons.nb03.experiments import with_causal

# --- causal attention weights ------------------------------------------------------------------


def test_attention_weights_reference_matches_gptlibs_attention():
    from gptlib import attention_with_weights

    for (scores,) in REGISTRY["causal-attention-weights"].inputs():
        T = scores.shape[-1]
        # q = scores, k = identity·√T reproduces the scores inside gptlib's attention.
        _, weights = attention_with_weights(
            scores, torch.eye(T) * T**0.5, torch.eye(T), mask=causal_mask(T)
        )
        torch.testing.assert_close(REGISTRY["causal-attention-weights"].reference(scores), weights)


def _lower_triangle(T: int) -> torch.Tensor:
    """The causal mask built by hand, as the exercise asks (gptlib's `causal_mask` is refused)."""
    return torch.ones(T, T, dtype=torch.bool).tril()


def _exp_where_allowed(scores):
    allowed = _lower_triangle(scores.shape[-1])
    top = scores.masked_fill(~allowed, float("-inf")).amax(dim=-1, keepdim=True)
    e = torch.where(allowed, (scores - top).exp(), 0.0)
    return e / e.sum(dim=-1, keepdim=True)


def _arange_comparison(scores):
    T = scores.shape[-1]
    allowed = torch.arange(T)[:, None] >= torch.arange(T)[None, :]
    return torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)


def _blocked_from_triu(scores):
    T = scores.shape[-1]
    blocked = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
    return scores.masked_fill(blocked, float("-inf")).softmax(dim=-1)


WEIGHTS = {
    "-1e9 instead of -inf": lambda s: torch.softmax(
        s.masked_fill(~_lower_triangle(s.shape[-1]), -1e9), dim=-1
    ),
    "additive -inf mask": lambda s: torch.softmax(
        s + torch.full(s.shape[-2:], float("-inf")).triu(1), dim=-1
    ),
    "torch.where in float64": lambda s: F.softmax(
        torch.where(_lower_triangle(s.shape[-1]), s.double(), float("-inf")), dim=-1
    ),
    "exp of the allowed scores only": _exp_where_allowed,
    "arange comparison": _arange_comparison,
    "blocked positions from triu": _blocked_from_triu,
}


@pytest.mark.parametrize("answer", WEIGHTS.values(), ids=WEIGHTS)
def test_other_right_masked_softmaxes_pass(answer):
    verify("causal-attention-weights", answer)


def test_zeroing_and_renormalising_after_the_softmax_fails_where_it_underflows():
    def after(scores):
        weights = torch.softmax(scores, dim=-1) * _lower_triangle(scores.shape[-1])
        return weights / weights.sum(dim=-1, keepdim=True)

    *ordinary, towering = REGISTRY["causal-attention-weights"].inputs()
    for (scores,) in ordinary:  # right on ordinary scores: only the edge case separates them
        torch.testing.assert_close(
            after(scores), REGISTRY["causal-attention-weights"].reference(scores)
        )
    with pytest.raises(CheckError) as info:
        verify("causal-attention-weights", after)
    assert info.value.mistake == "renormalised-after-softmax"


# --- output changes ----------------------------------------------------------------------------


@pytest.fixture
def model():
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=11, d_model=16, n_heads=4, n_layers=2, max_len=16)).eval()


def _by_loops(model, idx, other):
    """Entry by entry: a batch element, a position and a vocabulary entry at a time."""
    base = model(idx)[0].tolist()
    B, T = idx.shape
    change = torch.zeros(T, T)
    for p in range(T):
        edited = idx.clone()
        edited[:, p] = other[:, p]
        moved = model(edited)[0].tolist()
        for t in range(T):
            change[p, t] = max(
                abs(a - b) for s in range(B) for a, b in zip(moved[s][t], base[s][t], strict=True)
            )
    return change


def test_output_changes_reference_agrees_with_a_loop_over_every_entry(model):
    idx = torch.randint(0, 11, (2, 7), generator=torch.Generator().manual_seed(1))
    other = (idx + 3) % 11
    reference = REGISTRY["output-changes"].reference
    for causal in (True, False):
        twin = with_causal(model, causal)
        torch.testing.assert_close(reference(twin, idx, other), _by_loops(twin, idx, other))
    with_mask = reference(model, idx, other)
    on_and_after = torch.ones(7, 7, dtype=torch.bool).triu()
    assert (with_mask[~on_and_after] == 0).all() and (with_mask[on_and_after] > 1e-6).all()
    assert (reference(with_causal(model, False), idx, other) > 1e-6).all()


@torch.no_grad()
def _one_batched_pass(model, idx, other):
    B, T = idx.shape
    edited = idx.repeat(T, 1).view(T, B, T).clone()  # [p, B, T]: copy p will change token p
    p = torch.arange(T)
    edited[p, :, p] = other.T
    logits = model(idx)[0]
    moved = model(edited.view(T * B, T))[0].view(T, B, T, -1)
    return (moved - logits).abs().amax(dim=(1, 3))


def _float64_rows(model, idx, other):
    with torch.inference_mode():
        base = model(idx)[0].double()
        rows = []
        for p in range(idx.shape[1]):
            edited = torch.where(torch.arange(idx.shape[1]) == p, other, idx)
            diff = (model(edited)[0].double() - base).abs()
            rows.append(diff.max(dim=-1).values.max(dim=0).values)
        return torch.stack(rows)


def _with_gradients_then_detached(model, idx, other):
    base = model(idx)[0]
    rows = []
    for p in range(idx.shape[1]):
        edited = idx.clone()
        edited[:, p] = other[:, p]
        rows.append((model(edited)[0] - base).abs().flatten(start_dim=2).amax(dim=2).amax(dim=0))
    return torch.stack(rows).detach()


def _per_sequence(model, idx, other):
    """The change of each sequence on its own, then the largest over the sequences."""
    with torch.no_grad():
        per = []
        for s in range(idx.shape[0]):
            one, one_other = idx[s : s + 1], other[s : s + 1]
            base = model(one)[0][0]
            rows = []
            for p in range(idx.shape[1]):
                edited = one.clone()
                edited[0, p] = one_other[0, p]
                rows.append((model(edited)[0][0] - base).abs().max(dim=-1).values)
            per.append(torch.stack(rows))
        return torch.stack(per).amax(dim=0)


CHANGES = {
    "one batched pass": _one_batched_pass,
    "float64 rows with torch.where": _float64_rows,
    "with gradients, then detached": _with_gradients_then_detached,
    "one sequence at a time": _per_sequence,
}


@pytest.mark.parametrize("answer", CHANGES.values(), ids=CHANGES)
def test_other_right_output_changes_pass(answer):
    verify("output-changes", answer)


def test_output_changes_leaves_the_sequence_alone_and_names_the_in_place_edit():
    def in_place(model, idx, other):
        with torch.no_grad():
            logits = model(idx)[0]
            rows = []
            for p in range(idx.shape[1]):
                idx[:, p] = other[:, p]
                rows.append((model(idx)[0] - logits).abs().amax(dim=(0, 2)))
            return torch.stack(rows)

    with pytest.raises(CheckError) as info:
        verify("output-changes", in_place)
    assert info.value.mistake == "edits-accumulate"


# --- entropy floor -----------------------------------------------------------------------------

TINY = Grammar(("big", "red"), ("cat", "ox", "bird"), ("sees",), ("on", "near"), p_prep=0.25)


def _sentences(grammar):
    """Every sentence with its probability."""
    g, p = grammar, grammar.p_prep
    for a, n1, v, n2 in itertools.product(g.adjectives, g.nouns, g.verbs, g.nouns):
        body = f"the {a} {n1} {v} the {n2}"
        base = 1 / (len(g.adjectives) * len(g.nouns) ** 2 * len(g.verbs))
        yield body + ".\n", base * (1 - p)
        for prep, n3 in itertools.product(g.prepositions, g.nouns):
            yield f"{body} {prep} the {n3}.\n", base * p / (len(g.prepositions) * len(g.nouns))


def _by_enumeration(grammar):
    """Shannon's definition over the list of all sentences, each with its probability."""
    entropy = length = 0.0
    for sentence, probability in _sentences(grammar):
        entropy -= probability * math.log(probability)
        length += probability * len(sentence)
    return entropy / length


def test_entropy_floor_reference_agrees_with_enumeration_and_the_grammar():
    reference = REGISTRY["entropy-floor"].reference
    assert sum(p for _, p in _sentences(TINY)) == pytest.approx(1.0)
    assert reference(TINY) == pytest.approx(_by_enumeration(TINY), rel=1e-12)
    for (grammar,) in REGISTRY["entropy-floor"].inputs():
        assert reference(grammar) == pytest.approx(grammar.entropy_per_char(), rel=1e-12)
    sampled = TINY.text(20_000, seed=0)  # the empirical rate is near: a sanity check of the idea
    assert len(sampled) / 20_000 == pytest.approx(1 / reference(TINY) * _entropy(TINY), rel=0.01)


def _entropy(grammar):
    return -sum(p * math.log(p) for _, p in _sentences(grammar))


def _in_bits_then_nats(grammar):
    g, p = grammar, grammar.p_prep
    bits = math.log2(len(g.adjectives) * len(g.nouns) ** 2 * len(g.verbs))
    bits += (
        -p * math.log2(p)
        - (1 - p) * math.log2(1 - p)
        + p * math.log2(len(g.prepositions) * len(g.nouns))
    )
    template = len("the") + 1 + 1 + 1 + 1 + len("the") + 1 + 1 + 1
    words = [g.adjectives, g.nouns, g.verbs, g.nouns]
    chars = template + sum(statistics.fmean(map(len, w)) for w in words)
    chars += p * (statistics.fmean(map(len, g.prepositions)) + statistics.fmean(map(len, g.nouns)))
    chars += p * len(" " + " the ")
    return bits * math.log(2) / chars


def _as_float64_tensor(grammar):
    g, p = grammar, torch.tensor(grammar.p_prep, dtype=torch.float64)
    counts = torch.tensor(
        [len(g.adjectives), len(g.nouns), len(g.verbs), len(g.nouns)], dtype=torch.float64
    )
    tail = torch.tensor([len(g.prepositions), len(g.nouns)], dtype=torch.float64)
    coin = torch.special.entr(p) + torch.special.entr(1 - p)
    nats = counts.log().sum() + coin + p * tail.log().sum()

    def mean_len(words):
        return torch.tensor([len(w) for w in words], dtype=torch.float64).mean()

    chars = len("the ") + 2 + len(" the ") + len(".\n")
    chars = chars + mean_len(g.adjectives) + 2 * mean_len(g.nouns) + mean_len(g.verbs)
    chars = chars + p * (len(" ") + len(" the ") + mean_len(g.prepositions) + mean_len(g.nouns))
    return nats / chars


def _by_expected_sentence(grammar):
    """Average the lengths of actual sentences (without and with a tail) word list by word list."""
    g, p = grammar, grammar.p_prep
    short = statistics.fmean(
        len(f"the {a} {n} {v} the {m}.\n")
        for a, n, v, m in itertools.product(g.adjectives, g.nouns, g.verbs, g.nouns)
    )
    extra = statistics.fmean(len(f" {q} the {n}") for q in g.prepositions for n in g.nouns)
    nats = math.log(len(g.adjectives) * len(g.nouns) ** 2 * len(g.verbs))
    nats += -p * math.log(p) - (1 - p) * math.log1p(-p) + p * math.log(len(g.prepositions))
    nats += p * math.log(len(g.nouns))
    return nats / (short + p * extra)


FLOORS = {
    "bits, then converted to nats": _in_bits_then_nats,
    "a float64 tensor": _as_float64_tensor,
    "lengths of actual sentences": _by_expected_sentence,
    "every sentence enumerated": _by_enumeration,
}


@pytest.mark.parametrize("answer", FLOORS.values(), ids=FLOORS)
def test_other_right_entropy_floors_pass(answer):
    verify("entropy-floor", answer)


# --- held-out losses ---------------------------------------------------------------------------


def test_held_out_losses_reference_agrees_with_a_float64_computation(model):
    x = torch.randint(0, 11, (3, 9), generator=torch.Generator().manual_seed(2))
    y = torch.randint(0, 11, (3, 9), generator=torch.Generator().manual_seed(3))
    reference = REGISTRY["held-out-losses"].reference
    for causal in (True, False):
        twin = with_causal(model, causal)
        visible, alone = reference(twin, x, y)
        with torch.no_grad():
            log_p = twin(x)[0].double().log_softmax(dim=-1)
            by_hand = -log_p.gather(-1, y[..., None]).squeeze(-1).mean(dim=0)
            one = [
                -twin(x[:, : t + 1])[0][:, t].double().log_softmax(-1)[torch.arange(3), y[:, t]]
                for t in range(9)
            ]
        torch.testing.assert_close(visible.double(), by_hand)
        torch.testing.assert_close(alone.double(), torch.stack(one, dim=1).mean(dim=0))
        # With the mask, a pass over a prefix gives what the whole window gave: the point of it.
        assert torch.allclose(visible, alone, atol=1e-5) == causal


def test_held_out_losses_reference_leaves_the_model_in_evaluation_mode(model):
    model.train()
    x = torch.randint(0, 11, (2, 5))
    REGISTRY["held-out-losses"].reference(model, x, x)
    assert not model.training


def _log_softmax_in_inference_mode(model, x, y):
    model.eval()
    with torch.inference_mode():
        full = model(x)[0].log_softmax(dim=-1)
        alone = torch.stack([model(x[:, :t])[0][:, -1] for t in range(1, x.shape[1] + 1)], 1)
        alone = alone.log_softmax(dim=-1)
        pick = y.unsqueeze(-1)
        return -full.gather(-1, pick)[..., 0].mean(0), -alone.gather(-1, pick)[..., 0].mean(0)


def _restores_the_mode(model, x, y):
    with evaluating(model), torch.no_grad():
        B, T = x.shape
        visible = torch.zeros(T)
        alone = torch.zeros(T)
        logits = model(x)[0]
        for t in range(T):
            visible[t] = F.cross_entropy(logits[:, t], y[:, t])
            alone[t] = F.cross_entropy(model(x[:, : t + 1])[0][:, t], y[:, t])
        return visible, alone


def _float64_per_window(model, x, y):
    was = model.training
    model.train(False)
    with torch.no_grad():
        out = []
        for rows in (
            model(x)[0],
            torch.cat([model(x[:, : t + 1])[0][:, -1:] for t in range(x.shape[1])], dim=1),
        ):
            per = torch.stack(
                [F.cross_entropy(rows[b].double(), y[b], reduction="none") for b in range(len(x))]
            )
            out.append(per.mean(dim=0))
    model.train(was)
    return tuple(out)


HELD_OUT = {
    "log-softmax in inference mode": _log_softmax_in_inference_mode,
    "mode restored, position by position": _restores_the_mode,
    "float64, window by window": _float64_per_window,
}


@pytest.mark.parametrize("answer", HELD_OUT.values(), ids=HELD_OUT)
def test_other_right_held_out_losses_pass(answer):
    verify("held-out-losses", answer)


def test_a_measurement_in_training_mode_is_named_only_where_dropout_is_on():
    def no_eval(model, x, y):
        with torch.no_grad():
            logits = model(x)[0]
            alone = torch.stack([model(x[:, : t + 1])[0][:, -1] for t in range(x.shape[1])], 1)
            loss = [
                F.cross_entropy(s.transpose(1, 2), y, reduction="none") for s in (logits, alone)
            ]
            return loss[0].mean(0), loss[1].mean(0)

    with pytest.raises(CheckError) as info:
        verify("held-out-losses", no_eval)
    assert info.value.mistake == "training-mode"
    assert "dropout" in info.value.detail


# ---------------------------------------------------------------- read for every exercise
# tests/lessons/engine/checks/test_every_exercise.py runs, for each exercise of this lesson,
# every right answer written another way (at least two) through its check, and holds the one
# named in INDEPENDENT, which shares no code with the reference, to not copying its formula.
RIGHT_ANSWERS = {
    "causal-attention-weights": WEIGHTS,
    "output-changes": CHANGES,
    "entropy-floor": FLOORS,
    "held-out-losses": HELD_OUT,
}
INDEPENDENT = {
    "causal-attention-weights": "torch.where in float64",
    "output-changes": "one batched pass",
    "entropy-floor": "every sentence enumerated",
    "held-out-losses": "float64, window by window",
}
