"""Notebook 05's experiments: parameter counts, activations, deep stacks measured by the
exercises' reference functions, stream writes."""

import math

import pytest
import torch
import torch.nn.functional as F

from gptlib import Block, GPTConfig
from gptlib.lessons.nb05 import checks as nb05
from gptlib.lessons.nb05 import experiments as residuals
from gptlib.lessons.shared.experiments.variants import Variant, build_gpt
from gptlib.lessons.shared.references import loss_gradient_norms


@pytest.mark.parametrize("d", [8, 64, 768])
def test_block_parameter_counts_match_the_formulas(d):
    counts = residuals.block_parameter_counts(d, n_heads=4)
    assert counts == {
        "attention": 4 * d * d + 4 * d,
        "mlp": 8 * d * d + 5 * d,
        "layer norms": 4 * d,
    }


def test_block_parameter_counts_match_a_real_block():
    block = Block(32, 4)
    assert sum(residuals.block_parameter_counts(32, 4).values()) == sum(
        p.numel() for p in block.parameters()
    )
    no_bias = residuals.block_parameter_counts(32, 4, bias=False)
    assert no_bias["mlp"] == 8 * 32 * 32 and no_bias["attention"] == 4 * 32 * 32


def test_mlp_share_tends_to_two_thirds():
    counts = residuals.block_parameter_counts(12288, 96)
    assert counts["mlp"] / sum(counts.values()) == pytest.approx(2 / 3, abs=1e-3)


def test_block_parameter_counts_rejects_indivisible_heads():
    with pytest.raises(ValueError, match="divisible"):
        residuals.block_parameter_counts(10, 4)


def test_activation_values_match_closed_forms():
    x = torch.tensor([-1.0, 1.0], dtype=torch.float64)
    curves = residuals.activation_values_and_slopes(x)
    phi = 0.5 * (1 + math.erf(1 / math.sqrt(2)))  # Φ(1)
    torch.testing.assert_close(
        curves["GELU"][0], torch.tensor([-(1 - phi), phi], dtype=torch.float64)
    )
    sigmoid = 1 / (1 + math.exp(-1))
    torch.testing.assert_close(
        curves["SiLU"][0], torch.tensor([-(1 - sigmoid), sigmoid], dtype=torch.float64)
    )
    torch.testing.assert_close(curves["ReLU"][0], torch.tensor([0.0, 1.0], dtype=torch.float64))


def test_activation_slopes_match_finite_differences():
    x = torch.linspace(-3, 3, 13, dtype=torch.float64) + 0.05  # avoid ReLU's kink at 0
    h = 1e-6
    for name, (_, slope) in residuals.activation_values_and_slopes(x).items():
        phi = residuals.ACTIVATIONS[name]
        numeric = (phi(x + h) - phi(x - h)) / (2 * h)
        torch.testing.assert_close(slope, numeric, atol=1e-6, rtol=1e-5)


def test_deep_stack_applies_the_switches():
    model = residuals.deep_stack(3, residual=False, layer_norm=False)
    assert model.lm_head.weight.dtype == torch.float64
    assert all(not b.residual and isinstance(b.ln1, torch.nn.Identity) for b in model.blocks)
    assert isinstance(model.ln_f, torch.nn.Module) and not isinstance(model.ln_f, torch.nn.Identity)


def test_deep_stack_lets_an_init_redraw_the_weights_before_float64():
    seen = []
    model = residuals.deep_stack(
        2, residual=True, init=lambda m: seen.append(m.tok_emb.weight.dtype)
    )
    assert seen == [torch.float32] and model.tok_emb.weight.dtype == torch.float64
    drawn = residuals.deep_stack(2, residual=True, init=lambda m: nb05._fan_in_init_(m, 1.0))
    assert drawn.tok_emb.weight.std().item() == pytest.approx(1.0, rel=0.05)


