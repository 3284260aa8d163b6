"""The ablation ladder: each rung is gptlib's model with exactly its pieces removed, the counted
bigram is computed right, and a short ladder on the toy grammar trains and ranks as it must."""

import math

import pytest
import torch
import torch.nn.functional as F

from gptlib import GPT, Block, GPTConfig
from gptlib.data import train_val_split
from gptlib.lessons.experiments.ablation import (
    LADDER,
    LadderResult,
    RungResult,
    bigram_cross_entropy,
    build_rung,
    train_ladder,
    train_ladder_seeds,
)
from gptlib.lessons.experiments.toy import toy_text_ids
from gptlib.lessons.experiments.variants import NoPositions, RewiredBlock
from gptlib.lessons.widgets.explorer import check_lines
from gptlib.train import TrainConfig

RUNGS = {r.name: r for r in LADDER}
V, D = 11, 16


def test_the_bigram_rung_reads_only_the_current_token():
    torch.manual_seed(0)
    model = build_rung(RUNGS["bigram"], V, d_model=D, n_layers=2, n_heads=2, max_len=8)
    idx = torch.randint(V, (3, 8))
    logits, _ = model(idx)
    torch.testing.assert_close(logits, model.tok_emb(idx) @ model.lm_head.weight.T)
    assert model.num_parameters() == 2 * V * D  # E and W_U, nothing else


def test_each_rung_has_the_pieces_its_name_says():
    def build(name):
        torch.manual_seed(0)
        return build_rung(RUNGS[name], V, d_model=D, n_layers=2, n_heads=4, max_len=8)

    one, several = build("+ attention, 1 head"), build("+ several heads")
    assert (one.config.n_heads, several.config.n_heads) == (1, 4)
    assert one.num_parameters() == several.num_parameters()  # the same width, split 4 ways
    for name in ("+ attention, 1 head", "+ several heads"):
        assert all(isinstance(b, RewiredBlock) for b in build(name).blocks)
        assert all(b.mlp is None and not b.residual for b in build(name).blocks)
    mlp, residuals = build("+ MLP"), build("+ residuals")
    assert all(b.mlp is not None and not b.residual for b in mlp.blocks)
    assert all(b.residual and isinstance(b.ln1, torch.nn.Identity) for b in residuals.blocks)
    assert isinstance(residuals.ln_f, torch.nn.Identity)
    full, no_positions = build("+ LayerNorm (full)"), build("full, no positions")
    assert all(type(b) is Block for b in full.blocks)
    assert isinstance(full.pos_emb, torch.nn.Embedding)
    assert isinstance(no_positions.pos_emb, NoPositions)
    assert full.num_parameters() - no_positions.num_parameters() == 8 * D  # the position table


def test_the_full_rung_is_gptlib_s_model_with_the_same_weights():
    config = GPTConfig(vocab_size=V, d_model=D, n_heads=4, n_layers=2, max_len=8)
    torch.manual_seed(0)
    reference = GPT(config, embedding_std=1.0)
    torch.manual_seed(0)
    rung = build_rung(
        RUNGS["+ LayerNorm (full)"],
        V,
        d_model=D,
        n_layers=2,
        n_heads=4,
        max_len=8,
        embedding_std=1.0,
    )
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


def _result(*losses):
    names = [r.name for r in LADDER]
    rungs = tuple(RungResult(n, 100, v, v, 0.1) for n, v in zip(names, losses, strict=True))
    return LadderResult(rungs, steps=10, tokens_per_step=64)


def test_gains_compare_each_rung_with_the_one_before_and_no_positions_with_the_full_model():
    result = _result(2.5, 3.0, 2.9, 3.1, 2.3, 2.4, 2.45)
    gains = result.gains()
    assert list(gains) == [r.name for r in LADDER[1:]]
    assert gains["+ attention, 1 head"] == pytest.approx(-0.5)
    assert gains["+ residuals"] == pytest.approx(0.8)
    assert gains["full, no positions"] == pytest.approx(-0.05)  # against the full model
    assert result["+ MLP"].val_loss == 3.1
    with pytest.raises(KeyError, match="no rung 'nope'"):
        result["nope"]
    assert check_lines(result.lines())[0] == "bigram = 2.500 nats held out (100 parameters)"


def test_a_short_ladder_on_the_toy_grammar():
    """The bigram rung approaches the counted bigram; the full model, which can read the
    context, goes well below it; every rung learns something (below ln V)."""
    ids, tokenizer = toy_text_ids(600, seed=0)
    train, val = train_val_split(ids)
    config = TrainConfig(
        steps=150, batch_size=16, block_size=32, lr=2e-2, min_lr=2e-3, warmup_steps=10,
        eval_interval=0, eval_batches=4,
    )  # fmt: skip
    rungs = (RUNGS["bigram"], RUNGS["+ LayerNorm (full)"])
    result = train_ladder(train, val, tokenizer.vocab_size, config, rungs, d_model=32, n_layers=1)
    counted = bigram_cross_entropy(train, val, tokenizer.vocab_size)
    bigram, full = result["bigram"], result["+ LayerNorm (full)"]
    assert abs(bigram.val_loss - counted) < 0.1, (bigram.val_loss, counted)
    assert full.val_loss < counted - 0.3, (full.val_loss, counted)
    assert max(r.val_loss for r in result.rungs) < math.log(tokenizer.vocab_size)
    assert (result.steps, result.tokens_per_step) == (150, 16 * 32)


def test_a_ladder_per_seed_reproduces_the_single_ladder_and_reports_its_range():
    ids, tokenizer = toy_text_ids(300, seed=0)
    train, val = train_val_split(ids)
    config = TrainConfig(
        steps=20, batch_size=8, block_size=16, lr=1e-2, warmup_steps=2, eval_interval=0,
        eval_batches=2,
    )  # fmt: skip
    rungs = (RUNGS["bigram"],)
    seeds = train_ladder_seeds(train, val, tokenizer.vocab_size, config, (0, 3), rungs=rungs,
                               d_model=16, n_layers=1)  # fmt: skip
    alone = train_ladder(train, val, tokenizer.vocab_size, config, rungs, d_model=16, n_layers=1)
    assert seeds.losses("bigram")[0] == alone["bigram"].val_loss  # seed 0 is the default run
    assert seeds.losses("bigram")[0] != seeds.losses("bigram")[1]  # another seed, another run
    low, high = sorted(seeds.losses("bigram"))
    (line,) = seeds.lines()
    assert line == (
        f"bigram               {(low + high) / 2:z.3f} nats held out on average, "
        f"from {low:z.3f} to {high:z.3f} over seeds 0, 3"
    )
    with pytest.raises(ValueError, match="seeds is empty"):
        train_ladder_seeds(train, val, tokenizer.vocab_size, config, ())
