"""Notebook 06's experiments: the original Transformer's init, gradient profiles, and the
learning-rate × depth grid."""

import math

import pytest
import torch
from torch import nn

from gptlib.data.batches import BatchSampler
from gptlib.lessons.nb06 import experiments as npl
from gptlib.lessons.shared.experiments.text_entropy import context_entropy
from gptlib.lessons.shared.experiments.toy import plain_adam, train_losses
from gptlib.model import Block


@pytest.fixture(scope="module")
def data():
    return npl.toy_data()


def test_transformer_init_is_xavier_with_unit_embeddings():
    model = npl.build_model("post", 2)
    for module in model.modules():
        if isinstance(module, nn.Linear):
            fan_out, fan_in = module.weight.shape
            bound = math.sqrt(6 / (fan_in + fan_out))
            assert module.weight.abs().max() <= bound
            assert module.weight.std().item() == pytest.approx(bound / math.sqrt(3), rel=0.15)
            assert module.bias is None or torch.all(module.bias == 0)
        elif isinstance(module, nn.Embedding):
            assert module.weight.std().item() == pytest.approx(1.0, rel=0.1)
        elif isinstance(module, nn.LayerNorm):
            assert torch.all(module.weight == 1) and torch.all(module.bias == 0)


def test_build_model_uses_the_requested_placement_and_is_seeded():
    a, b = npl.build_model("pre", 3, seed=1), npl.build_model("pre", 3, seed=1)
    assert all(type(block) is Block for block in a.blocks)  # gptlib's own Pre-LN blocks
    assert a.config.n_layers == 3 and a.config.d_model == npl.D_MODEL
    post = npl.build_model("post", 3, seed=1)
    assert all(block.norm == "post" for block in post.blocks)
    assert isinstance(post.ln_f, nn.Identity)  # Post-LN blocks end in their own norm
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))


def _wired(x, ln1, attn, ln2, mlp, norm):
    """A right block_forward written apart from the lesson's reference: one sublayer at a time."""
    for ln, sublayer in ((ln1, attn), (ln2, mlp)):
        x = x + sublayer(ln(x)) if norm == "pre" else ln(x + sublayer(x))
    return x


