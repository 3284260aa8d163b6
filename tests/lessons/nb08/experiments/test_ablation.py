"""The ablation ladder: each configuration is gptlib's model with exactly its pieces removed, the
counted bigram is computed right, a short run through a training loop ranks as it must, the
analysis of the stored runs computes gains and orders as it says, and the stored runs are
complete."""

import math

import pytest
import torch
import torch.nn.functional as F

from gptlib import GPT, Block, GPTConfig
from gptlib.data import train_val_split
from gptlib.lessons.engine.checks import REGISTRY
from gptlib.lessons.nb08.experiments.ablation import (
    LADDER,
    RUNGS,
    Ladder,
    bigram_cross_entropy,
    build_rung,
    train_rung,
)
from gptlib.lessons.nb08.experiments.long_runs import Curves
from gptlib.lessons.shared.experiments.toy import toy_text_ids
from gptlib.lessons.shared.experiments.variants import RewiredBlock

V, D = 11, 16
FULL = LADDER[-1].name


def build(name):
    torch.manual_seed(0)
    return build_rung(RUNGS[name], V, d_model=D, n_layers=2, n_heads=4, max_len=8)


def test_the_bigram_rung_reads_only_the_current_token():
    model = build("bigram")
    idx = torch.randint(V, (3, 8))
    logits, _ = model(idx)
    torch.testing.assert_close(logits, model.tok_emb(idx) @ model.lm_head.weight.T)
    assert model.num_parameters() == 2 * V * D  # E and W_U, nothing else


def test_each_rung_has_the_pieces_its_name_says():
    one, several = build("+ attention, 1 head"), build("+ several heads")
    assert (one.config.n_heads, several.config.n_heads) == (1, 4)
    assert one.num_parameters() == several.num_parameters()  # the same width, split 4 ways
    for model in (one, several):
        assert all(isinstance(b, RewiredBlock) for b in model.blocks)
        assert all(b.mlp is None and not b.residual for b in model.blocks)
    mlp, residuals = build("+ MLP"), build("+ residuals")
    assert all(b.mlp is not None and not b.residual for b in mlp.blocks)
    assert all(b.residual and isinstance(b.ln1, torch.nn.Identity) for b in residuals.blocks)
    assert isinstance(residuals.ln_f, torch.nn.Identity)
    full = build(FULL)
    assert all(type(b) is Block for b in full.blocks)
    assert isinstance(full.pos_emb, torch.nn.Embedding)


def test_the_full_rung_is_gptlib_s_model_with_pytorch_s_initialisation():
    config = GPTConfig(vocab_size=V, d_model=D, n_heads=4, n_layers=2, max_len=8)
    torch.manual_seed(0)
    reference = GPT(config, init="pytorch", embedding_std=1.0)
    rung = build(FULL)
    idx = torch.randint(V, (2, 8))
    torch.testing.assert_close(rung(idx)[0], reference(idx)[0], rtol=0, atol=0)


def test_counted_bigram_by_hand():
    train = torch.tensor([0, 1, 0, 1, 1])  # pairs 0→1 twice, 1→0 once, 1→1 once
    val = torch.tensor([0, 1, 1])  # pairs 0→1, 1→1
    # add-one counts: row 0 = [1, 3], row 1 = [2, 2]
    expected = -(math.log(3 / 4) + math.log(2 / 4)) / 2
    assert bigram_cross_entropy(train, val, vocab_size=2) == pytest.approx(expected)
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


def test_a_short_run_of_two_rungs_through_the_reference_loop_on_the_toy_grammar():
    """The bigram rung approaches the counted bigram; the full model, which can read the
    context, goes well below it; the same seed gives the same run."""
    ids, tokenizer = toy_text_ids(2000, seed=0)
    train, val = train_val_split(ids)
    loop, batches = REGISTRY["train"].reference, REGISTRY["get-batch"].reference
    counted = bigram_cross_entropy(train, val, tokenizer.vocab_size)
    runs = {
        name: train_rung(loop, batches, RUNGS[name], train, val, tokenizer.vocab_size, lr=1e-2,
                         steps=200, eval_every=100, seed=0, n_eval=4)
        for name in ("bigram", FULL)
    }  # fmt: skip
    assert runs["bigram"].eval_steps == (0, 100, 200)
    assert abs(runs["bigram"].val[-1] - counted) < 0.1, (runs["bigram"].val, counted)
    assert runs[FULL].val[-1] < counted - 0.3, (runs[FULL].val, counted)
    again = train_rung(loop, batches, RUNGS["bigram"], train, val, tokenizer.vocab_size,
                       lr=1e-2, steps=200, eval_every=100, seed=0, n_eval=4)  # fmt: skip
    assert again == runs["bigram"]


def _ladder(ends):
    """A made-up ladder: seeds 1 and 2 of every rung ending at `ends[rung] ± 0.01`."""
    runs = {}
    for name in RUNGS:
        for seed, shift in ((1, -0.01), (2, 0.01)):
            end = ends[name] + shift
            runs[name, seed] = Curves((0, 10, 20), (4, 3, end), (4, 3, end))
    return Ladder(runs, 3e-3, (1, 2), steps=20)


def test_the_analysis_compares_seed_by_seed():
    ladder = _ladder({r.name: 2.6 - 0.1 * i for i, r in enumerate(LADDER)})
    assert ladder.loss("bigram") == pytest.approx([2.59, 2.61])
    assert ladder.mean("+ MLP") == pytest.approx(2.3)
    gains = ladder.ladder_gains()
    assert list(gains) == [r.name for r in LADDER[1:]]
    assert gains["+ several heads"] == pytest.approx([0.1, 0.1])
    assert ladder.order(["+ MLP", "bigram"], 20) == ["+ MLP", "bigram"]
    assert ladder.last_reorder([r.name for r in LADDER]) == 10  # all equal at step 10


def test_the_stored_ladder_holds_every_rung_and_seed():
    ladder = Ladder.load()
    assert ladder.seeds == (0, 1, 2) and ladder.lr == 3e-3
    for name in RUNGS:
        curves = ladder.curves(name)
        assert [c.eval_steps[-1] for c in curves] == [ladder.steps] * 3
        assert all(math.isfinite(v) for c in curves for v in c.val)