class _StudentMLP(torch.nn.Module):
    """An MLP as a student writes it, apart from gptlib's: the two layers and GELU, no dropout."""

    def __init__(self, d_model, activation=F.gelu):
        super().__init__()
        self.up = torch.nn.Linear(d_model, 4 * d_model)
        self.down = torch.nn.Linear(4 * d_model, d_model)
        self.activation = activation

    def forward(self, x):
        return self.down(self.activation(self.up(x)))


def test_deep_stack_runs_the_mlp_handed_in_on_the_blocks_own_weights():
    plain = residuals.deep_stack(3, residual=False, layer_norm=False)
    own = residuals.deep_stack(3, residual=False, layer_norm=False, mlp=_StudentMLP)
    assert all(type(b.mlp) is _StudentMLP for b in own.blocks)
    assert own.blocks[0].mlp.up.weight.dtype == torch.float64
    assert plain.state_dict().keys() == own.state_dict().keys()
    for p, q in zip(plain.state_dict().values(), own.state_dict().values(), strict=True):
        assert torch.equal(p, q)
    seen = []
    drawn = residuals.deep_stack(2, residual=True, mlp=_StudentMLP, init=lambda m: seen.append(m))
    assert type(seen[0].blocks[0].mlp) is _StudentMLP and seen[0] is drawn  # init sees the swap
    redrawn = [  # building the MLPs draws nothing: an init draws what it would without them
        residuals.deep_stack(2, residual=False, mlp=mlp, init=_variance_preserving)
        for mlp in (None, _StudentMLP)
    ]
    for p, q in zip(*(m.state_dict().values() for m in redrawn), strict=True):
        assert torch.equal(p, q)


def test_gradient_flow_measures_the_stack_with_the_mlp_handed_in():
    plain = _flow(4, residual=False, layer_norm=False)
    own = _flow(4, residual=False, layer_norm=False, mlp=_StudentMLP)
    torch.testing.assert_close(own.grad_norms, plain.grad_norms, rtol=1e-12, atol=0)
    torch.testing.assert_close(own.outputs, plain.outputs, rtol=1e-12, atol=0)

    def relu_mlp(d_model):
        return _StudentMLP(d_model, F.relu)

    relu = _flow(4, residual=False, layer_norm=False, mlp=relu_mlp)
    assert not torch.allclose(relu.grad_norms, plain.grad_norms)  # the MLP handed in runs


def test_stack_lines_read_the_modules():
    model = residuals.deep_stack(6, residual=False, layer_norm=False, d_model=32)
    lines = residuals.stack_lines(model)
    assert lines[:3] == ["blocks = 6", "d = 32 (4 heads)", "MLP widths = 32 -> 128 -> 32"]
    with torch.no_grad():
        proj, down = (
            float(torch.cat([layer.weight.flatten() for layer in layers]).std())
            for layers in ([b.attn.proj for b in model.blocks], [b.mlp.down for b in model.blocks])
        )
    assert abs(proj - 0.02 / math.sqrt(2 * 6)) < 3e-4  # GPT-2's shrunk projections
    assert lines[3] == "embedding std = tok_emb 0.02, pos_emb 0.02"
    assert lines[4] == (
        f"weight std in every block = attn.qkv 0.02, attn.proj {proj:z.2g}, "
        f"mlp.up 0.02, mlp.down {down:z.2g}"
    )
    assert lines[5] == "unembedding weight std = 0.02"


