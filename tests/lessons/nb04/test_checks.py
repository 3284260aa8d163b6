"""Notebook 04's exercises: the references agree with gptlib's layer and with index arithmetic,
right answers written in other ways pass (other reshapes, other ways to write the module, other
ways to measure which outputs a token moves), and the module check says which parameters it
expected or which input broke a fragile answer."""

import copy
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from gptlib import CausalSelfAttention
from gptlib.lessons.engine.checks import REGISTRY, CheckError, verify
from gptlib.lessons.nb04.checks import run_module
from gptlib.lessons.nb04.experiments.multihead import (
    scramble_head_split,
    split_heads_without_transpose,
)


def test_the_split_reference_is_the_layers_own():
    for x, h in REGISTRY["split-heads"].inputs():
        layer = CausalSelfAttention(x.shape[-1], h)
        torch.testing.assert_close(REGISTRY["split-heads"].reference(x, h), layer.split_heads(x))


def test_a_merge_by_view_after_the_transpose_is_told_why_view_refuses():
    class MergeByView(_BySdpa):
        def forward(self, x):
            B, T, d = x.shape
            q, k, v = (t.view(B, T, self.h, -1).transpose(1, 2) for t in self.qkv(x).chunk(3, -1))
            scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.h)
            blocked = torch.ones(T, T, dtype=torch.bool).triu(1)
            out = scores.masked_fill(blocked, float("-inf")).softmax(-1) @ v  # [B, h, T, d_h]
            return self.proj(out.transpose(1, 2).view(B, T, d))  # not contiguous: view refuses

    with pytest.raises(CheckError, match="not contiguous"):
        verify("attention-module", MergeByView)


SPLITS = {
    "reshape and permute": lambda x, h: x.reshape(*x.shape[:2], h, -1).permute(0, 2, 1, 3),
    "unflatten": lambda x, h: x.unflatten(-1, (h, -1)).transpose(1, 2),
    "stack of chunks": lambda x, h: torch.stack(x.chunk(h, dim=-1), dim=1),
}


@pytest.mark.parametrize("answer", SPLITS.values(), ids=SPLITS)
def test_other_right_splits_pass(answer):
    verify("split-heads", answer)


# --- Exercise 2: merge_heads --------------------------------------------------------------


def _merge_by_loops_in_float64(out):
    B, h, T, d_h = out.shape
    merged = torch.zeros(B, T, h * d_h, dtype=torch.float64)
    for b in range(B):
        for t in range(T):
            for i in range(h):
                merged[b, t, i * d_h : (i + 1) * d_h] = out[b, i, t].double()
    return merged


MERGES = {
    "heads side by side": lambda out: torch.cat(out.unbind(dim=1), dim=-1),
    "permute and flatten": lambda out: out.permute(0, 2, 1, 3).flatten(start_dim=2),
    "contiguous, then view": lambda out: (
        out.transpose(1, 2).contiguous().view(out.shape[0], out.shape[2], -1)
    ),
    "loops in float64": _merge_by_loops_in_float64,
}


@pytest.mark.parametrize("answer", MERGES.values(), ids=MERGES)
def test_other_right_merges_pass(answer):
    assert verify("merge-heads", answer) == len(REGISTRY["merge-heads"].inputs())


def test_the_merge_reference_undoes_the_split_and_is_the_layers_own():
    merge, split = REGISTRY["merge-heads"].reference, REGISTRY["split-heads"].reference
    for (out,) in REGISTRY["merge-heads"].inputs():
        B, h, T, d_h = out.shape
        torch.testing.assert_close(merge(out), CausalSelfAttention.merge_heads(out))
        torch.testing.assert_close(split(merge(out), h), out)
        assert merge(out)[0, 1, d_h : 2 * d_h].equal(out[0, 1, 1])  # position 1, head 1's block


def test_a_merge_by_view_is_told_in_the_courses_words_not_pytorchs():
    def merge_heads(out):
        return out.transpose(1, 2).view(out.shape[0], out.shape[2], -1)

    with pytest.raises(CheckError) as info:
        verify("merge-heads", merge_heads)
    assert info.value.mistake == "view-not-contiguous"
    assert "not contiguous" in info.value.detail
    assert "stride" not in info.value.detail and "Use .reshape" not in info.value.detail