def _no_residual(x, ln1, attn, ln2, mlp, norm):
    """A wrong block_forward: Pre-LN without its skips."""
    return mlp(ln2(attn(ln1(x))))


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_a_wired_model_runs_the_function_on_the_same_weights(norm):
    plain = npl.build_model(norm, 3, seed=2)
    wired = npl.build_model(norm, 3, seed=2, block_forward=_wired)
    assert all(isinstance(b, npl.WiredBlock) and b.norm == norm for b in wired.blocks)
    assert plain.state_dict().keys() == wired.state_dict().keys()
    assert all(
        torch.equal(p, q) for p, q in zip(plain.parameters(), wired.parameters(), strict=True)
    )
    idx = torch.randint(0, npl.VOCAB_SIZE, (2, 8), generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(wired(idx)[0], plain(idx)[0])
    broken = npl.build_model(norm, 3, seed=2, block_forward=_no_residual)
    assert not torch.allclose(broken(idx)[0], plain(idx)[0], atol=1e-3)  # the function decides


def test_a_wired_block_takes_no_cache():
    block = npl.build_model("pre", 1, block_forward=_wired).blocks[0]
    with pytest.raises(ValueError, match="no KV cache"):
        block(torch.zeros(1, 2, npl.D_MODEL), cache=object())


def _last_logit_norms(model, inputs, targets):
    """A measurement of one number per block, to average: a stand-in for notebook 06's."""
    last = float(model(inputs)[0][:, -1].detach().norm())
    return torch.full((len(model.blocks),), last), torch.ones(2)


def test_mean_over_models_averages_the_measurement_of_seeded_models_on_one_batch(data):
    batch = BatchSampler(data, npl.BATCH_SIZE, npl.BLOCK_SIZE, seed=1000).sample()
    by_hand = [_last_logit_norms(npl.build_model("post", 3, seed=s), *batch) for s in (0, 1)]
    one = npl.mean_over_models(_last_logit_norms, "post", 3, data, n_models=1)
    two = npl.mean_over_models(_last_logit_norms, "post", 3, data, n_models=2)
    assert isinstance(two, tuple) and two[0].dtype == torch.float64
    torch.testing.assert_close(one[0], by_hand[0][0].double())
    torch.testing.assert_close(two[0], (by_hand[0][0] + by_hand[1][0]).double() / 2)
    torch.testing.assert_close(two[1], torch.ones(2, dtype=torch.float64))
    alone = npl.mean_over_models(lambda *a: _last_logit_norms(*a)[0], "post", 3, data, 2)
    torch.testing.assert_close(alone, two[0])  # a tensor comes back as a tensor
    runs = npl.per_model(lambda *a: _last_logit_norms(*a)[0], "post", 3, data, 2)
    assert runs.shape == (2, 3)
    torch.testing.assert_close(runs[1], by_hand[1][0].double())


def test_mean_over_models_rejects_an_empty_average(data):
    with pytest.raises(ValueError, match="n_models"):
        npl.mean_over_models(_last_logit_norms, "pre", 2, data, n_models=0)


def test_gradient_profiles_lines():
    profiles = npl.GradientProfiles(
        {"pre": torch.tensor([1.0, 0.5]), "post": torch.tensor([1.0, 2.0])}
    )
    assert profiles.depth == 2
    assert profiles.lines() == [
        "depth = 2",
        "Pre-LN first block = 1.000",
        "Pre-LN last block = 0.500",
        "Pre-LN max / min = 2.00",
        "Post-LN first block = 1.000",
        "Post-LN last block = 2.000",
        "Post-LN max / min = 2.00",
        "Post-LN / Pre-LN at the last block = 4.00",
    ]
    with pytest.raises(ValueError, match="at least one"):
        npl.GradientProfiles({})


def test_grid_cells_are_the_runs_train_losses_makes(data):
    grid = npl.learning_rate_grid(
        data, depths=(1, 2), lrs=(1e-3,), steps=5, warmup_steps=2, seeds=(0, 1), batch_size=4
    )
    assert grid.curves.shape == (3, 2, 1, 2, 5)
    assert grid.arms == ("Pre-LN", "Post-LN", "Post-LN + warmup")
    for a, (norm, warmup) in enumerate((("pre", 0), ("post", 0), ("post", 2))):
        config = plain_adam(5, 1e-3, warmup, 4, npl.BLOCK_SIZE, seed=1)
        expected = train_losses(npl.build_model(norm, 2, seed=1), data, config)
        torch.testing.assert_close(grid.curves[a, 1, 0, 1], expected, rtol=0, atol=0)
    assert grid.floor == context_entropy(data)


def test_measurements_and_the_grid_run_the_block_forward_handed_in(data):
    def measure(model, inputs, targets):
        return model(inputs)[0][:, -1].detach().norm(dim=-1)

    for norm in ("pre", "post"):
        torch.testing.assert_close(
            npl.per_model(measure, norm, 2, data, 2, block_forward=_wired),
            npl.per_model(measure, norm, 2, data, 2),
            rtol=0,
            atol=0,
        )
    settings = dict(depths=(2,), lrs=(1e-2,), steps=4, warmup_steps=2, seeds=(0,), batch_size=4)
    grid = npl.learning_rate_grid(data, **settings)
    torch.testing.assert_close(
        npl.learning_rate_grid(data, **settings, block_forward=_wired).curves, grid.curves
    )
    unskipped = npl.learning_rate_grid(data, **settings, block_forward=_no_residual)
    assert not torch.allclose(unskipped.curves[0], grid.curves[0])
    split = npl.last_block_gradient("pre", 2, data, n_models=1, block_forward=_wired)
    assert split == npl.last_block_gradient("pre", 2, data, n_models=1)


def _grid(curves, floor=2.8):
    A, D, R, S, steps = curves.shape
    return npl.LearningRateGrid(
        tuple(npl.ARMS)[:A], (2, 4)[:D], (1e-3, 1e-2)[:R], tuple(range(S)), steps, 1, curves, floor
    )


def test_grid_summaries():
    curves = torch.zeros(3, 2, 2, 2, 12)
    curves[..., 0, :] = 1.0  # seed 0 ends at 1.0, seed 1 at 1.5 ...
    curves[..., 1, :] = 1.5
    curves[1, 1, 1] = 2.75  # ... except this cell, which ends at the floor on both seeds
    curves[2, 0, 1, 1, 8] = math.nan  # and this one, where seed 1 diverged
    grid = _grid(curves)
    assert grid.final.shape == (3, 2, 2, 2)
    assert grid.loss("Pre-LN", 2, 1e-3) == pytest.approx(1.25)
    assert grid.spread[0, 0, 0] == pytest.approx(0.5)
    assert grid.stalled.nonzero().tolist() == [[1, 1, 1]]
    assert grid.diverged.nonzero().tolist() == [[2, 0, 1]]
    assert not grid.stalled[2, 0, 1]  # diverged is not also stalled
    table = grid.table().splitlines()
    assert table[0].split() == ["blocks", "1e-03", "1e-02"]
    assert table[4].split() == ["4", "1.25", "2.75*"]
    assert table[5].split() == ["Post-LN", "+", "warmup", "2", "1.25", "diverged"]
    assert table[-1].startswith("* stalled")


def test_grid_rejects_bad_settings(data):
    with pytest.raises(ValueError, match="warmup_steps"):
        npl.learning_rate_grid(data, steps=10, warmup_steps=10)
    with pytest.raises(ValueError, match="need depths"):
        npl.learning_rate_grid(data, depths=())


@pytest.mark.slow
def test_post_ln_stalls_at_a_high_learning_rate_where_pre_ln_trains(data):
    grid = npl.learning_rate_grid(data, depths=(4,), lrs=(3e-2,), steps=40, seeds=(0,))
    pre, post, warm = (grid.loss(arm, 4, 3e-2) for arm in npl.ARMS)
    assert abs(post - grid.floor) < 0.1  # stuck at the letter frequencies
    assert pre < grid.floor - 0.8
    assert warm < post - 0.3


def test_last_block_gradient_parts_match_a_backward_pass(data):
    split = npl.last_block_gradient("pre", 2, data, n_models=1)
    model = npl.build_model("pre", 2, seed=0)
    inputs, targets = BatchSampler(data, npl.BATCH_SIZE, npl.BLOCK_SIZE, seed=1000).sample()
    stream = {}
    model.blocks[-1].register_forward_hook(lambda m, a, out: stream.setdefault("x", out))
    _, loss = model(inputs, targets)
    loss.backward()
    linear = [m for m in model.blocks[-1].modules() if isinstance(m, nn.Linear)]
    squares = sum(p.grad.double().pow(2).sum() for m in linear for p in m.parameters())
    assert split.total == pytest.approx(float(squares.sqrt()), rel=1e-6)  # |Σ_t δ_t a_tᵀ|
    x = stream["x"].detach().flatten(0, 1)
    cos = torch.nn.functional.cosine_similarity(x[:, None], x[None], dim=-1)
    off_diagonal = cos[~torch.eye(len(x), dtype=torch.bool)]
    assert split.alike == pytest.approx(float(off_diagonal.mean()), rel=1e-4)
    assert split.separate < split.total  # the terms agree somewhat at initialisation
    assert split.agreement == split.total / split.separate


def test_last_block_gradient_needs_a_model():
    with pytest.raises(ValueError, match="n_models"):
        npl.last_block_gradient("pre", 2, torch.zeros(100, dtype=torch.long), n_models=0)


def test_long_runs_are_the_grid_runs_trained_on(data):
    runs = npl.long_runs(data, cells=((2, 3e-2),), seeds=(1,), steps=12, batch_size=4)
    model = npl.build_model("post", 2, seed=1)
    expected = train_losses(model, data, plain_adam(12, 3e-2, 0, 4, npl.BLOCK_SIZE, 1))
    torch.testing.assert_close(runs.curves[2, 3e-2, 1], expected)
    assert runs.at(2, 3e-2, 1, 12) == pytest.approx(float(expected[2:12].double().mean()))
    with pytest.raises(ValueError, match="no stored run"):
        runs.at(2, 3e-2, 1, 13)
    with pytest.raises(ValueError, match="no stored run"):
        runs.at(4, 3e-2, 1, 12)


def test_the_stored_long_runs_are_what_the_script_makes(data):
    stored = npl.stored_long_runs()
    assert stored.steps == npl.LONG_STEPS
    assert set(stored.curves) == {(d, lr, s) for d, lr in npl.LONG_CELLS for s in (0, 1)}
    assert all(len(c) == stored.steps for c in stored.curves.values())
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the script runs
    try:  # the first steps, made again here
        again = npl.long_runs(data, cells=((4, 3e-2),), seeds=(0,), steps=10)
    finally:
        torch.set_num_threads(threads)
    torch.testing.assert_close(
        again.curves[4, 3e-2, 0].double(), stored.curves[4, 3e-2, 0][:10], rtol=0, atol=1e-3
    )
    round_trip = npl.LongRuns(stored.steps, stored.curves).to_dict()
    assert round_trip["runs"][0]["losses"][:3] == [
        round(float(v), 5) for v in stored.curves[4, 3e-2, 0][:3]
    ]
