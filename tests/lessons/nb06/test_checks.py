"""Notebook 06's exercises: the references agree with PyTorch and gptlib's Block, the LayerNorm
inputs separate where eps goes, and right answers written in other ways pass."""

import pytest
import torch
import torch.nn.functional as F

from gptlib import Block
from gptlib.lessons.engine.checks import REGISTRY, CheckError, verify
from gptlib.lessons.shared.experiments.variants import RewiredBlock


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_block_reference_equals_gptlibs_block_and_its_post_ln_variant(norm):
    torch.manual_seed(0)
    block = RewiredBlock(Block(16, 4), norm=norm)
    x = torch.randn(2, 5, 16)
    reference = REGISTRY["block_forward"].reference
    got = reference(x, block.ln1, block.attn, block.ln2, block.mlp, norm)
    torch.testing.assert_close(got, block(x))


def test_the_inputs_hold_both_placements_with_non_trivial_sublayers():
    cases = REGISTRY["block_forward"].inputs()
    assert [case[-1] for case in cases] == ["pre", "pre", "post", "post"]
    x, ln1, attn, ln2, mlp, _ = cases[0]
    assert not torch.allclose(ln1(x), ln2(x))  # the two norms differ, so swapping them shows
    assert attn(x).abs().mean() > 0.1 and mlp(x).abs().mean() > 0.1


def test_a_block_that_ignores_norm_is_named_by_the_placement_it_gets_wrong():
    def always_pre(x, ln1, attn, ln2, mlp, norm):
        x = x + attn(ln1(x))
        return x + mlp(ln2(x))

    with pytest.raises(CheckError, match="with norm='post' your block computes the Pre-LN"):
        verify("block_forward", always_pre)


def _pre_ln(x, ln1, attn, ln2, mlp):
    x = x + attn(ln1(x))
    return x + mlp(ln2(x))


def _post_ln(x, ln1, attn, ln2, mlp):
    x = ln1(x + attn(x))
    return ln2(x + mlp(x))


def _block(pre=_pre_ln, post=_post_ln):
    """A student's block with one placement written as given, the other right."""

    def block(x, ln1, attn, ln2, mlp, norm):
        return (pre if norm == "pre" else post)(x, ln1, attn, ln2, mlp)

    return block


def _olmo(x, ln1, attn, ln2, mlp):
    x = x + ln1(attn(x))
    return x + ln2(mlp(x))


# A placement written wrong, as a student would: (the block, the mistake, its placement).
PLACEMENT_MISTAKES = {
    "Pre-LN without residuals": (
        _block(pre=lambda x, ln1, attn, ln2, mlp: mlp(ln2(attn(ln1(x))))),
        "no-residual-pre",
        "norm='pre'",
    ),
    "Post-LN without residuals": (
        _block(post=lambda x, ln1, attn, ln2, mlp: ln2(mlp(ln1(attn(x))))),
        "no-residual-post",
        "norm='post'",
    ),
    "Pre-LN without the residual around attention": (
        _block(pre=lambda x, ln1, attn, ln2, mlp: (h := attn(ln1(x))) + mlp(ln2(h))),
        "no-residual-around-attention-pre",
        "norm='pre'",
    ),
    "Post-LN without the residual around the MLP": (
        _block(post=lambda x, ln1, attn, ln2, mlp: ln2(mlp(ln1(x + attn(x))))),
        "no-residual-around-mlp-post",
        "norm='post'",
    ),
    "Post-LN with ln1 and ln2 swapped": (
        _block(post=lambda x, ln1, attn, ln2, mlp: _post_ln(x, ln2, attn, ln1, mlp)),
        "post-ln-norms-swapped",
        "norm='post'",
    ),
    "OLMo's placement asked for Post-LN": (
        _block(post=_olmo),
        "norm-after-sublayer-inside-residual",
        "norm='post'",
    ),
    "OLMo's placement asked for Pre-LN": (
        _block(pre=_olmo),
        "norm-on-sublayer-output",
        "norm='pre'",
    ),
    "no residual in either placement": (
        _block(
            pre=lambda x, ln1, attn, ln2, mlp: mlp(ln2(attn(ln1(x)))),
            post=lambda x, ln1, attn, ln2, mlp: ln2(mlp(ln1(attn(x)))),
        ),
        "no-residual-pre",
        "norm='pre'",
    ),
}


@pytest.mark.parametrize(
    ("answer", "mistake", "placement"), PLACEMENT_MISTAKES.values(), ids=PLACEMENT_MISTAKES
)
def test_a_misplaced_residual_or_norm_is_named_with_the_placement_it_breaks(
    answer, mistake, placement
):
    with pytest.raises(CheckError) as info:
        verify("block_forward", answer)
    assert info.value.mistake == mistake
    assert info.value.detail.startswith(f"with {placement}")


