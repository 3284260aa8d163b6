"""experiments.saturation: the sweep feeds a measurement the seeded rows of every width (with the
reference measurement of notebook 02's exercise, against the chapter's variance argument) and a
softmax the whole table of scores, refusing weights that overflowed; the retrieval training
with and without 1/√d_k on a small, fast setting."""

import math
import warnings
from itertools import pairwise

import pytest
import torch

from gptlib.lessons.engine.checks import REGISTRY
from gptlib.lessons.nb02.experiments import (
    RetrievalHead,
    RetrievalTask,
    draw_rows,
    first_batch,
    saturation,
    saturation_sweep,
    train_retrieval,
)

MEASURE = REGISTRY["measure-softmax"].reference  # the student's function, as the check has it
WIDTHS = [1, 4, 16, 64, 128, 256, 1024]


def _run(d_k, scaled, **kwargs):
    return saturation(d_k, scaled, MEASURE, **kwargs)


@pytest.mark.parametrize("d_k", WIDTHS)
def test_unscaled_std_is_sqrt_dk_and_scaled_std_is_one(d_k):
    # 4096 scores: the std estimate is within about 1% (5% is over four standard errors).
    assert _run(d_k, scaled=False).score_std == pytest.approx(math.sqrt(d_k), rel=0.05)
    assert _run(d_k, scaled=True).score_std == pytest.approx(1.0, rel=0.05)


def test_chapter_figures_for_64_and_128():
    assert _run(64, scaled=False).score_std == pytest.approx(8.0, abs=0.3)
    assert _run(128, scaled=False).score_std == pytest.approx(11.3, abs=0.4)


def test_unscaled_softmax_saturates_as_dk_grows():
    small, large = _run(1, scaled=False), _run(1024, scaled=False)
    assert large.max_weight > 0.95 and small.max_weight < 0.3
    assert large.entropy < 0.15 and small.entropy > 2.0
    assert large.grad_norm < 0.2 * small.grad_norm


def test_unscaled_measures_are_monotone_over_powers_of_two():
    runs = [_run(2**p, scaled=False) for p in range(0, 11, 2)]
    assert all(a.max_weight < b.max_weight for a, b in pairwise(runs))
    assert all(a.entropy > b.entropy for a, b in pairwise(runs))
    assert runs[-1].grad_norm < runs[2].grad_norm < runs[0].grad_norm * 1.2


def test_scaling_keeps_the_softmax_the_same_at_every_width():
    runs = [_run(d_k, scaled=True) for d_k in WIDTHS]
    for run in runs:
        assert run.max_weight == pytest.approx(runs[0].max_weight, abs=0.05)
        assert run.entropy == pytest.approx(runs[0].entropy, abs=0.1)
        assert run.grad_norm == pytest.approx(runs[0].grad_norm, rel=0.15)
    # 16 logits of unit variance are far from one-hot: the entropy stays near ln 16 = 2.77.
    assert 2.0 < runs[-1].entropy < math.log(16)


def test_the_measure_gets_the_rows_of_its_width_and_its_numbers_are_kept():
    seen = []

    def measure(q, k, upstream, scaled):
        seen.append((q, k, upstream, scaled))
        return 1.0, 0.5, torch.tensor(2.0), 0.25  # floats or 0-d tensors

    run = saturation(8, True, measure, seed=2, n_queries=32, n_keys=5)
    ((q, k, upstream, scaled),) = seen
    expected = draw_rows(8, seed=2, n_queries=32, n_keys=5)
    for got, want in zip((q, k, upstream), expected, strict=True):
        assert torch.equal(got, want)
    assert scaled is True and q.shape == (32, 8) and k.shape == (32, 5, 8)
    assert (run.score_std, run.max_weight, run.entropy, run.grad_norm) == (1.0, 0.5, 2.0, 0.25)


def test_a_measure_that_writes_into_its_inputs_harms_no_later_width():
    def careless(q, k, upstream, scaled):
        q.zero_()
        return MEASURE(q, k, upstream, scaled)

    saturation(16, False, careless)
    assert _run(16, False).score_std == pytest.approx(4.0, rel=0.05)