def test_a_wrong_merge_fails_its_own_check_though_a_module_without_it_passes():
    """The issue this exercise answers: a module that merges inline passed while the student's
    merge_heads was wrong; now the merge has a check of its own."""
    assert verify("attention-module", _BySdpa) == len(REGISTRY["attention-module"].inputs())
    with pytest.raises(CheckError) as info:
        verify("merge-heads", lambda out: out.reshape(out.shape[0], out.shape[2], -1))
    assert info.value.mistake == "merge-without-transpose"


def test_a_merge_that_sums_the_heads_is_not_taken_for_the_average():
    with pytest.raises(CheckError) as info:
        verify("merge-heads", lambda out: out.sum(dim=1))
    assert info.value.mistake is None


class _Fused(nn.Module):
    """The parameter layout every answer shares: qkv [3d, d] and proj [d, d], with biases."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.h = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)


class _BySdpa(_Fused):
    def forward(self, x):
        B, T, d = x.shape
        q, k, v = (t.view(B, T, self.h, -1).transpose(1, 2) for t in self.qkv(x).chunk(3, -1))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(out.transpose(1, 2).reshape(B, T, d))


class _ByEinsumWithUpperMask(_Fused):
    def forward(self, x):
        B, T, d = x.shape
        qkv = self.qkv(x).view(B, T, 3, self.h, d // self.h)  # [B, T, 3, h, d_h]
        q, k, v = qkv.unbind(2)  # each [B, T, h, d_h]
        scores = torch.einsum("bqhe,bkhe->bhqk", q, k) / math.sqrt(d // self.h)
        blocked = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        weights = scores.masked_fill(blocked, float("-inf")).softmax(-1)
        return self.proj(torch.einsum("bhqk,bkhe->bqhe", weights, v).reshape(B, T, d))


class _ByLoopOverHeadsInFloat64(_Fused):
    def forward(self, x):
        d, T = x.shape[-1], x.shape[1]
        d_h = d // self.h
        q, k, v = self.qkv(x).double().split(d, dim=-1)
        heads = []
        for i in range(self.h):
            part = slice(i * d_h, (i + 1) * d_h)
            scores = q[..., part] @ k[..., part].transpose(-2, -1) / d_h**0.5
            scores = scores + torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
            heads.append(scores.softmax(-1) @ v[..., part])
        return self.proj(torch.cat(heads, dim=-1).float())


class _WithStoredMask(_Fused):
    """A causal mask kept as a buffer (as nanoGPT does), large enough for the inputs."""

    def __init__(self, d_model, n_heads, max_len=64):
        super().__init__(d_model, n_heads)
        self.register_buffer("mask", torch.tril(torch.ones(max_len, max_len)).bool())

    def forward(self, x):
        B, T, d = x.shape
        q, k, v = (t.unflatten(-1, (self.h, -1)).transpose(1, 2) for t in self.qkv(x).split(d, -1))
        scores = (q @ k.mT) * (d // self.h) ** -0.5
        scores = scores.masked_fill(~self.mask[:T, :T], float("-inf"))
        return self.proj((scores.softmax(-1) @ v).transpose(1, 2).flatten(2))


class _WithSmallStoredMask(_WithStoredMask):
    def __init__(self, d_model, n_heads):
        super().__init__(d_model, n_heads, max_len=32)


class _NanoGPTNames(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.c_attn = nn.Linear(d_model, 3 * d_model)
        self.c_proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        return self.c_proj(x)


RIGHT_MODULES = [_BySdpa, _ByEinsumWithUpperMask, _ByLoopOverHeadsInFloat64, _WithStoredMask]


@pytest.mark.parametrize("answer", RIGHT_MODULES, ids=lambda c: c.__name__)
def test_other_right_attention_modules_pass(answer):
    assert verify("attention-module", answer) == len(REGISTRY["attention-module"].inputs())


def test_the_written_out_layer_equals_gptlibs_with_the_same_weights():
    from gptlib.lessons.nb04.checks import _Layer

    for d, h, weights, x in REGISTRY["attention-module"].inputs():
        layer = CausalSelfAttention(d, h)
        layer.load_state_dict(weights, strict=True)  # the weights are a state dict of the layer
        torch.testing.assert_close(run_module(_Layer)(d, h, weights, x), layer(x))


def test_the_module_check_names_the_parameters_it_expected():
    with pytest.raises(
        CheckError,
        match=r"^attention-module: the weights do not fit: your module has no qkv.weight, "
        r"qkv.bias, proj.weight, proj.bias; gptlib's has no weight for your c_attn.weight, "
        r"c_attn.bias, c_proj.weight, c_proj.bias\. Name and shape the parameters as gptlib does: "
        r"qkv.weight \[36, 12\], qkv.bias \[36\], proj.weight \[12, 12\], proj.bias \[12\]\. "
        r"Create self.qkv",
    ):
        verify("attention-module", _NanoGPTNames)

    class NoBiases(_BySdpa):
        def __init__(self, d_model, n_heads):
            super().__init__(d_model, n_heads)
            self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
            self.proj = nn.Linear(d_model, d_model, bias=False)

    with pytest.raises(CheckError, match=r"your module has no qkv.bias, proj.bias\."):
        verify("attention-module", NoBiases)


def test_a_mask_stored_too_small_fails_on_the_long_input():
    with pytest.raises(CheckError, match="has size 32 and the second has size 40"):
        verify("attention-module", _WithSmallStoredMask)


def test_a_wrong_split_of_q_k_v_is_reported_with_where_it_differs():
    class KeysFirst(_BySdpa):
        def forward(self, x):
            B, T, d = x.shape
            k, q, v = (t.view(B, T, self.h, -1).transpose(1, 2) for t in self.qkv(x).chunk(3, -1))
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.proj(out.transpose(1, 2).reshape(B, T, d))

    with pytest.raises(CheckError, match="largest difference") as info:
        verify("attention-module", KeysFirst)
    assert info.value.mistake is None


# --- Exercise 4: moved_by_token -----------------------------------------------------------

MOVED = REGISTRY["moved-by-token"].reference


def _token_of_slot(head: int, slot: int, T: int, h: int) -> int:
    """Under view(B, h, T, d_h), head `head`'s slot `slot` holds features of this token."""
    return (head * T + slot) // h


