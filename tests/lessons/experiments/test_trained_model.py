"""What training made of a GPT: the per-layer readout of the residual stream, against
independent computations."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from gptlib import GPT, GPTConfig
from gptlib.lessons.experiments.trained_model import layer_readout


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