def _through_gptlib_block(x, ln1, attn, ln2, mlp, norm):
    """A correct answer that borrows gptlib's Block (rewired Post-LN when asked), given pieces."""
    block = Block(16, 4)
    block.ln1, block.attn, block.ln2, block.mlp = ln1, attn, ln2, mlp
    return RewiredBlock(block, norm=norm)(x)


def _in_place(x, ln1, attn, ln2, mlp, norm):
    if norm == "pre":
        x += attn(ln1(x))
        x += mlp(ln2(x))
        return x
    return ln2((h := ln1(x + attn(x))) + mlp(h))


def _in_float64(x, ln1, attn, ln2, mlp, norm):
    def run(f, t):
        return f(t.float()).double()

    x = x.double()
    if norm == "post":
        x = run(ln1, x + run(attn, x))
        return run(ln2, x + run(mlp, x)).float()
    x = x + run(attn, run(ln1, x))
    return (x + run(mlp, run(ln2, x))).float()


BLOCKS = {
    "in place": _in_place,
    "float64 stream": _in_float64,
}


@pytest.mark.parametrize("answer", BLOCKS.values(), ids=BLOCKS)
def test_other_right_blocks_pass(answer):
    assert verify("block_forward", answer) == 4


def _via_nn_layer_norm(x, gamma, beta, eps=1e-5):
    norm = torch.nn.LayerNorm(x.shape[-1], eps=eps).to(x.dtype)
    with torch.no_grad():
        norm.weight.copy_(gamma)
        norm.bias.copy_(beta)
    return norm(x)


def _by_var_mean_and_rsqrt(x, gamma, beta, eps=1e-5):
    var, mean = torch.var_mean(x, dim=-1, keepdim=True, correction=0)
    return torch.addcmul(beta, gamma, (x - mean) * torch.rsqrt(var + eps))


