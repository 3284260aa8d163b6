"""Notebook 01's exercises: the references agree with independent ones, and right answers
written in other ways pass."""

import collections
import itertools
import math

import pytest
import torch
import torch.nn.functional as F

from gptlib.lessons.engine.checks import REGISTRY, CheckError, verify
from gptlib.lessons.shared.references import sinusoidal_positions


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


def _positions_for_len_idx(idx, E, P):
    T = len(idx)  # the batch size B: idx is [B, T]
    return E[idx] + P[:T]


BATCH_SIZE_FOR_T = {
    "len(idx)": _positions_for_len_idx,
    "idx.shape[0]": lambda idx, E, P: E[idx] + P[: idx.shape[0]],
    "arange of idx.size(0)": lambda idx, E, P: E[idx] + P[torch.arange(idx.size(0))],
}


@pytest.mark.parametrize("answer", BATCH_SIZE_FOR_T.values(), ids=BATCH_SIZE_FOR_T)
def test_the_batch_size_taken_for_the_length_is_named_by_the_error_it_raises(answer):
    with pytest.raises(CheckError) as info:
        verify("embed", answer)
    assert info.value.mistake == "positions-by-batch-size"
    assert "broadcast" not in info.value.detail


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

    with pytest.raises(CheckError, match="no gradient back to the two tables") as info:
        verify("embed", frozen)
    assert info.value.mistake == "detached"


def test_the_reference_passes_gradient_to_the_rows_it_uses():
    idx, E, P = REGISTRY["embed"].inputs()[0]
    REGISTRY["embed"].reference(idx, E, P).sum().backward()
    used = sorted(set(idx.flatten().tolist()))
    assert (E.grad.abs().sum(-1) > 0).nonzero().flatten().tolist() == used
    assert (P.grad.abs().sum(-1) > 0).nonzero().flatten().tolist() == list(range(idx.shape[1]))


# --- the permutation test --------------------------------------------------------------------


def _layer(d, causal, seed=0):
    g = torch.Generator().manual_seed(seed)
    W_Q, W_K, W_V = (torch.randn(d, d, generator=g) / math.sqrt(d) for _ in range(3))

    def layer(x):
        scores = (x @ W_Q) @ (x @ W_K).transpose(-2, -1) / math.sqrt(d)
        if causal:
            T = x.shape[-2]
            scores = scores.masked_fill(torch.ones(T, T).triu(1).bool(), float("-inf"))
        return scores.softmax(-1) @ (x @ W_V)

    return layer


def test_the_permutation_test_of_layers_without_positions():
    """One or two layers without a mask pass it; one causal layer fails the gap but sees no order
    in its prefix; two causal layers see the order before every position from 2 on."""
    x, perm = (
        torch.randn(6, 4, generator=torch.Generator().manual_seed(1)),
        torch.tensor([2, 5, 4, 1, 0, 3]),
    )
    test = REGISTRY["permutation-test"].reference
    one, two = _layer(4, False), (lambda x: _layer(4, False, 1)(_layer(4, False)(x)))
    causal = _layer(4, True)
    two_causal = lambda x: _layer(4, True, 1)(causal(x))  # noqa: E731
    for f in (one, two):
        gap, prefix = test(f, x, perm)
        assert gap.max() < 1e-5 and prefix.max() < 1e-5
    gap, prefix = test(causal, x, perm)
    assert gap.max() > 0.01 and prefix.max() < 1e-5
    gap, prefix = test(two_causal, x, perm)
    assert prefix[:2].max() == 0 and prefix[2:].min() > 1e-3


def test_the_permutation_test_by_hand():
    """f: position t's output is the sum of the tokens up to t, each weighted by its position.
    Reordering the prefix of t changes that sum by Σ_i i·(x[order[i]] - x[i])."""
    x, perm = torch.tensor([[1.0], [2.0], [4.0], [8.0]]), torch.tensor([3, 0, 1, 2])
    f = lambda x: torch.cumsum(torch.arange(len(x))[:, None] * x, dim=0)  # noqa: E731
    gap, prefix = REGISTRY["permutation-test"].reference(f, x, perm)
    # f(x) = [0, 2, 10, 34]; f(x[perm]) = f([8, 1, 2, 4]) = [0, 1, 5, 17]
    torch.testing.assert_close(gap, torch.tensor([34.0, 1.0, 3.0, 7.0]))  # vs [34, 0, 2, 10]
    # t = 2: [2, 1] gives 0 + 1 = 1 vs 2; t = 3: the order 2, 1, 0 gives 0 + 2 + 2 = 4 vs 10
    torch.testing.assert_close(prefix, torch.tensor([0.0, 0.0, 1.0, 6.0]))


