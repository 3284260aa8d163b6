"""The ablation ladder: each configuration is gptlib's model with exactly its pieces removed, the
counted bigram is computed right, a short run through a training loop ranks as it must, the
analysis of the stored runs picks learning rates and gains as it says, and the stored runs are
complete."""

import math

import pytest
import torch
import torch.nn.functional as F

from gptlib import GPT, Block, GPTConfig
from gptlib.data import train_val_split
from gptlib.lessons.checks import REGISTRY
from gptlib.lessons.experiments.ablation import (
    CONFIGS,
    FULL,
    LADDER,
    LEFT_OUT,
    Ladder,
    bigram_cross_entropy,
    build_rung,
    self_weights,
    signal_at_init,
    train_rung,
)
from gptlib.lessons.experiments.attention_maps import attention_maps
from gptlib.lessons.experiments.long_runs import Curves
from gptlib.lessons.experiments.toy import toy_text_ids
from gptlib.lessons.experiments.variants import NoPositions, RewiredBlock

V, D = 11, 16


def build(name, **options):
    torch.manual_seed(0)
    return build_rung(CONFIGS[name], V, d_model=D, n_layers=2, n_heads=4, max_len=8, **options)


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


def test_each_left_out_configuration_is_the_full_model_less_one_piece():
    full = build(FULL)
    assert isinstance(build("full, no positions").pos_emb, NoPositions)
    assert full.num_parameters() - build("full, no positions").num_parameters() == 8 * D
    assert all(b.attn is None for b in build("full, no attention").blocks)
    assert build("full, 1 head").config.n_heads == 1
    assert all(b.mlp is None and b.residual for b in build("full, no MLP").blocks)
    no_residuals = build("full, no residuals")
    assert all(
        not b.residual and not isinstance(b.ln1, torch.nn.Identity) for b in no_residuals.blocks
    )
    assert LEFT_OUT["LayerNorm"] is LADDER[4]  # without LayerNorm: the ladder's rung before
    for piece, rung in LEFT_OUT.items():
        kept = {k: v for k, v in vars(rung).items() if k != "name"}
        assert sum(not v for v in kept.values()) == 1, piece


@pytest.mark.parametrize("init", ["gpt2", "pytorch"])
def test_the_full_rung_is_gptlib_s_model_with_the_same_weights(init):
    config = GPTConfig(vocab_size=V, d_model=D, n_heads=4, n_layers=2, max_len=8)
    torch.manual_seed(0)
    reference = GPT(config, init=init, embedding_std=1.0)
    rung = build(FULL, init=init)
    idx = torch.randint(V, (2, 8))
    torch.testing.assert_close(rung(idx)[0], reference(idx)[0], rtol=0, atol=0)


def test_gpt2_s_initialisation_starves_a_stack_without_residuals_and_not_one_with_them():
    ids = torch.randint(65, (4, 64), generator=torch.Generator().manual_seed(0))
    bare = [signal_at_init(CONFIGS["+ MLP"], 65, ids, init) for init in ("gpt2", "pytorch")]
    assert bare[0] < 1e-4 < 1e-2 < bare[1]
    with_residuals = signal_at_init(CONFIGS["+ residuals"], 65, ids, "gpt2")
    assert with_residuals > 1.0  # the embeddings pass through untouched


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
        name: train_rung(loop, batches, CONFIGS[name], train, val, tokenizer.vocab_size, lr=1e-2,
                         steps=200, eval_every=100, seed=0, n_eval=4)
        for name in ("bigram", FULL)
    }  # fmt: skip
    assert runs["bigram"].eval_steps == (0, 100, 200)
    assert abs(runs["bigram"].val[-1] - counted) < 0.1, (runs["bigram"].val, counted)
    assert runs[FULL].val[-1] < counted - 0.3, (runs[FULL].val, counted)
    again = train_rung(loop, batches, CONFIGS["bigram"], train, val, tokenizer.vocab_size,
                       lr=1e-2, steps=200, eval_every=100, seed=0, n_eval=4)  # fmt: skip
    assert again == runs["bigram"]


def _ladder(ends):
    """A made-up ladder: every configuration at three rates on seed 0, the middle one best
    (1e-2 diverged), and seeds 1 and 2 ending at `ends[config] ± 0.01`."""
    runs = {}
    for name in CONFIGS:
        for lr, end in ((1e-3, 3.0), (3e-3, 2.0), (1e-2, float("nan"))):
            runs[name, "pytorch", lr, 0] = Curves((0, 10, 20), (4, 3, end), (4, 3, end))
        for seed, shift in ((1, -0.01), (2, 0.01)):
            end = ends.get(name, 2.0) + shift
            runs[name, "pytorch", 3e-3, seed] = Curves((0, 10, 20), (4, 3, end), (4, 3, end))
    return Ladder(runs, (1e-3, 3e-3, 1e-2), (1, 2), selection_seed=0, steps=20)


def test_the_analysis_picks_rates_on_the_selection_seed_and_compares_seed_by_seed():
    ends = {r.name: 2.6 - 0.1 * i for i, r in enumerate(LADDER)}
    ends.update({"full, no MLP": 2.4, "full, no positions": 2.15})
    ladder = _ladder(ends)
    assert ladder.best_lr("bigram") == 3e-3  # lowest at the end; NaN never wins
    assert ladder.loss("bigram") == pytest.approx([2.59, 2.61])
    assert ladder.mean("+ MLP") == pytest.approx(2.3)
    gains = ladder.ladder_gains()
    assert list(gains) == [r.name for r in LADDER[1:]]
    assert gains["+ several heads"] == pytest.approx([0.1, 0.1])
    last = ladder.added_last()
    assert last["MLP"] == pytest.approx([0.3, 0.3])
    assert last["positions"] == pytest.approx([0.05, 0.05])
    assert last["LayerNorm"] == pytest.approx([0.1, 0.1])
    assert ladder.order(["+ MLP", "bigram"], 20) == ["+ MLP", "bigram"]
    assert ladder.last_reorder([r.name for r in LADDER]) == 10  # all equal at step 10


def test_the_stored_ladder_holds_every_configuration_and_seed():
    ladder = Ladder.load()
    assert ladder.seeds == (1, 2, 3) and ladder.selection_seed not in ladder.seeds
    for name in CONFIGS:
        curves = ladder.curves(name)
        assert [c.eval_steps[-1] for c in curves] == [ladder.steps] * 3
        assert all(math.isfinite(v) for c in curves for v in c.val)
    for name in (r.name for r in LADDER[1:4]):
        assert len(ladder.curves(name, init="gpt2")) == 3


def test_self_weights_are_each_head_s_mean_weight_on_its_own_position():
    model = build("+ several heads")
    one_position = torch.randint(V, (3, 1))
    assert self_weights(model, one_position) == [[1.0] * 4, [1.0] * 4]  # nothing else to see
    idx = torch.randint(V, (3, 8))
    weights = torch.tensor(self_weights(model, idx))  # [L, h]
    maps = attention_maps(model, idx)  # [L, B, h, T, T]
    by_loop = torch.zeros(2, 4)
    for t in range(8):
        by_loop += maps[:, :, :, t, t].mean(dim=1) / 8
    torch.testing.assert_close(weights, by_loop)