def test_plotted_scores_and_weights_follow_the_rows():
    run = _run(32, scaled=False, n_queries=64, n_keys=8)
    q, k, _ = draw_rows(32, n_queries=64, n_keys=8)
    torch.testing.assert_close(run.scores, (k @ q[:, :, None])[..., 0])
    assert run.weights.shape == (8,)
    assert run.weights.sum().item() == pytest.approx(1.0, abs=1e-6)
    assert torch.allclose(run.weights, torch.softmax(run.scores[0], dim=-1))
    raw, scaled = _run(100, scaled=False), _run(100, scaled=True)
    assert torch.allclose(scaled.scores, raw.scores / 10.0)


def test_the_softmax_given_weighs_the_whole_table_and_draws_the_plotted_row():
    seen = []

    def softmax(scores):
        seen.append(scores)
        return torch.softmax(scores.double(), dim=-1)  # another dtype path is fine

    run = saturation(32, False, MEASURE, n_queries=64, n_keys=8, softmax=softmax)
    ((scores,),) = [seen]
    torch.testing.assert_close(scores, run.scores)
    assert scores.shape == (64, 8) and run.weights.dtype == torch.float32
    torch.testing.assert_close(run.weights, torch.softmax(run.scores[0], dim=-1))


def _plain_exp(scores):
    return scores.exp() / scores.exp().sum(dim=-1, keepdim=True)


def test_a_softmax_that_overflows_on_the_widest_scores_is_a_clear_value_error():
    q, k, _ = draw_rows(1024)
    scores = torch.einsum("nd,nkd->nk", q.double(), k.double())  # exact enough in float64
    overflowing = int((scores.amax(-1) > math.log(torch.finfo(torch.float32).max)).sum())
    assert overflowing > 0  # the sweep's widest unscaled scores pass float32's exp limit
    with pytest.raises(ValueError, match=rf"in {overflowing} of 256 rows \(d_k = 1024, unscaled"):
        saturation(1024, False, MEASURE, softmax=_plain_exp)
    scaled = saturation(1024, True, MEASURE, softmax=_plain_exp)  # scaled scores stay small
    torch.testing.assert_close(scaled.weights, torch.softmax(scaled.scores[0], dim=-1))


@pytest.mark.parametrize(
    ("softmax", "match"),
    [
        (lambda s: s[0], r"shape \[256, 16\], got a tensor of shape \[16\]"),
        (lambda s: s.tolist(), r"got list"),
    ],
)
def test_a_softmax_of_the_wrong_shape_is_a_clear_value_error(softmax, match):
    with pytest.raises(ValueError, match=match):
        saturation(4, True, MEASURE, softmax=softmax)


def test_numbers_still_attached_to_autograd_are_taken_without_a_warning():
    def measure(q, k, upstream, scaled):
        z = torch.ones(3, requires_grad=True)
        return z.sum(), z.mean(), z.max(), (2 * z).min()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run = saturation(4, False, measure)
    assert (run.score_std, run.max_weight, run.entropy, run.grad_norm) == (3.0, 1.0, 1.0, 2.0)


def test_same_seed_same_rows_other_seed_other_rows():
    a, b, c = draw_rows(16, seed=1), draw_rows(16, seed=1), draw_rows(16)
    assert torch.equal(a[0], b[0]) and not torch.equal(a[0], c[0])
    wide, narrow = draw_rows(64), draw_rows(16)
    assert torch.equal(wide[1][..., :16], narrow[1])  # a wider head adds components


def test_widths_beyond_the_cached_draw_work():
    run = _run(2048, scaled=False, n_queries=16, n_keys=4)
    assert run.scores.shape == (16, 4)


def test_lines_name_the_numbers():
    lines = _run(64, scaled=False).lines()
    assert "d_k = 64" in lines and "sqrt(d_k) = 8.000" in lines
    for name in ("max weight", "entropy", "grad norm", "score std"):
        assert any(line.startswith(f"{name} = ") for line in lines)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"d_k": 0}, "d_k must be a positive int"),
        ({"d_k": 2.0}, "d_k must be a positive int"),
        ({"d_k": 4, "n_keys": 1}, "n_keys >= 2"),
    ],
)
def test_bad_input_is_a_clear_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        saturation(scaled=False, measure=MEASURE, **kwargs)


def test_sweep_runs_every_width_in_both_modes():
    calls = []

    def softmax(scores):
        calls.append(scores.shape)
        return torch.softmax(scores, dim=-1)

    sweep = saturation_sweep([2, 8], MEASURE, softmax, seed=5, n_queries=16, n_keys=4)
    assert calls == [(16, 4)] * 4  # the softmax given, on every width in both modes
    assert sorted(sweep) == [False, True]
    for scaled, runs in sweep.items():
        assert [r.d_k for r in runs] == [2, 8]
        assert all(r.scaled is scaled for r in runs)
        single = saturation(8, scaled, MEASURE, seed=5, n_queries=16, n_keys=4)
        assert torch.equal(runs[1].scores, single.scores)
        assert runs[1].grad_norm == single.grad_norm


