"""Notebook 01's exercises: the references agree with independent ones, and right answers
written in other ways pass."""

import math

import pytest
import torch
import torch.nn.functional as F

from gptlib.lessons.checks import REGISTRY, CheckError, verify


def test_embed_reference_is_one_hot_product_plus_positions():
    exercise = REGISTRY["embed"]
    for idx, E, P in exercise.inputs():
        one_hot = F.one_hot(idx, num_classes=E.shape[0]).float()
        expected = one_hot @ E + P[: idx.shape[1]]
        torch.testing.assert_close(exercise.reference(idx, E, P), expected)


def test_sinusoidal_reference_by_the_formula():
    T, d, base = 9, 6, 100.0
    table = REGISTRY["sinusoidal-positions"].reference(T, d, base)
    for pos in range(T):
        for i in range(d // 2):
            angle = torch.tensor(pos / base ** (2 * i / d))
            assert abs(table[pos, 2 * i] - torch.sin(angle)) < 1e-5
            assert abs(table[pos, 2 * i + 1] - torch.cos(angle)) < 1e-5


EMBED_ANSWERS = {
    "F.embedding": lambda idx, E, P: F.embedding(idx, E) + P[torch.arange(idx.shape[1])],
    "one-hot product": lambda idx, E, P: (
        F.one_hot(idx, E.shape[0]).to(E.dtype) @ E + P[: idx.shape[1]]
    ),
    "index_select in float64": lambda idx, E, P: (
        E.double().index_select(0, idx.flatten()).view(*idx.shape, -1) + P[: idx.shape[1]].double()
    ),
    "nn.Embedding": lambda idx, E, P: (
        torch.nn.Embedding.from_pretrained(E, freeze=False)(idx)
        + torch.nn.Embedding.from_pretrained(P, freeze=False)(torch.arange(idx.shape[1]))
    ),
    "a loop over the batch": lambda idx, E, P: (
        torch.stack([torch.stack([E[i] for i in row]) for row in idx]) + P[: idx.shape[1]]
    ),
}


@pytest.mark.parametrize("answer", EMBED_ANSWERS.values(), ids=EMBED_ANSWERS)
def test_other_right_embeddings_pass(answer):
    verify("embed", answer)


def _sinusoidal_by_exp_log(T, d, base=10000.0):
    pos = torch.arange(T, dtype=torch.float64)[:, None]
    inv_freq = torch.exp(-math.log(base) * torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = pos * inv_freq
    return torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(1)  # float64, interleaved


def _sinusoidal_by_loops(T, d, base=10000.0):
    rows = [
        [
            math.sin(p / base ** (c / d)) if c % 2 == 0 else math.cos(p / base ** ((c - 1) / d))
            for c in range(d)
        ]
        for p in range(T)
    ]
    return torch.tensor(rows)


@pytest.mark.parametrize("answer", [_sinusoidal_by_exp_log, _sinusoidal_by_loops])
def test_other_right_sinusoidal_tables_pass(answer):
    verify("sinusoidal-positions", answer)


def test_a_frozen_lookup_is_told_it_cuts_the_gradient():
    def frozen(idx, E, P):  # nn.Embedding.from_pretrained freezes by default
        return torch.nn.Embedding.from_pretrained(E)(idx) + P[: idx.shape[1]].detach()

    with pytest.raises(CheckError, match="no gradient back to E and P") as info:
        verify("embed", frozen)
    assert info.value.mistake == "detached"


def test_the_reference_passes_gradient_to_the_rows_it_uses():
    idx, E, P = REGISTRY["embed"].inputs()[0]
    REGISTRY["embed"].reference(idx, E, P).sum().backward()
    used = sorted(set(idx.flatten().tolist()))
    assert (E.grad.abs().sum(-1) > 0).nonzero().flatten().tolist() == used
    assert (P.grad.abs().sum(-1) > 0).nonzero().flatten().tolist() == list(range(idx.shape[1]))
