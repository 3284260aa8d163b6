"""Leave-one-out from the full GPT: each row is gptlib's model with exactly one piece removed,
the held-out windows cover the split, the counted bigram is computed right and scores the same
targets as the models, a short run through a training loop ranks as it must, the analysis of the
stored runs computes costs and orders as it says, and the stored runs are complete."""

import math

import pytest
import torch
import torch.nn.functional as F

from gptlib import GPT, Block, GPTConfig
from gptlib.data import train_val_split
from gptlib.lessons.engine.checks import REGISTRY
from gptlib.lessons.nb08.experiments.ablation import (
    BY_NAME,
    FULL,
    REMOVALS,
    ROWS,
    Ablation,
    bigram_cross_entropy,
    bigram_log_probs,
    build_row,
    held_out_loss,
    held_out_windows,
    train_row,
)
from gptlib.lessons.nb08.experiments.long_runs import Curves
from gptlib.lessons.shared.experiments.toy import toy_text_ids
from gptlib.lessons.shared.experiments.variants import NoPositions, RewiredBlock

V, D = 11, 16


def build(name):
    torch.manual_seed(0)
    return build_row(BY_NAME[name], V, d_model=D, n_layers=2, n_heads=4, max_len=8)


def test_the_full_row_is_gptlib_s_model_with_pytorch_s_initialisation():
    config = GPTConfig(vocab_size=V, d_model=D, n_heads=4, n_layers=2, max_len=8)
    torch.manual_seed(0)
    reference = GPT(config, init="pytorch", embedding_std=1.0)
    full = build(FULL)
    assert all(type(b) is Block for b in full.blocks)
    idx = torch.randint(V, (2, 8))
    torch.testing.assert_close(full(idx)[0], reference(idx)[0], rtol=0, atol=0)


def test_each_row_lacks_exactly_the_piece_its_name_says():
    full = build(FULL)
    assert isinstance(build("no positions").pos_emb, NoPositions)
    one = build("one head")
    assert (one.config.n_heads, full.config.n_heads) == (1, 4)
    assert one.num_parameters() == full.num_parameters()  # the same width, one head
    rewired = {name: build(name) for name in ("no MLP", "no residuals", "no block norms",
                                              "no attention")}  # fmt: skip
    for name, model in rewired.items():
        assert all(isinstance(b, RewiredBlock) for b in model.blocks), name
        b = model.blocks[0]
        kept = (b.attn is not None, b.mlp is not None, b.residual,
                not isinstance(b.ln1, torch.nn.Identity) or b.attn is None,
                not isinstance(b.ln2, torch.nn.Identity) or b.mlp is None)  # fmt: skip
        missing = {"no attention": 0, "no MLP": 1, "no residuals": 2, "no block norms": 3}[name]
        assert kept[missing] is False and all(kept[:missing] + kept[missing + 1 : 4]), name
        assert isinstance(model.ln_f, torch.nn.LayerNorm), name  # the final norm kept
    assert isinstance(rewired["no block norms"].blocks[0].ln2, torch.nn.Identity)
    no_final = build("no final norm")
    assert isinstance(no_final.ln_f, torch.nn.Identity)
    assert all(type(b) is Block for b in no_final.blocks)


def test_held_out_windows_cover_the_split_once():
    ids = torch.arange(20)
    x, y = held_out_windows(ids, 6)
    assert x.shape == y.shape == (3, 6)
    assert x.flatten().tolist() == list(range(18)) and y.flatten().tolist() == list(range(1, 19))
    with pytest.raises(ValueError, match="more than 6 ids"):
        held_out_windows(torch.arange(6), 6)


def test_held_out_loss_is_the_mean_over_every_target_and_leaves_the_mode():
    model = build(FULL).train()
    g = torch.Generator().manual_seed(0)
    x, y = torch.randint(V, (5, 8), generator=g), torch.randint(V, (5, 8), generator=g)
    with torch.no_grad():
        logits = model.eval()(x)[0]
    model.train()
    expected = F.cross_entropy(logits.flatten(0, 1), y.flatten()).item()
    assert held_out_loss(model, x, y, chunk=2) == pytest.approx(expected, rel=1e-5)
    assert model.training


