"""The name mapping between the chapter's model and gptlib.GPT: copied weights give the same
logits and loss, both ways; every misfit is refused with a message naming it."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from gptlib import GPT, Block, GPTConfig
from gptlib.lessons.experiments.parity import (
    CHAPTER_TO_GPTLIB,
    SharedWeightsMismatch,
    copy_gptlib_weights,
    copy_weights_to_gptlib,
    expected_names,
    gptlib_name,
)


class Attention(nn.Module):
    """The chapter's attention, written independently of gptlib (explicit softmax, triu mask)."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.h, self.dh = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.register_buffer("future", torch.ones(64, 64, dtype=torch.bool).triu(1))

    def forward(self, x):
        B, T, d = x.shape
        q, k, v = (
            t.reshape(B, T, self.h, self.dh).permute(0, 2, 1, 3)
            for t in self.qkv(x).chunk(3, dim=-1)
        )
        scores = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(self.dh)
        scores = scores.masked_fill(self.future[:T, :T], float("-inf"))
        out = torch.einsum("bhij,bhjd->bhid", scores.softmax(-1), v)
        return self.proj(out.permute(0, 2, 1, 3).reshape(B, T, d))


class MLP(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.up, self.down = nn.Linear(d_model, 4 * d_model), nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


class ChapterBlock(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn, self.mlp = Attention(d_model, n_heads), MLP(d_model)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class ChapterGPT(nn.Module):
    def __init__(self, vocab_size, d_model=32, n_heads=4, n_layers=2, max_len=16, tie=False):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(ChapterBlock(d_model, n_heads) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)  # the chapter's name
        if tie:
            self.head.weight = self.tok_emb.weight

    def forward(self, idx, targets=None):
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(idx.shape[1]))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        loss = None if targets is None else F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        return logits, loss


def _gptlib(tie=False, **overrides):
    config = dict(vocab_size=11, d_model=32, n_heads=4, n_layers=2, max_len=16, tie_weights=tie)
    torch.manual_seed(1)
    model = GPT(GPTConfig(**{**config, **overrides}))
    with torch.no_grad():  # values far from the initialisation, so that every weight matters
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return model.eval()


def _tokens(T=12):
    g = torch.Generator().manual_seed(0)
    return torch.randint(11, (3, T), generator=g), torch.randint(11, (3, T), generator=g)


@pytest.mark.parametrize("tie", [False, True])
@pytest.mark.parametrize("impl", ["sdpa", "explicit"])
def test_copied_weights_give_gptlibs_logits_and_loss(tie, impl):
    source = _gptlib(tie, attn_impl=impl)
    torch.manual_seed(2)
    ours = ChapterGPT(11, tie=tie)
    copy_gptlib_weights(source, ours)
    idx, targets = _tokens()
    logits, loss = ours(idx, targets)
    expected_logits, expected_loss = source(idx, targets)
    torch.testing.assert_close(logits, expected_logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(loss, expected_loss, atol=1e-5, rtol=1e-5)
    assert ours.head.weight is ours.tok_emb.weight if tie else True


def test_the_copy_the_other_way_gives_the_chapter_models_logits():
    torch.manual_seed(3)
    ours = ChapterGPT(11).eval()
    target = GPT(GPTConfig(vocab_size=11, d_model=32, n_heads=4, n_layers=2, max_len=16))
    copy_weights_to_gptlib(ours, target)
    idx, _ = _tokens()
    torch.testing.assert_close(target.eval()(idx)[0], ours(idx)[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(target.pos_emb.table.weight, ours.pos_emb.weight)


def test_a_block_copies_under_the_same_names():
    torch.manual_seed(4)
    source, ours = Block(32, 4).eval(), ChapterBlock(32, 4)
    with torch.no_grad():
        for p in source.parameters():
            p.add_(0.3 * torch.randn_like(p))
    copy_gptlib_weights(source, ours)
    x = torch.randn(2, 9, 32)
    torch.testing.assert_close(ours(x), source(x), atol=1e-5, rtol=1e-5)


def test_the_mapping_renames_only_positions_and_the_chapters_head():
    assert CHAPTER_TO_GPTLIB == {
        "pos_emb.weight": "pos_emb.table.weight",
        "head.weight": "lm_head.weight",
    }
    assert gptlib_name("blocks.3.attn.qkv.weight") == "blocks.3.attn.qkv.weight"
    assert gptlib_name("pos_emb.weight") == "pos_emb.table.weight"
    names = expected_names(_gptlib())
    assert names[:2] == ["tok_emb.weight [11, 32]", "pos_emb.weight [16, 32]"]
    assert "blocks.{i}.attn.qkv.weight [96, 32]" in names
    assert names[-1] == "lm_head.weight [11, 32]"
    assert len(names) == 2 + 12 + 2 + 1  # blocks folded: 12 tensors per block


class SeparateQKV(ChapterGPT):
    def __init__(self, vocab_size):
        super().__init__(vocab_size)
        for block in self.blocks:
            del block.attn.qkv
            block.attn.q = nn.Linear(32, 32)


def test_a_misnamed_parameter_is_refused_naming_both_sides_and_the_expected_names():
    ours = SeparateQKV(11)
    before = ours.tok_emb.weight.clone()
    with pytest.raises(ValueError) as info:
        copy_gptlib_weights(_gptlib(), ours)
    message = str(info.value)
    assert "gptlib has no weight for these parameters of yours: ['blocks.0.attn.q.bias'" in message
    assert (
        "your model has no parameter for these weights of gptlib's: ['blocks.0.attn.qkv" in message
    )
    assert "blocks.{i}.attn.qkv.weight [96, 32]" in message
    torch.testing.assert_close(ours.tok_emb.weight, before)  # nothing was copied


def test_a_wrong_shape_is_refused():
    ours = ChapterGPT(11, max_len=8)
    with pytest.raises(ValueError, match=r"pos_emb.weight has shape \[8, 32\] in your model and "):
        copy_gptlib_weights(_gptlib(), ours)


def test_two_names_for_one_weight_are_refused():
    ours = ChapterGPT(11)
    ours.lm_head = nn.Linear(32, 11, bias=False)
    with pytest.raises(ValueError, match="both 'head.weight' and 'lm_head.weight'"):
        copy_gptlib_weights(_gptlib(), ours)


@pytest.mark.parametrize(
    ("source_tied", "ours_tied", "which"),
    [(True, False, "gptlib's model"), (False, True, "your model")],
)
def test_tied_and_untied_models_are_refused(source_tied, ours_tied, which):
    with pytest.raises(SharedWeightsMismatch) as info:
        copy_gptlib_weights(_gptlib(source_tied), ChapterGPT(11, tie=ours_tied))
    assert str(info.value).startswith(
        f"{which} uses one matrix for [['lm_head.weight', 'tok_emb.weight']] where"
    )
    assert issubclass(SharedWeightsMismatch, ValueError)


def test_buffers_are_not_weights():
    ours = ChapterGPT(11)
    copy_gptlib_weights(_gptlib(), ours)  # the attention's `future` buffer needs no partner
    assert ours.blocks[0].attn.future.dtype == torch.bool