# --- training a retrieval head with and without 1/√d_k ---------------------------------------

SMALL = RetrievalTask(n_pairs=8, n_keys=16, n_values=8)


def _small_run(scaled, d_k=256, steps=150, seed=0):
    return train_retrieval(
        d_k, scaled, steps, lr=1e-2, batch_size=16, d_model=16, task=SMALL, seed=seed
    )


def test_batches_hold_distinct_keys_and_a_queried_pair():
    keys, values, queried = SMALL.batch(64, torch.Generator().manual_seed(0))
    assert keys.shape == values.shape == (64, 8) and queried.shape == (64,)
    assert all(len(set(row.tolist())) == 8 for row in keys)
    assert keys.max() < 16 and values.max() < 8 and 0 <= queried.min() <= queried.max() < 8


def test_the_forward_is_the_attention_formula_written_out():
    # Scores as elementwise products summed over d_k (not a matmul), the mix as a weighted sum.
    head = RetrievalHead(SMALL, d_k=4, scaled=True, d_model=8, generator=torch.Generator())
    keys, values, queried = SMALL.batch(5, torch.Generator().manual_seed(1))
    logits, scores = head(keys, values, queried)
    pairs = (head.key_emb(keys) + head.value_emb(values)) / math.sqrt(2)
    query = head.key_emb(keys[torch.arange(5), queried])
    expected_scores = (head.W_Q(query)[:, None] * head.W_K(pairs)).sum(-1) / 2.0  # √4
    torch.testing.assert_close(scores, expected_scores)
    mixed = (torch.softmax(expected_scores, -1)[..., None] * head.W_V(pairs)).sum(1)
    torch.testing.assert_close(logits, head.readout(mixed))


def test_initial_scores_spread_like_sqrt_dk_and_scaling_only_divides_them():
    generator_state = torch.Generator().manual_seed(3).get_state()
    heads = {}
    for scaled in (False, True):
        generator = torch.Generator()
        generator.set_state(generator_state)
        heads[scaled] = RetrievalHead(SMALL, 256, scaled, 16, generator)
    keys, values, queried = SMALL.batch(256, torch.Generator().manual_seed(0))
    with torch.no_grad():
        raw, scaled = (heads[s](keys, values, queried)[1] for s in (False, True))
    torch.testing.assert_close(scaled, raw / 16.0)  # same weights, √256 = 16
    # q and k have unit-variance components, so std(q·k) ≈ √d_k (2048 scores, a few % off).
    assert raw.std().item() == pytest.approx(16.0, rel=0.2)


def test_unscaled_training_stalls_at_a_large_dk_where_scaled_learns():
    unscaled, scaled = _small_run(False), _small_run(True)
    guessing = math.log(8)
    assert scaled.mean_loss(125, 150) < 0.3
    assert unscaled.mean_loss(125, 150) > 0.7 * guessing
    assert scaled.answer_weight[-25:].mean() > 0.8 > 0.4 > unscaled.answer_weight[-25:].mean()
    assert scaled.steps_to_learn() < 125 and unscaled.steps_to_learn() is None


def test_first_batch_is_where_training_starts():
    head, keys, values, queried = first_batch(8, True, batch_size=16, d_model=16, task=SMALL)
    run = train_retrieval(
        8, True, 25, optimizer="sgd", lr=0.0, batch_size=16, d_model=16, task=SMALL
    )
    logits, scores = head(keys, values, queried)
    loss = torch.nn.functional.cross_entropy(logits, values[torch.arange(16), queried])
    assert run.losses[0].item() == pytest.approx(loss.item())
    assert run.losses.std() < 0.5  # lr 0: the same head on other batches


def test_steps_to_learn_counts_the_steps_trained_when_the_window_first_drops_below():
    run = _small_run(True, d_k=8, steps=30)
    losses = torch.cat([torch.full((10,), 2.0), torch.full((20,), 0.1)])
    fake = type(run)(8, True, SMALL, "adam", 0.01, 16, losses, *(run.answer_weight,) * 3)
    # the mean of the last 5 steps first drops below 0.5 when one step of 2.0 is left in it:
    # steps 9 to 13, so after 14 steps (14 batches of 16 examples)
    assert fake.steps_to_learn(0.5, window=5) == 14
    assert fake.examples_to_learn(0.5, window=5) == 14 * 16
    assert fake.steps_to_learn(0.01, window=5) is None
    assert fake.examples_to_learn(0.01, window=5) is None