def test_counted_bigram_by_hand():
    train = torch.tensor([0, 1, 0, 1, 1])  # pairs 0→1 twice, 1→0 once, 1→1 once
    val = torch.tensor([0, 1, 1])  # pairs 0→1, 1→1
    # add-one counts: row 0 = [1, 3], row 1 = [2, 2]
    expected = -(math.log(3 / 4) + math.log(2 / 4)) / 2
    assert bigram_cross_entropy(train, val, vocab_size=2) == pytest.approx(expected)
    log_p = bigram_log_probs(train, 2)
    assert -log_p[val[:-1], val[1:]].mean().item() == pytest.approx(expected)
    with pytest.raises(ValueError, match="smoothing must be > 0"):
        bigram_cross_entropy(train, val, 2, smoothing=0)


def test_counted_bigram_is_the_cross_entropy_of_its_own_table():
    g = torch.Generator().manual_seed(0)
    train, val = torch.randint(5, (400,), generator=g), torch.randint(5, (50,), generator=g)
    counts = torch.ones(5, 5)
    for a, b in zip(train[:-1].tolist(), train[1:].tolist(), strict=True):
        counts[a, b] += 1
    log_p = (counts / counts.sum(1, keepdim=True)).log()
    expected = F.nll_loss(log_p[val[:-1]], val[1:]).item()
    assert bigram_cross_entropy(train, val, 5) == pytest.approx(expected, rel=1e-6)


def test_a_short_run_of_two_rows_through_the_reference_loop_on_the_toy_grammar():
    """Without attention a model reads only the current token and lands near the counted bigram
    on the same windows; the full model goes well below it; the same seed gives the same run."""
    ids, tokenizer = toy_text_ids(2000, seed=0)
    train, val = train_val_split(ids)
    loop, batches = REGISTRY["train"].reference, REGISTRY["get-batch"].reference
    x, y = held_out_windows(val, 64)
    counted = -bigram_log_probs(train, tokenizer.vocab_size)[x, y].mean().item()
    runs = {
        name: train_row(loop, batches, BY_NAME[name], train, val, tokenizer.vocab_size, lr=1e-2,
                        steps=200, eval_every=100, seed=0, n_eval=4)
        for name in ("no attention", FULL)
    }  # fmt: skip
    assert runs[FULL][1].eval_steps == (0, 100, 200)
    scores = {name: held_out_loss(model, x, y) for name, (model, _) in runs.items()}
    assert abs(scores["no attention"] - counted) < 0.1, (scores, counted)
    assert scores[FULL] < counted - 0.3, (scores, counted)
    _, again = train_row(loop, batches, BY_NAME["no attention"], train, val, tokenizer.vocab_size,
                         lr=1e-2, steps=200, eval_every=100, seed=0, n_eval=4)  # fmt: skip
    assert again == runs["no attention"][1]


def _ablation(ends):
    """Made-up runs: seeds 1 and 2 of every row ending at `ends[row] ± 0.01`; at step 10 every
    row's estimate is 3, so every order holds there."""
    runs, held_out = {}, {}
    for name in BY_NAME:
        for seed, shift in ((1, -0.01), (2, 0.01)):
            end = ends[name] + shift
            runs[name, seed] = Curves((0, 10, 20), (4, 3, end), (4, 3, end))
            held_out[name, seed] = end + 0.05
    other = {name: ends[name] for name in BY_NAME}
    return Ablation(runs, held_out, 3e-3, (1, 2), 20, 1e-3, other)


def test_the_analysis_compares_seed_by_seed():
    ablation = _ablation({name: 2.0 + 0.1 * i for i, name in enumerate(BY_NAME)})
    assert ablation.loss(FULL) == pytest.approx([2.04, 2.06])
    assert ablation.mean("one head") == pytest.approx(2.25)
    assert ablation.estimate("one head", 20) == pytest.approx(2.2)
    costs = ablation.costs()
    assert list(costs) == list(REMOVALS) == [r.name for r in ROWS[1:]]
    assert costs["no MLP"] == pytest.approx([0.3, 0.3])
    assert ablation.order(["no attention", FULL]) == [FULL, "no attention"]
    assert ablation.order(["no attention", FULL], step=20) == [FULL, "no attention"]
    assert ablation.last_reorder(list(BY_NAME)[::-1]) == 10  # all tie at step 10: given order


def test_the_stored_runs_hold_every_row_and_seed_and_the_other_rate():
    ablation = Ablation.load()
    assert ablation.seeds == (0, 1, 2) and ablation.lr == 3e-3 and ablation.other_lr == 1e-3
    assert set(ablation.other) == set(BY_NAME)
    for name in BY_NAME:
        curves = ablation.curves(name)
        assert [c.eval_steps[-1] for c in curves] == [ablation.steps] * 3
        assert all(math.isfinite(v) for c in curves for v in c.val)
        assert all(1 < loss < math.log(65) for loss in ablation.loss(name))