def _one_pass_variance(x, gamma, beta, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    var = (x * x).mean(-1, keepdim=True) - mean**2
    return gamma * (x - mean) / (var + eps).sqrt() + beta


LAYER_NORMS = {
    "var_mean and rsqrt": _by_var_mean_and_rsqrt,
    "E[x²] − E[x]²": _one_pass_variance,
}


@pytest.mark.parametrize("answer", LAYER_NORMS.values(), ids=LAYER_NORMS)
def test_other_right_layer_norms_pass(answer):
    verify("layer_norm", answer)


def _normalised_by(std):
    return lambda x, g, b, eps=1e-5: g * (x - x.mean(-1, keepdim=True)) / std(x, eps) + b


def _variance(x):
    return x.var(-1, correction=0, keepdim=True)


FRAGILE = {
    "eps outside the sqrt": (
        _normalised_by(lambda x, eps: _variance(x).sqrt() + eps),
        "eps-outside-sqrt",
    ),
    "no eps": (_normalised_by(lambda x, eps: _variance(x).sqrt()), "no-eps"),
    "eps as a floor": (
        _normalised_by(lambda x, eps: _variance(x).clamp_min(eps).sqrt()),
        "variance-floor",
    ),
}


@pytest.mark.parametrize(("answer", "mistake"), FRAGILE.values(), ids=FRAGILE)
def test_where_eps_goes_shows_on_the_nearly_constant_token(answer, mistake):
    x, gamma, beta, eps = REGISTRY["layer_norm"].inputs()[0]
    ordinary = (x[:, :-1], gamma, beta, eps)  # without the nearly constant token: no difference
    torch.testing.assert_close(
        answer(*ordinary),
        F.layer_norm(x[:, :-1], x.shape[-1:], gamma, beta, eps),
        atol=1e-4,
        rtol=1e-4,
    )
    with pytest.raises(CheckError) as info:
        verify("layer_norm", answer)
    assert info.value.mistake == mistake


def test_without_eps_a_constant_token_divides_by_zero():
    x, gamma, beta, eps = REGISTRY["layer_norm"].inputs()[1]
    assert torch.equal(x[:, -1], x[:, -1, :1].expand_as(x[:, -1]))  # the constant token
    no_eps = FRAGILE["no eps"][0]
    assert torch.isnan(no_eps(x, gamma, beta, eps)[:, -1]).all()
    torch.testing.assert_close(
        REGISTRY["layer_norm"].reference(x, gamma, beta, eps)[:, -1],
        beta[None].expand(x.shape[0], -1),
    )


# ---------------------------------------------- block_gradient_norms and stream_profile


def _models_and_batch(norm, n_layers=3):
    from gptlib.lessons.nb06 import experiments as npl

    ids = torch.randint(npl.VOCAB_SIZE, (4, 9), generator=torch.Generator().manual_seed(5))
    return npl.build_model(norm, n_layers, seed=7), ids[:, :-1], ids[:, 1:]


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_the_gradient_reference_is_each_blocks_total_norm_as_torch_clips_it(norm):
    model, inputs, targets = _models_and_batch(norm)
    got = REGISTRY["block_gradient_norms"].reference(model, inputs, targets)
    model.zero_grad()
    model(inputs, targets)[1].backward()
    expected = [torch.nn.utils.clip_grad_norm_(b.parameters(), float("inf")) for b in model.blocks]
    torch.testing.assert_close(got, torch.stack(expected).double(), rtol=1e-5, atol=0)


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_the_stream_reference_walks_the_models_own_forward_pass(norm):
    model, inputs, targets = _models_and_batch(norm)
    entering = []
    hooks = [b.register_forward_pre_hook(lambda m, a: entering.append(a[0])) for b in model.blocks]
    hooks.append(model.blocks[-1].register_forward_hook(lambda m, a, out: entering.append(out)))
    _, loss = model(inputs, targets)
    for hook in hooks:
        hook.remove()
    grads = torch.autograd.grad(loss, entering)
    sizes, stream_grads = REGISTRY["stream_profile"].reference(model, inputs, targets)
    torch.testing.assert_close(sizes, torch.stack([x.norm(dim=-1).mean() for x in entering]))
    torch.testing.assert_close(stream_grads, torch.stack([g.norm(dim=-1).mean() for g in grads]))
    if norm == "post":  # every Post-LN block ends in a LayerNorm: |x| = √d from block 2 on
        torch.testing.assert_close(sizes[1:], torch.full((3,), 32**0.5), rtol=1e-3, atol=0)


def _by_clip_grad_norm(model, inputs, targets):
    model.zero_grad(set_to_none=False)  # zeros rather than None: the same for the sum
    _, loss = model(inputs, targets)
    loss.backward()
    return torch.stack(
        [torch.nn.utils.clip_grad_norm_(block.parameters(), float("inf")) for block in model.blocks]
    )


def _by_autograd_grad(model, inputs, targets):
    """Never touches .grad: asks autograd for the gradients, then a float64 loop per block."""
    logits, _ = model(inputs)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    groups = [list(block.parameters()) for block in model.blocks]
    grads = iter(torch.autograd.grad(loss, [p for group in groups for p in group]))
    norms = []
    for group in groups:
        total = 0.0
        for _ in group:
            total += float(next(grads).double().pow(2).sum())
        norms.append(total**0.5)
    return torch.tensor(norms, dtype=torch.float64)


def _by_python_sum(model, inputs, targets):
    for p in model.parameters():
        p.grad = None
    model(inputs, targets)[1].backward()
    return torch.stack(
        [sum((p.grad**2).sum() for p in block.parameters()).sqrt() for block in model.blocks]
    )


GRADIENT_NORMS = {
    "clip_grad_norm_": _by_clip_grad_norm,
    "autograd.grad, float64 loop": _by_autograd_grad,
    "python sum of squares": _by_python_sum,
}


@pytest.mark.parametrize("answer", GRADIENT_NORMS.values(), ids=GRADIENT_NORMS)
def test_other_right_gradient_norms_pass(answer):
    assert verify("block_gradient_norms", answer) == 3


def test_an_empty_gradient_read_any_way_is_named():
    def squares_before_backward(model, inputs, targets):
        model.zero_grad()
        squares = [sum(p.grad.pow(2).sum() for p in b.parameters()) for b in model.blocks]
        model(inputs, targets)[1].backward()
        return torch.stack(squares).sqrt()

    with pytest.raises(CheckError) as info:
        verify("block_gradient_norms", squares_before_backward)
    assert info.value.mistake == "read-before-backward"


def test_diagnosing_a_wrong_answer_does_not_count_as_the_students_empty_gradient_read():
    """A wrong answer's diagnosis runs the catalogue, the empty-gradient read among them. That
    run is the engine's, so the student's own first empty-gradient read still gets the words
    first, not the line that fixes it."""

    def doubled(model, inputs, targets):
        return 2 * _by_autograd_grad(model, inputs, targets)

    def read_first(model, inputs, targets):
        model.zero_grad(set_to_none=True)
        norms = torch.stack([p.grad.norm() for p in model.parameters()])
        model(inputs, targets)[1].backward()
        return norms

    with pytest.raises(CheckError) as info:
        verify("block_gradient_norms", doubled)
    assert info.value.mistake is None
    with pytest.raises(CheckError) as info:
        verify("block_gradient_norms", read_first)
    assert info.value.mistake == "read-before-backward"
    assert "here is the fix" not in str(info.value)


def test_another_attribute_error_is_not_taken_for_an_empty_gradient():
    def typo(model, inputs, targets):
        return model.block_list

    with pytest.raises(CheckError) as info:
        verify("block_gradient_norms", typo)
    assert info.value.mistake is None and "AttributeError" in str(info.value)


def _by_retain_grad(model, inputs, targets):
    """The notebook's way: walk the blocks, keep each stream tensor's gradient, one backward."""
    x = model.tok_emb(inputs) + model.pos_emb(torch.arange(inputs.shape[1]))
    stream = []
    for block in model.blocks:
        x.retain_grad()
        stream.append(x)
        x = block(x)
    x.retain_grad()
    stream.append(x)
    logits = model.lm_head(model.ln_f(x))
    F.cross_entropy(logits.flatten(0, 1), targets.flatten()).backward()
    sizes = torch.stack([s.norm(dim=-1).mean() for s in stream])
    return sizes.detach(), torch.stack([s.grad.norm(dim=-1).mean() for s in stream])


def _by_hooks_in_float64(model, inputs, targets):
    """Hooks on the model's own forward pass, a hand-written loss, float64 sizes."""
    stream = []
    hooks = [b.register_forward_pre_hook(lambda m, a: stream.append(a[0])) for b in model.blocks]
    hooks.append(model.blocks[-1].register_forward_hook(lambda m, a, out: stream.append(out)))
    logits, _ = model(inputs)
    for hook in hooks:
        hook.remove()
    log_p = logits.double().log_softmax(-1)
    loss = -log_p.gather(-1, targets[..., None]).mean()
    grads = torch.autograd.grad(loss, stream)

    def size(t):
        return t.detach().double().pow(2).sum(-1).sqrt().mean()

    return torch.stack([size(s) for s in stream]), torch.stack([size(g) for g in grads])


def _with_dropout_and_loop(model, inputs, targets):
    """The model's dropout (p = 0 here) kept in, a Python loop over the tokens for the sizes."""
    positions = torch.arange(inputs.shape[1])
    x = model.dropout(model.tok_emb(inputs) + model.pos_emb(positions))
    stream = [x]
    for block in model.blocks:
        stream.append(block(stream[-1]))
    _, T, d = x.shape
    loss = F.cross_entropy(
        model.lm_head(model.ln_f(stream[-1])).view(-1, model.config.vocab_size), targets.reshape(-1)
    )
    grads = torch.autograd.grad(loss, stream)

    def size(t):
        rows = t.detach().reshape(-1, d)
        return torch.tensor(sum(float(r.norm()) for r in rows) / len(rows))

    return torch.stack([size(s) for s in stream]), torch.stack([size(g) for g in grads])


STREAMS = {
    "retain_grad": _by_retain_grad,
    "hooks, float64": _by_hooks_in_float64,
    "dropout kept, loop": _with_dropout_and_loop,
}


@pytest.mark.parametrize("answer", STREAMS.values(), ids=STREAMS)
def test_other_right_stream_profiles_pass(answer):
    assert verify("stream_profile", answer) == 3


def test_the_stream_inputs_put_pre_ln_first_where_the_final_norm_shows():
    cases = REGISTRY["stream_profile"].inputs()
    assert [case[0] for case in cases] == ["pre", "post", "pre"]
    assert any(case[3] for case in REGISTRY["block_gradient_norms"].inputs())  # stale grads
    assert not REGISTRY["block_gradient_norms"].inputs()[0][3]  # ... but not in the first


# ---------------------------------------------------------------- read for every exercise
# tests/lessons/engine/checks/test_every_exercise.py runs, for each exercise of this lesson,
# every right answer written another way (at least two) through its check, and holds the one
# named in INDEPENDENT, which shares no code with the reference, to not copying its formula.
RIGHT_ANSWERS = {
    "layer_norm": LAYER_NORMS,
    "block_forward": BLOCKS,
    "block_gradient_norms": GRADIENT_NORMS,
    "stream_profile": STREAMS,
}
INDEPENDENT = {
    "layer_norm": "var_mean and rsqrt",
    "block_forward": "float64 stream",
    "block_gradient_norms": "autograd.grad, float64 loop",
    "stream_profile": "hooks, float64",
}
