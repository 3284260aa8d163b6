"""The whole-model shape trace: hooks record what each stage of one forward pass holds."""

import pytest
import torch

from gptlib import GPT, GPTConfig
from gptlib.lessons.nb07.experiments.shape_trace import trace_shapes


@pytest.fixture
def model():
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=13, d_model=16, n_heads=2, n_layers=3, max_len=10))


def _stages(model):
    return [
        ("token vectors", model.tok_emb, "output"),
        ("x = tokens + positions", model.blocks[0], "input"),
        *((f"after block {i + 1}", b, "output") for i, b in enumerate(model.blocks)),
        ("final norm", model.ln_f, "output"),
        ("logits", model.lm_head, "output"),
    ]


def test_each_stage_has_its_shape_and_statistics(model):
    idx = torch.randint(13, (2, 7))
    trace = trace_shapes(model, idx, _stages(model))
    assert trace.idx_shape == (2, 7)
    assert [r.shape for r in trace.rows] == [(2, 7, 16)] * 6 + [(2, 7, 13)]
    assert [r.module for r in trace.rows][:3] == ["tok_emb", "blocks.0", "blocks.0"]
    assert trace.rows[1].kind == "input"
    logits = model(idx)[0]
    assert trace.rows[-1].mean == pytest.approx(logits.mean().item(), abs=1e-6)
    assert trace.rows[-1].std == pytest.approx(logits.std().item(), rel=1e-5)
    expected_x = model.tok_emb(idx) + model.pos_emb.weight[:7]
    assert trace.rows[1].std == pytest.approx(expected_x.std().item(), rel=1e-5)
    assert trace.shape_of("final norm") == (2, 7, 16)


def test_the_table_lists_the_ids_then_every_stage(model):
    trace = trace_shapes(model, torch.randint(13, (2, 7)), _stages(model))
    lines = trace.table().splitlines()
    assert lines[0].split() == ["stage", "recorded", "shape", "mean", "std"]
    assert lines[1].split()[:4] == ["token", "ids", "the", "input"]
    assert lines[-1].split()[:6] == ["logits", "output", "of", "lm_head", "[2,", "7,"]
    assert len(lines) == 2 + 7


def test_the_model_is_left_as_it_was(model):
    model.train()
    trace_shapes(model, torch.randint(13, (1, 4)), _stages(model))
    assert model.training
    assert not model.tok_emb._forward_hooks and not model.blocks[0]._forward_pre_hooks


def test_bad_stages_are_refused(model):
    idx = torch.randint(13, (1, 4))
    with pytest.raises(ValueError, match="not part of the model"):
        trace_shapes(model, idx, [("stray", torch.nn.Linear(2, 2), "output")])
    with pytest.raises(ValueError, match="kind must be one of"):
        trace_shapes(model, idx, [("x", model.ln_f, "weights")])
    model.spare = torch.nn.Identity()  # part of the model, never called
    with pytest.raises(ValueError, match="ran 0 times"):
        trace_shapes(model, idx, [("never", model.spare, "output")])
    del model.spare
    with pytest.raises(ValueError, match="no stage 'nope'"):
        trace_shapes(model, idx, _stages(model)).shape_of("nope")
