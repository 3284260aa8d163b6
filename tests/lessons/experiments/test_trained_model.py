"""What training made of a GPT: the offset similarity of a position table and the per-layer
readout of the residual stream, against independent computations."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from gptlib import GPT, GPTConfig
from gptlib.lessons.experiments.trained_model import (
    layer_readout,
    offset_explained_share,
    similarity_by_offset,
)
from gptlib.model import sinusoidal_positions


def test_sinusoidal_similarity_depends_on_the_offset_only():
    table = sinusoidal_positions(32, 16)
    by_offset = similarity_by_offset(table)
    unit = table / table.norm(dim=-1, keepdim=True)
    row0 = unit[0] @ unit.T  # cos(P_0, P_k): for sinusoids the same for every start
    torch.testing.assert_close(by_offset, row0, atol=1e-5, rtol=0)
    assert abs(by_offset[0].item() - 1.0) < 1e-6


def test_offset_similarity_is_the_mean_of_each_diagonal():
    table = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    s = 2**-0.5
    expected = torch.tensor([1.0, (s + s) / 2, 0.0])
    torch.testing.assert_close(similarity_by_offset(table), expected)


def _model() -> GPT:
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=11, d_model=16, n_heads=2, n_layers=3, max_len=12))


def test_the_last_stage_is_the_models_own_prediction():
    model = _model()
    idx = torch.randint(11, (4, 12))
    targets = torch.randint(11, (4, 12))
    readout = layer_readout(model, idx, targets)
    assert readout.stages == ["embeddings", "block 1", "block 2", "block 3"]
    logits, loss = model(idx, targets)
    assert abs(readout.losses[-1] - loss.item()) < 1e-6
    accuracy = (logits.argmax(-1) == targets).float().mean().item()
    assert readout.accuracies[-1] == accuracy


def test_the_first_stage_reads_the_embeddings_alone():
    model = _model()
    idx = torch.randint(11, (2, 12))
    targets = torch.randint(11, (2, 12))
    x = model.tok_emb(idx) + model.pos_emb(torch.arange(12))
    expected = F.cross_entropy(model.lm_head(model.ln_f(x)).flatten(0, 1), targets.flatten())
    assert abs(layer_readout(model, idx, targets).losses[0] - expected.item()) < 1e-6
    assert len(layer_readout(model, idx, targets).lines()) == 4


def test_the_offset_explains_all_of_a_sinusoidal_table_and_little_of_a_random_one():
    assert abs(offset_explained_share(sinusoidal_positions(64, 32)) - 1.0) < 1e-4
    torch.manual_seed(0)
    assert offset_explained_share(torch.randn(64, 32)) < 0.05
    with pytest.raises(ValueError, match="at least 9 positions"):
        offset_explained_share(torch.randn(8, 4))
