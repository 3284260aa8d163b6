"""Notebook 04's exercises: the references agree with gptlib's layer, right answers written in
other ways pass (other reshapes, other ways to write the module), and the module check says
which parameters it expected or which input broke a fragile answer."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from gptlib import CausalSelfAttention
from gptlib.lessons.checks import REGISTRY, CheckError, verify
from gptlib.lessons.checks.nb04 import run_module


def test_split_and_merge_references_are_the_layers_own():
    attn = CausalSelfAttention(12, 3)
    for x, h in REGISTRY["split-heads"].inputs():
        layer = CausalSelfAttention(x.shape[-1], h)
        torch.testing.assert_close(REGISTRY["split-heads"].reference(x, h), layer.split_heads(x))
    for (out,) in REGISTRY["merge-heads"].inputs():
        torch.testing.assert_close(REGISTRY["merge-heads"].reference(out), attn.merge_heads(out))


def test_merge_with_view_is_told_why_view_refuses():
    def student(out):
        B, h, T, d_h = out.shape
        return out.transpose(1, 2).view(B, T, h * d_h)

    with pytest.raises(CheckError, match="not contiguous"):
        verify("merge-heads", student)


SPLITS = {
    "reshape and permute": lambda x, h: x.reshape(*x.shape[:2], h, -1).permute(0, 2, 1, 3),
    "unflatten": lambda x, h: x.unflatten(-1, (h, -1)).transpose(1, 2),
    "stack of chunks": lambda x, h: torch.stack(x.chunk(h, dim=-1), dim=1),
}
MERGES = {
    "permute and reshape": lambda o: o.permute(0, 2, 1, 3).reshape(o.shape[0], o.shape[2], -1),
    "cat of heads": lambda o: torch.cat(o.unbind(1), dim=-1),
    "contiguous then view": lambda o: (
        o.transpose(1, 2).contiguous().view(o.shape[0], o.shape[2], -1)
    ),
    "flatten": lambda o: o.transpose(1, 2).flatten(2),
}


@pytest.mark.parametrize("answer", SPLITS.values(), ids=SPLITS)
def test_other_right_splits_pass(answer):
    verify("split-heads", answer)


@pytest.mark.parametrize("answer", MERGES.values(), ids=MERGES)
def test_other_right_merges_pass(answer):
    verify("merge-heads", answer)


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
    from gptlib.lessons.checks.nb04 import _Layer

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
    with pytest.raises(CheckError, match="size 32 and the other 40"):
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