def test_the_measurement_finds_each_splits_token_in_each_slot_by_index_arithmetic():
    T, d, h = 8, 16, 4
    x = torch.randn(2, T, d, generator=torch.Generator().manual_seed(1))
    right = MOVED(CausalSelfAttention(d, h).split_heads, x)  # [T, h, T]
    assert torch.equal(right, torch.eye(T, dtype=torch.bool)[:, None, :].expand(T, h, T))
    wrong = MOVED(lambda t: split_heads_without_transpose(t, h), x)
    expected = torch.zeros(T, h, T, dtype=torch.bool)
    for i in range(h):
        for slot in range(T):
            expected[_token_of_slot(i, slot, T, h), i, slot] = True
    assert torch.equal(wrong, expected)


def test_the_measurement_of_a_layer_is_causal_and_of_the_scrambled_layer_reads_the_targets():
    torch.manual_seed(0)
    attn = CausalSelfAttention(16, 4)
    x = torch.randn(2, 8, 16, generator=torch.Generator().manual_seed(1))
    assert torch.equal(MOVED(attn, x), torch.ones(8, 8, dtype=torch.bool).tril().T)
    scrambled = scramble_head_split(copy.deepcopy(attn))
    # Output t takes head i's slot t, which attends to slots 0..t, holding tokens
    # token_of_slot(i, 0) .. token_of_slot(i, t): it reads its target t + 1 when one head covers it.
    T, h = 8, 4
    predicted = [
        t
        for t in range(T - 1)
        if any(_token_of_slot(i, 0, T, h) <= t + 1 <= _token_of_slot(i, t, T, h) for i in range(h))
    ]
    moved = MOVED(scrambled, x)
    assert [t for t in range(T - 1) if moved[t + 1, t]] == predicted != []


def _by_exact_comparison(fn, x, atol=1e-6):
    rows = []
    with torch.no_grad():
        before = fn(x)
        for s in range(x.shape[1]):
            nudged = x.clone()
            nudged[:, s] += 1
            rows.append((fn(nudged) != before).any(0).any(-1))
    return torch.stack(rows)


def _by_jacobian(fn, x, atol=1e-6):
    J = torch.autograd.functional.jacobian(fn, x).abs()  # [B, *S, k, B, T, d]
    n = fn(x).dim()
    return (J.amax(dim=(0, n - 1, n, n + 2)) > atol).movedim(-1, 0)