def _permutation_test_batched(f, x, perm):
    T = x.shape[0]
    original = f(x)
    gap = (f(x[perm]) - original[perm]).abs().max(dim=-1).values
    prefix = [torch.tensor(0.0), torch.tensor(0.0)]
    for t in range(2, T):
        orders = torch.tensor([[*o, *range(t, T)] for o in itertools.permutations(range(t))])
        outputs = f(x[orders])[:, t]  # [t!, d_out]: every ordering in one batch
        prefix.append((outputs - original[t]).abs().max())
    return gap, torch.stack(prefix)


def _permutation_test_by_loops(f, x, perm):
    """Plain Python: the differences in float64, position by position, feature by feature."""
    T = len(perm)
    original, shuffled = f(x).double(), f(x[perm]).double()
    gap = [max(abs(shuffled[i, j] - original[perm[i], j]) for j in range(original.shape[1]))
           for i in range(T)]  # fmt: skip
    prefix = []
    for t in range(T):
        largest = 0.0
        for order in itertools.permutations(range(t)):
            out = f(x[list(order) + list(range(t, T))]).double()
            largest = max(largest, (out[t] - original[t]).abs().max().item())
        prefix.append(largest)
    return torch.tensor(gap), torch.tensor(prefix)


def _permutation_test_through_the_inverse(f, x, perm):
    """The gap measured where each token stood, then listed in the shuffled order; the prefix
    from the same gap, since a reordering of the prefix keeps position t in place."""

    def gap_of(p):
        by_token = (f(x[p])[torch.argsort(p)] - f(x)).abs()
        return torch.linalg.vector_norm(by_token, ord=float("inf"), dim=-1)[p]

    T = x.shape[0]
    prefix = torch.zeros(T, dtype=torch.float64)
    for t in range(T):
        for order in itertools.permutations(range(t)):
            p = torch.cat([torch.tensor(order, dtype=torch.long), torch.arange(t, T)])
            prefix[t] = max(prefix[t].item(), gap_of(p)[t].item())
    return gap_of(perm), prefix


def _permutation_test_as_a_list(f, x, perm):
    """The pair as a list, not a tuple: the specification's "tuple" read loosely."""
    return list(_permutation_test_batched(f, x, perm))


Measured = collections.namedtuple("Measured", "gap prefix")


def _permutation_test_named(f, x, perm):
    """A named tuple of float64 tensors; the prefix skips the unchanged order (its change is 0)
    and the positions with nothing to reorder, filled with zeros from the start."""
    T, original = len(x), f(x).double()
    gap = torch.amax(torch.abs(f(x[perm]).double() - original[perm]), dim=1)
    prefix = torch.zeros(T, dtype=torch.float64)
    for t in range(2, T):
        for order in itertools.permutations(range(t)):
            if list(order) == list(range(t)):
                continue
            row = f(x[torch.tensor(order + tuple(range(t, T)))])[t].double()
            prefix[t] = torch.maximum(prefix[t], (row - original[t]).abs().max())
    return Measured(gap, prefix)


PERMUTATION_TESTS = {
    "batched orderings": _permutation_test_batched,
    "loops in float64": _permutation_test_by_loops,
    "through the inverse": _permutation_test_through_the_inverse,
    "a list": _permutation_test_as_a_list,
    "a named tuple in float64": _permutation_test_named,
}


@pytest.mark.parametrize("answer", PERMUTATION_TESTS.values(), ids=PERMUTATION_TESTS)
def test_other_right_permutation_tests_pass(answer):
    verify("permutation-test", answer)


def test_lists_of_numbers_are_told_the_specified_type():
    """The specification asks for float tensors (later cells take their max); right numbers in
    Python lists are told so, not compared."""

    def as_lists(f, x, perm):
        return tuple(v.tolist() for v in _permutation_test_batched(f, x, perm))

    with pytest.raises(CheckError, match=r"item 0 \(gap\): it should return a tensor, but "
                       r"returned a list of 5 items"):  # fmt: skip
        verify("permutation-test", as_lists)