def test_qk_gain_multiplies_the_initial_scores_by_its_square():
    keys, values, queried = SMALL.batch(64, torch.Generator().manual_seed(0))
    gain = 256**0.25  # 4: the scores grow 16 = √256 times

    def scores(scaled, qk_gain):
        head, *_ = first_batch(256, scaled, d_model=16, task=SMALL, seed=2, qk_gain=qk_gain)
        with torch.no_grad():
            return head(keys, values, queried)[1]

    torch.testing.assert_close(scores(False, 1 / gain), scores(True, 1.0))  # narrow start
    torch.testing.assert_close(scores(True, gain), scores(False, 1.0))  # wide start
    with pytest.raises(ValueError, match="qk_gain must be positive"):
        first_batch(8, True, qk_gain=0.0)


def test_the_recorded_gradients_are_each_steps_own():
    run = _small_run(False, d_k=64, steps=25)
    head, keys, values, queried = first_batch(64, False, batch_size=16, d_model=16, task=SMALL)
    logits, scores = head(keys, values, queried)
    rows = torch.arange(16)
    losses = torch.nn.functional.cross_entropy(logits, values[rows, queried], reduction="none")
    # each example's own loss, differentiated one at a time: no batch mean to undo
    on_pair = torch.stack(
        [torch.autograd.grad(losses[b], scores, retain_graph=True)[0][b, queried[b]] for b in rows]
    ).abs()
    top3 = on_pair.sort(descending=True).values[:3].sum() / on_pair.sum()
    (grad_q,) = torch.autograd.grad(losses.mean(), head.W_Q.weight)
    assert run.query_grad[0].item() == pytest.approx(grad_q.norm().item(), rel=1e-5)
    assert run.top3_share[0].item() == pytest.approx(top3.item(), rel=1e-5)
    assert run.query_grad.shape == run.top3_share.shape == (25,)
    assert ((run.top3_share > 0) & (run.top3_share <= 1 + 1e-6)).all()


def test_until_learned_stops_when_learned_or_at_its_limit():
    learns = train_retrieval(
        8, True, 25, lr=1e-2, batch_size=16, d_model=16, task=SMALL, until_learned=400
    )
    assert learns.steps_to_learn() == len(learns.losses) < 400  # stopped on the step it learned
    assert learns.losses[-25:].mean() < 0.5 <= learns.losses[-26:-1].mean()
    stuck = train_retrieval(
        256, False, 25, lr=1e-2, batch_size=16, d_model=16, task=SMALL, until_learned=60
    )
    assert len(stuck.losses) == 60 and stuck.steps_to_learn() is None
    with pytest.raises(ValueError, match="until_learned must be at least steps"):
        train_retrieval(8, True, 50, until_learned=40)


def test_both_start_from_the_same_weights_and_batches():
    unscaled, scaled = _small_run(False, d_k=1, steps=25), _small_run(True, d_k=1, steps=25)
    torch.testing.assert_close(unscaled.losses, scaled.losses)  # √1 = 1: the same run


def test_run_records_and_validation():
    run = _small_run(True, d_k=8, steps=30)
    assert run.losses.shape == run.answer_weight.shape == (30,)
    assert run.chance_loss == pytest.approx(math.log(8))
    assert run.mean_loss(0, 30) == pytest.approx(run.losses.mean().item())
    assert run.optimizer == "adam" and run.lr == 1e-2 and run.batch_size == 16
    with pytest.raises(ValueError, match="start < stop"):
        run.mean_loss(20, 40)
    with pytest.raises(ValueError, match="d_k must be a positive int"):
        train_retrieval(0, True)
    with pytest.raises(ValueError, match="at least 25"):
        train_retrieval(8, True, steps=10)
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        train_retrieval(8, True, batch_size=0)
    with pytest.raises(ValueError, match="optimizer must be one of"):
        train_retrieval(8, True, optimizer="rmsprop")
    with pytest.raises(ValueError, match="n_pairs <= n_keys"):
        RetrievalTask(n_pairs=8, n_keys=4)
