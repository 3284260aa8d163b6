"""The lesson variants of gptlib's GPT: each computes what its name says, starts from the
model's own weights under the same names, and the attention maps are the layers' real weights."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from gptlib import GPT, Block, CausalSelfAttention, GPTConfig, causal_mask
from gptlib.hooks import capture_inputs
from gptlib.lessons.shared.experiments.attention_maps import attention_maps
from gptlib.lessons.shared.experiments.variants import (
    NoPositions,
    RewiredBlock,
    SinusoidalPositions,
    UnmaskedAttention,
    Variant,
    build_gpt,
    is_masked,
    positions_of,
)
from gptlib.lessons.shared.references import sinusoidal_positions

D = 16
CONFIG = GPTConfig(vocab_size=11, d_model=D, n_heads=4, n_layers=2, max_len=10)


def _block() -> Block:
    torch.manual_seed(0)
    block = Block(D, 2)
    with torch.no_grad():  # non-trivial norms, so that leaving them out or moving them shows
        for ln in (block.ln1, block.ln2):
            ln.weight.uniform_(0.5, 1.5)
            ln.bias.normal_()
    return block.eval()


def test_a_block_rewired_with_the_defaults_is_the_pre_ln_block():
    block, x = _block(), torch.randn(2, 5, D)
    torch.testing.assert_close(RewiredBlock(block)(x), block(x), rtol=0, atol=0)


def test_post_ln_normalises_after_adding():
    block, x = _block(), torch.randn(2, 5, D)
    h = block.ln1(x + block.attn(x))
    torch.testing.assert_close(RewiredBlock(block, norm="post")(x), block.ln2(h + block.mlp(h)))


def test_without_residuals_each_sublayer_replaces_x():
    block, x = _block(), torch.randn(2, 5, D)
    by_hand = block.mlp(block.ln2(block.attn(block.ln1(x))))
    torch.testing.assert_close(RewiredBlock(block, residual=False)(x), by_hand)
    post = block.ln2(block.mlp(block.ln1(block.attn(x))))
    torch.testing.assert_close(RewiredBlock(block, norm="post", residual=False)(x), post)


def test_residuals_without_norms_and_a_bare_block():
    block, x = _block(), torch.randn(2, 5, D)
    h = x + block.attn(x)
    torch.testing.assert_close(RewiredBlock(block, norms=False)(x), h + block.mlp(h))
    bare = RewiredBlock(block, residual=False, norms=False, mlp=False)
    torch.testing.assert_close(bare(x), block.attn(x))
    assert bare.mlp is None and sum(p.numel() for p in bare.parameters()) == 4 * D * D + 4 * D


def test_written_out_attention_is_the_fused_layer_and_torchs():
    torch.manual_seed(1)
    fused = CausalSelfAttention(D, 4).eval()
    written = CausalSelfAttention(D, 4, fused=False).eval()
    written.load_state_dict(fused.state_dict(), strict=True)
    x = torch.randn(3, 7, D)
    torch.testing.assert_close(written(x), fused(x), atol=1e-6, rtol=1e-5)
    mha = nn.MultiheadAttention(D, 4, batch_first=True).eval()
    with torch.no_grad():
        mha.in_proj_weight.copy_(fused.qkv.weight)
        mha.in_proj_bias.copy_(fused.qkv.bias)
        mha.out_proj.weight.copy_(fused.proj.weight)
        mha.out_proj.bias.copy_(fused.proj.bias)
    expected, _ = mha(x, x, x, attn_mask=~causal_mask(7), need_weights=False)
    torch.testing.assert_close(written(x), expected, atol=1e-6, rtol=1e-5)


def test_unmasked_attention_reads_the_future():
    torch.manual_seed(2)
    masked, unmasked = CausalSelfAttention(D, 4).eval(), UnmaskedAttention(D, 4).eval()
    unmasked.load_state_dict(masked.state_dict(), strict=True)
    x = torch.randn(2, 5, D)
    q, k, v = (unmasked.split_heads(t) for t in unmasked.qkv(x).split(D, dim=-1))
    expected = unmasked.proj(unmasked.merge_heads(F.scaled_dot_product_attention(q, k, v)))
    torch.testing.assert_close(unmasked(x), expected)
    # The last position sees everything either way; earlier ones see more without the mask.
    torch.testing.assert_close(masked(x)[:, -1], unmasked(x)[:, -1])
    assert not torch.allclose(masked(x)[:, 0], unmasked(x)[:, 0])
    assert is_masked(masked) and not is_masked(unmasked)


def test_position_variants():
    positions = torch.arange(2, 5)
    torch.testing.assert_close(
        SinusoidalPositions(10, D)(positions), sinusoidal_positions(10, D)[2:5]
    )
    assert torch.equal(NoPositions(D)(positions), torch.zeros(3, D))
    assert not list(SinusoidalPositions(10, D).parameters()) and not NoPositions(D).state_dict()


@pytest.mark.parametrize(
    "variant",
    [
        Variant(attention="written-out"),
        Variant(attention="unmasked"),
        Variant(norm="post"),
        Variant(residual=False, block_norms=False, final_norm=False),
        Variant(positions="sinusoidal"),
        Variant(attention="none"),
    ],
    ids=str,
)
def test_a_variant_starts_from_the_models_weights_under_the_same_names(variant):
    torch.manual_seed(0)
    model = GPT(CONFIG)
    torch.manual_seed(0)
    twin = build_gpt(CONFIG, variant)
    ours, theirs = twin.state_dict(), model.state_dict()
    assert set(ours) <= set(theirs)  # only removed, never renamed
    assert all(torch.equal(ours[name], theirs[name]) for name in ours)
    twin.load_state_dict({name: theirs[name] for name in ours}, strict=True)


@pytest.mark.parametrize("attention", ["written-out", "unmasked"])
def test_an_attention_variant_and_the_model_load_each_other(attention):
    torch.manual_seed(0)
    model, twin = GPT(CONFIG), build_gpt(CONFIG, Variant(attention=attention))
    model.load_state_dict(twin.state_dict(), strict=True)
    twin.load_state_dict(model.state_dict(), strict=True)
    if attention == "written-out":
        assert all(type(b.attn) is CausalSelfAttention and not b.attn.fused for b in twin.blocks)
    else:
        assert all(isinstance(b.attn, UnmaskedAttention) for b in twin.blocks)
    idx = torch.randint(11, (2, 10))
    same = torch.allclose(model.eval()(idx)[0], twin.eval()(idx)[0], atol=1e-5)
    assert same == (attention == "written-out")  # unmasked, the earlier positions read ahead


@pytest.mark.parametrize(
    "variant",
    [Variant(norm="post"), Variant(positions="sinusoidal"), Variant(positions="none")],
    ids=str,
)
def test_the_causal_variants_are_causal(variant):
    torch.manual_seed(0)
    model = build_gpt(CONFIG, variant).eval()
    idx = torch.randint(11, (1, 10))
    changed = idx.clone()
    changed[0, 6] = (changed[0, 6] + 1) % 11
    logits, changed_logits = model(idx)[0], model(changed)[0]
    assert torch.equal(logits[0, :6], changed_logits[0, :6])
    assert not torch.allclose(logits[0, 6], changed_logits[0, 6])


def test_what_a_variant_removes_is_gone():
    post = build_gpt(CONFIG, Variant(norm="post"))
    assert isinstance(post.ln_f, nn.Identity) and all(b.norm == "post" for b in post.blocks)
    assert positions_of(build_gpt(CONFIG, Variant(positions="none"))) == "none"
    assert positions_of(build_gpt(CONFIG, Variant(positions="sinusoidal"))) == "sinusoidal"
    assert positions_of(GPT(CONFIG)) == "learned"
    full, unnormed = GPT(CONFIG), build_gpt(CONFIG, Variant(block_norms=False, final_norm=False))
    assert full.num_parameters() - unnormed.num_parameters() == (2 * 2 + 1) * 2 * D
    with pytest.raises(ValueError, match=r"norm must be one of \('pre', 'post'\), got 'middle'"):
        Variant(norm="middle")


def test_blocks_without_attention_are_the_mlp_sublayer_alone():
    torch.manual_seed(0)
    model = build_gpt(CONFIG, Variant(attention="none")).eval()
    assert not any("attn" in name or "ln1" in name for name, _ in model.named_parameters())
    block, x = model.blocks[0], torch.randn(2, 5, D)
    torch.testing.assert_close(block(x), x + block.mlp(block.ln2(x)))
    idx = torch.randint(11, (1, 10))
    changed = idx.clone()
    changed[0, 3] = (changed[0, 3] + 1) % 11
    same = model(idx)[0] == model(changed)[0]  # each position reads its own token alone
    assert same[0, :3].all() and same[0, 4:].all() and not same[0, 3].all()


def test_the_initialisation_is_the_models_own_choice():
    torch.manual_seed(0)
    theirs = GPT(CONFIG, init="pytorch")
    torch.manual_seed(0)
    ours = build_gpt(CONFIG, Variant(residual=False), init="pytorch")
    assert all(torch.equal(p, theirs.state_dict()[n]) for n, p in ours.state_dict().items())
    gpt2 = GPT(CONFIG).blocks[0].attn.proj.weight.std()  # 0.02 / √(2L)
    assert ours.blocks[0].attn.proj.weight.std() > 3 * gpt2  # uniform within ±1/√d


def test_attention_maps_are_causal_distributions_and_the_layers_own():
    torch.manual_seed(0)
    model = GPT(CONFIG).eval()
    idx = torch.randint(11, (2, 10))
    maps = attention_maps(model, idx)
    assert maps.shape == (2, 2, 4, 10, 10)
    assert torch.all(maps.triu(1) == 0)
    torch.testing.assert_close(maps.sum(-1), torch.ones(2, 2, 4, 10))
    with torch.no_grad(), capture_inputs([b.attn for b in model.blocks]) as inputs:
        model(idx)
    for layer, (block, x) in enumerate(zip(model.blocks, inputs, strict=True)):
        q, k, _ = block.attn.qkv(x).view(2, 10, 3, 4, 4).permute(2, 0, 3, 1, 4)  # [B, h, T, d_h]
        scores = (q @ k.transpose(-2, -1) / 2.0).masked_fill(torch.ones(10, 10).triu(1) > 0, -1e9)
        torch.testing.assert_close(maps[layer], scores.softmax(-1))


def test_the_unmasked_maps_fill_the_upper_triangle():
    torch.manual_seed(0)
    maps = attention_maps(
        build_gpt(CONFIG, Variant(attention="unmasked")), torch.randint(11, (1, 6))
    )
    assert (maps > 0).all()  # every query sees every key, the later ones included
    torch.testing.assert_close(maps.sum(-1), torch.ones(2, 1, 4, 6))