def _by_random_nudges(fn, x, atol=1e-6):
    generator = torch.Generator().manual_seed(5)
    base = fn(x).detach()
    rows = []
    for s in range(x.shape[1]):
        nudged = x.clone()
        nudged[:, s] += torch.randn(nudged[:, s].shape, generator=generator)
        rows.append(((fn(nudged).detach() - base).abs() > atol).any(0).any(-1))
    return torch.stack(rows)


def _all_tokens_in_one_batch(fn, x, atol=1e-6):
    B, T, d = x.shape
    nudged = x.repeat(T, 1, 1, 1)  # [T, B, T, d]: copy s has token s changed
    nudged[torch.arange(T), :, torch.arange(T)] += 1.0
    with torch.no_grad():
        after = fn(nudged.flatten(0, 1)).unflatten(0, (T, B))
        before = fn(x)
    return ((after - before).abs() > atol).any(1).any(-1)


def _in_float64(fn, x, atol=1e-6):
    fn = copy.deepcopy(fn).double() if isinstance(fn, nn.Module) else fn
    return _by_exact_comparison(fn, x.double(), atol)


MOVED_ANSWERS = {
    "exact comparison": _by_exact_comparison,
    "jacobian": _by_jacobian,
    "random nudges": _by_random_nudges,
    "all tokens in one batch": _all_tokens_in_one_batch,
    "float64": _in_float64,
}


@pytest.mark.parametrize("answer", MOVED_ANSWERS.values(), ids=MOVED_ANSWERS)
def test_other_right_measurements_pass(answer):
    assert verify("moved-by-token", answer) == len(REGISTRY["moved-by-token"].inputs())


def test_the_check_leaves_the_notebooks_random_numbers_alone():
    torch.manual_seed(3)
    expected = torch.rand(3)
    torch.manual_seed(3)
    verify("moved-by-token", _by_exact_comparison)
    verify("reads-ahead", _reads_ahead_by_loops)
    assert torch.equal(torch.rand(3), expected)


# --- Exercise 5: reads_ahead --------------------------------------------------------------


def _reads_ahead_with_nonzero(moved):
    return [(moved[t + 1 :, t].nonzero().flatten() + t + 1) for t in range(moved.shape[0])]


def _reads_ahead_from_the_upper_triangle(moved):
    ahead = moved.T.triu(diagonal=1)  # [t, s]: output t reads the later token s
    return [row.nonzero().flatten().tolist() for row in ahead]


def _reads_ahead_by_loops(moved):
    result = []
    for t in range(len(moved)):
        later = []
        for s in range(len(moved)):
            if s > t and bool(moved[s][t]):
                later.append(s)
        result.append(tuple(later))
    return tuple(result)


READS_AHEAD_ANSWERS = {
    "nonzero tensors": _reads_ahead_with_nonzero,
    "upper triangle": _reads_ahead_from_the_upper_triangle,
    "loops and tuples": _reads_ahead_by_loops,
}


@pytest.mark.parametrize("answer", READS_AHEAD_ANSWERS.values(), ids=READS_AHEAD_ANSWERS)
def test_other_right_reads_ahead_pass(answer):
    assert verify("reads-ahead", answer) == len(REGISTRY["reads-ahead"].inputs())


def test_reads_ahead_of_the_scrambled_layer_by_index_arithmetic():
    moved = torch.zeros(8, 8, dtype=torch.bool)
    T, h = 8, 4
    for t in range(T):  # output t reads, through head i, the tokens of slots 0..t
        for i in range(h):
            for slot in range(t + 1):
                moved[_token_of_slot(i, slot, T, h), t] = True
    ahead = REGISTRY["reads-ahead"].reference(moved)
    assert ahead[1] == [2, 4, 6] and ahead[T - 1] == []


# ---------------------------------------------------------------- read for every exercise
# tests/lessons/engine/checks/test_every_exercise.py runs, for each exercise of this lesson,
# every right answer written another way (at least two) through its check, and holds the one
# named in INDEPENDENT, which shares no code with the reference, to not copying its formula.
RIGHT_ANSWERS = {
    "split-heads": SPLITS,
    "merge-heads": MERGES,
    "attention-module": {module.__name__: module for module in RIGHT_MODULES},
    "moved-by-token": MOVED_ANSWERS,
    "reads-ahead": READS_AHEAD_ANSWERS,
}
INDEPENDENT = {
    "split-heads": "stack of chunks",
    "merge-heads": "heads side by side",
    "attention-module": "_BySdpa",
    "moved-by-token": "jacobian",
    "reads-ahead": "upper triangle",
}