def test_gelu_gain_matches_a_monte_carlo_estimate():
    z = torch.randn(2_000_000, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert residuals.gelu_gain() == pytest.approx(float(F.gelu(z).pow(2).mean().rsqrt()), rel=2e-3)
    assert residuals.gelu_gain() == pytest.approx(1.5335, abs=1e-4)


def _flow(n_layers, residual, layer_norm=True, init=None, **kw):
    return residuals.gradient_flow(
        n_layers, residual, loss_gradient_norms, layer_norm=layer_norm, init=init, **kw
    )


def _similarity(flow):
    return torch.stack([nb05._position_similarity(h) for h in flow.outputs])


def _variance_preserving(model):
    nb05._fan_in_init_(model, residuals.gelu_gain())


def test_without_layer_norms_skips_decide_orders_of_magnitude():
    with_skip = _flow(8, residual=True, layer_norm=False).grad_norms
    without = _flow(8, residual=False, layer_norm=False).grad_norms
    assert with_skip.max() / with_skip.min() < 1.5  # level
    assert math.log10(with_skip[0] / without[0]) > 10  # orders of magnitude at block 1
    assert (without[1:] > without[:-1]).all()  # shrinking at every step down


def test_without_skips_positions_collapse_whatever_the_init():
    for init in (None, _variance_preserving):
        flow = _flow(12, residual=False, layer_norm=False, init=init)
        assert _similarity(flow)[-1] > 0.999
    assert _similarity(_flow(12, residual=True, layer_norm=False)).max() < 0.05


def test_a_variance_preserving_init_keeps_gradient_and_stream_in_range_without_skips():
    flow = _flow(12, residual=False, layer_norm=False, init=_variance_preserving)
    assert abs(math.log10(flow.grad_norms[-1] / flow.grad_norms[0])) < 1
    assert flow.stream_norms.max() / flow.stream_norms.min() < 10
    gpt2 = _flow(12, residual=False, layer_norm=False)
    assert gpt2.stream_norms[-1] < 1e-50  # GPT-2's small writes shrink an unskipped stream


def test_the_flow_records_each_blocks_output_and_its_size():
    flow = _flow(2, residual=True, batch_size=2, block_size=4)
    model = residuals.deep_stack(2, residual=True, block_size=4)
    generator = torch.Generator().manual_seed(0)
    idx = torch.randint(0, model.config.vocab_size, (2, 4), generator=generator)
    with torch.no_grad():
        x = model.tok_emb(idx) + model.pos_emb.weight[:4]
        outputs = []
        for block in model.blocks:
            x = block(x)
            outputs.append(x)
    outputs = torch.stack(outputs)
    torch.testing.assert_close(flow.stream_norms, outputs.norm(dim=-1).mean(dim=(1, 2)))
    scaled = outputs / outputs.abs().amax(dim=-1, keepdim=True)
    torch.testing.assert_close(flow.outputs, scaled)
    assert flow.outputs.abs().amax(dim=-1).eq(1).all()


def test_with_layer_norms_positions_collapse_without_skips():
    with_skip = _flow(12, residual=True)
    without = _flow(12, residual=False)
    assert _similarity(without)[-1] > 0.99
    assert _similarity(with_skip).max() < 0.2
    assert 0.1 < without.grad_norms[0] / with_skip.grad_norms[0] < 100


def test_gradient_flow_rejects_bad_sizes():
    with pytest.raises(ValueError, match="block_size"):
        _flow(2, True, block_size=1)


def _small_gpt(norm="pre"):
    torch.manual_seed(0)
    config = GPTConfig(vocab_size=13, d_model=16, n_heads=2, n_layers=2, max_len=8)
    return build_gpt(config, Variant(norm=norm))


def test_stream_writes_match_a_hand_run_of_the_blocks():
    model = _small_gpt()
    idx = torch.randint(0, 13, (2, 8), generator=torch.Generator().manual_seed(0))
    writes = residuals.residual_stream_writes(model, idx)
    with torch.no_grad():
        x = model.tok_emb(idx) + model.pos_emb.weight[:8]
        expected, before = [], []
        for block in model.blocks:
            a = block.attn(block.ln1(x))
            before.append(x)
            x = x + a
            m = block.mlp(block.ln2(x))
            before.append(x)
            x = x + m
            expected += [a, m]
    torch.testing.assert_close(writes.updates, torch.stack(expected))
    torch.testing.assert_close(writes.final, x)
    torch.testing.assert_close(writes.final, writes.embedding + writes.updates.sum(0))
    relative = torch.stack(
        [(u.norm(dim=-1) / b.norm(dim=-1)).mean() for u, b in zip(expected, before, strict=True)]
    )
    torch.testing.assert_close(writes.relative, relative)
    assert writes.names == ("attn 1", "mlp 1", "attn 2", "mlp 2")


def test_stream_writes_need_pre_ln():
    with pytest.raises(ValueError, match=r"gptlib's own Pre-LN blocks.*blocks \[0, 1\] are"):
        residuals.residual_stream_writes(_small_gpt("post"), torch.zeros(1, 4, dtype=torch.long))


def test_activations_are_gelu_for_gpt2():
    assert residuals.ACTIVATIONS["GELU"] is F.gelu


def _by_hand(n_layers, residual, layer_norm):
    """The error at each block's output, each block's weights' and biases' gradient norm, and
    the final LayerNorm's gain, from a forward pass written out here: references for the split
    that `gradient_flow` makes."""
    model = residuals.deep_stack(n_layers, residual=residual, layer_norm=layer_norm)
    generator = torch.Generator().manual_seed(0)
    V = model.config.vocab_size
    idx = torch.randint(0, V, (8, 32), generator=generator)
    targets = torch.randint(0, V, (8, 32), generator=generator)
    x = model.tok_emb(idx) + model.pos_emb.weight[:32]
    outputs = []
    for block in model.blocks:
        x = block(x)
        x.retain_grad()
        outputs.append(x)
    logits = model.lm_head(model.ln_f(x))
    F.cross_entropy(logits.flatten(0, 1), targets.flatten()).backward()
    errors = torch.stack([o.grad.norm(dim=-1).mean() for o in outputs])
    weights, biases = [], []
    for block in model.blocks:
        params = dict(block.named_parameters())
        weights.append(sum(p.grad.pow(2).sum() for n, p in params.items() if "bias" not in n))
        biases.append(sum(p.grad.pow(2).sum() for n, p in params.items() if "bias" in n))
    var = x.detach().var(dim=-1, unbiased=False)
    gain = (var + model.ln_f.eps).rsqrt().mean()
    return errors, torch.stack(weights).sqrt(), torch.stack(biases).sqrt(), float(gain)


@pytest.mark.parametrize(("residual", "layer_norm"), [(False, False), (True, False), (False, True)])
def test_the_flow_splits_weights_from_biases_and_measures_the_error(residual, layer_norm):
    flow = _flow(6, residual, layer_norm)
    errors, weights, biases, gain = _by_hand(6, residual, layer_norm)
    torch.testing.assert_close(flow.errors, errors, rtol=1e-9, atol=0)
    torch.testing.assert_close(flow.weight_grads, weights, rtol=1e-9, atol=0)
    torch.testing.assert_close(flow.bias_grads, biases, rtol=1e-9, atol=0)
    assert flow.final_norm_gain == pytest.approx(gain, rel=1e-9)
    # the two parts make the whole that loss_gradient_norms measures
    torch.testing.assert_close(
        (flow.weight_grads**2 + flow.bias_grads**2).sqrt(), flow.grad_norms, rtol=1e-9, atol=0
    )


def test_without_skips_under_gpt2_init_no_weight_learns_and_the_total_is_biases():
    flow = _flow(12, residual=False, layer_norm=False)
    assert flow.weight_grads.max() < 1e-50  # δ·aᵀ with a, the shrunken stream, at every depth
    assert flow.bias_grads[-1] > 1 and flow.errors[-1] / flow.errors[0] > 1e40
    assert flow.final_norm_gain == pytest.approx(1e-5**-0.5, rel=1e-6)  # ln_f: a plain 1/√ε


def test_without_the_final_norm_the_stack_ends_in_the_identity():
    model = residuals.deep_stack(3, residual=False, layer_norm=False, final_norm=False)
    assert isinstance(model.ln_f, torch.nn.Identity)
    kept = _flow(8, residual=False, layer_norm=False)
    dropped = _flow(8, residual=False, layer_norm=False, final_norm=False)
    # with the stream's variance far below ε the kept norm is 1/√ε and a centring: about a scale
    torch.testing.assert_close(
        kept.grad_norms / dropped.grad_norms * 1e-5**0.5,
        torch.ones(8, dtype=torch.float64),
        rtol=0.15,
        atol=0,
    )