# --- similarity by offset --------------------------------------------------------------------


def test_similarity_by_offset_of_sinusoids_is_the_closed_form():
    """cos(P_i, P_(i+k)) = (2/d) Σ_m cos(ω_m k) for every i, so the offset explains everything."""
    T, d = 40, 16
    by_offset, share = REGISTRY["similarity-by-offset"].reference(sinusoidal_positions(T, d))
    omegas = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    expected = torch.stack([torch.cos(omegas * k).mean() for k in range(T)]).float()
    torch.testing.assert_close(by_offset, expected, atol=1e-5, rtol=0)
    assert abs(share - 1) < 1e-5


def test_similarity_by_offset_is_the_mean_of_each_diagonal():
    table = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    s = 2**-0.5  # cos(P_0, P_1) = cos(P_1, P_2); cos(P_0, P_2) = 0
    by_offset, share = REGISTRY["similarity-by-offset"].reference(table)
    torch.testing.assert_close(by_offset, torch.tensor([1.0, s, 0.0]))
    assert share == pytest.approx(1.0)  # each offset's pairs share one cosine


def test_similarity_by_offset_of_a_random_table_explains_little():
    """Independent random rows: cosines near 0 at every offset, and the offset explains about
    what T - 2 group means explain of noise by chance, (T - 2) / (pairs - 1)."""
    g = torch.Generator().manual_seed(0)
    shares = []
    for _ in range(20):
        by_offset, share = REGISTRY["similarity-by-offset"].reference(
            torch.randn(32, 64, generator=g)
        )
        assert (
            float(by_offset[0]) == pytest.approx(1.0, abs=1e-5)
            and by_offset[1:16].abs().max() < 0.2
        )
        shares.append(float(share))
    assert sum(shares) / len(shares) == pytest.approx(30 / (32 * 31 / 2 - 1), abs=0.01)


def _similarity_by_loops(P):
    """Pair by pair with F.cosine_similarity, in float64; the share as between-offset variance."""
    P = P.double()
    T = len(P)
    groups = [[F.cosine_similarity(P[i], P[i + k], dim=0) for i in range(T - k)] for k in range(T)]
    means = [sum(group) / len(group) for group in groups]
    pairs = torch.stack([c for group in groups[1:] for c in group])
    between = sum(
        len(group) * (mean - pairs.mean()) ** 2
        for group, mean in zip(groups[1:], means[1:], strict=True)
    )
    return torch.stack(means), between / ((pairs - pairs.mean()) ** 2).sum()  # fmt: skip


def _similarity_by_offset_matrix(P):
    """Both triangles, offsets |i - j| from a matrix, unbiased variances on both sides."""
    cos = F.cosine_similarity(P[:, None, :], P[None, :, :], dim=-1)  # [T, T]
    index = torch.arange(len(P))
    offset = (index[:, None] - index[None, :]).abs()
    by_offset = torch.stack([cos[offset == k].mean() for k in range(len(P))])
    off_diagonal = offset > 0
    residual = cos - by_offset[offset]
    share = 1 - residual[off_diagonal].var() / cos[off_diagonal].var()
    return by_offset, share.item()


SIMILARITIES = {
    "loops in float64": _similarity_by_loops,
    "an offset matrix": _similarity_by_offset_matrix,
}


@pytest.mark.parametrize("answer", SIMILARITIES.values(), ids=SIMILARITIES)
def test_other_right_similarities_pass(answer):
    verify("similarity-by-offset", answer)


# ---------------------------------------------------------------- read for every exercise
# tests/lessons/engine/checks/test_every_exercise.py runs, for each exercise of this lesson,
# every right answer written another way (at least two) through its check, and holds the one
# named in INDEPENDENT, which shares no code with the reference, to not copying its formula.
RIGHT_ANSWERS = {
    "embed": EMBED_ANSWERS,
    "sinusoidal-positions": {"exp and log": _sinusoidal_by_exp_log, "loops": _sinusoidal_by_loops},
    "permutation-test": PERMUTATION_TESTS,
    "similarity-by-offset": SIMILARITIES,
}
INDEPENDENT = {
    "embed": "one-hot product",
    "sinusoidal-positions": "loops",
    "permutation-test": "loops in float64",
    "similarity-by-offset": "loops in float64",
}
