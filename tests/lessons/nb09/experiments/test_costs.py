"""experiments.costs and experiments.llama_shape: the chapter's figures, and the formulas against
real modules, torch's FLOP counter and real optimizer state (notebook 09)."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from gptlib import GPT, GPTConfig, KVCache
from gptlib.lessons.nb09.experiments import costs
from gptlib.lessons.nb09.experiments.costs import (
    GB,
    GIB,
    PRESETS,
    Architecture,
    accelerator_hours,
    architecture_of,
    attention_flops_per_token,
    attention_share,
    cost_report,
    gpt_layers_approximation,
    kv_cache_bytes,
    measure_matmul_peak,
    memory_text,
    mfu,
    model_flops_per_token,
    parameter_counts,
    training_memory,
)
from gptlib.lessons.nb09.experiments.llama_shape import LlamaShaped, RMSNorm, SwiGLU
from gptlib.lessons.shared.experiments.variants import Variant, build_gpt

LLAMA = PRESETS["Llama 2 7B"]


def count_flops(fn):
    """(all FLOPs torch's counter counts while fn() runs, {operation name: FLOPs})."""
    with FlopCounterMode(display=False) as counter:
        fn()
    counts = counter.get_flop_counts()["Global"]
    return counter.get_total_flops(), {str(op).removeprefix("aten."): n for op, n in counts.items()}


LLAMA_N = 6_738_415_616


def numel(module: nn.Module, keep=lambda name: True) -> int:
    return sum(p.numel() for name, p in module.named_parameters() if keep(name))


# The chapter's figures ----------------------------------------------------------------------


def test_llama2_7b_table_row_by_row():
    p = parameter_counts(LLAMA)
    assert p.attention_per_layer == 67_108_864
    assert p.ffn_per_layer == 135_266_304
    assert p.layers == 6_476_005_376
    assert p.embeddings == 262_144_000
    assert p.positions == 0
    assert p.norms == 266_240
    assert p.total == LLAMA_N
    assert [r.formula for r in p.rows()] == [
        "4d²",
        "3·d·d_ff",
        "L × (attention + FFN)",
        "2Vd",
        "2·d·L + d",
        "",
    ]
    assert [r.count for r in p.rows()][-1] == LLAMA_N


def test_gpt3_175b():
    layers = gpt_layers_approximation(96, 12_288)
    assert layers == 173_946_175_488
    assert round(layers / 1e9, 1) == 173.9
    p = parameter_counts(PRESETS["GPT-3 175B"])
    assert round((p.embeddings + p.positions) / 1e9, 1) == 0.6
    # with biases and norms the full count is the 174.6B usually quoted as "175B"
    assert round(p.total / 1e9, 1) == 174.6


def test_quiz_l24_d2048_v50000_tied():
    assert round(gpt_layers_approximation(24, 2048) / 1e9, 2) == 1.21
    quiz = Architecture(24, 2048, 16, 50_000, 2048, tie_weights=True)
    assert parameter_counts(quiz).embeddings == 102_400_000
    assert round(parameter_counts(quiz).total / 1e9, 1) == 1.3


def test_flops_per_token_and_attention_term_at_4096():
    assert round(2 * LLAMA_N / 1e9, 1) == 13.5
    attention = attention_flops_per_token(32, 4096, 4096)
    assert attention == 4 * 32 * 4096 * 4096 == 2_147_483_648
    assert round(attention / 1e9, 1) == 2.1
    assert attention_flops_per_token(32, 4096, 4096, causal=True) == attention // 2
    assert model_flops_per_token(LLAMA_N, 32, 4096, 4096, training=False) == (
        13_476_831_232 + attention
    )
    assert model_flops_per_token(LLAMA_N, 32, 4096, 4096) == 6 * LLAMA_N + 3 * attention


def test_llama2_training_cost_and_a100_hours():
    total = 6 * LLAMA_N * 2e12
    assert total == pytest.approx(8.0861e22, rel=1e-4)
    assert f"{total:z.1e}" == "8.1e+22"
    hours = accelerator_hours(total, costs.A100_BF16_PEAK, 0.4)
    assert hours == pytest.approx(180_000, rel=0.001)
    reported = costs.LLAMA2_7B_REPORTED_GPU_HOURS
    assert reported == 184_320
    assert abs(hours / reported - 1) < 0.03  # "right to within a few percent"
    seconds = total / (312e12 * 0.4)
    assert round(seconds / 1e8, 1) == 6.5  # ≈ 6.5e8 GPU-seconds


def test_gpt3_training_flops_match_the_papers_3_14e23():
    n = parameter_counts(PRESETS["GPT-3 175B"]).total
    assert 6 * n * costs.PRESET_TRAINING_TOKENS["GPT-3 175B"] == pytest.approx(3.14e23, rel=0.005)


# Formulas against real modules --------------------------------------------------------------

SMALL = dict(vocab_size=50, d_model=64, n_heads=4, n_layers=2)
GPT_CONFIGS = [  # gptlib.GPT, and the lesson variants an Architecture describes
    (GPTConfig(vocab_size=65), Variant()),
    (GPTConfig(vocab_size=65, d_model=96, n_heads=3, n_layers=2, max_len=32, bias=False),
     Variant()),
    (GPTConfig(vocab_size=100, d_model=64, n_heads=2, n_layers=3, tie_weights=True), Variant()),
    (GPTConfig(**SMALL), Variant(positions="none")),
    (GPTConfig(**SMALL), Variant(positions="sinusoidal")),
    (GPTConfig(**{**SMALL, "n_layers": 5}), Variant(norm="post")),
    (GPTConfig(**SMALL), Variant(final_norm=False)),
    (GPTConfig(vocab_size=70, d_model=32, n_heads=4, n_layers=1, bias=False, tie_weights=True),
     Variant()),
]  # fmt: skip


@pytest.mark.parametrize(("config", "variant"), GPT_CONFIGS, ids=lambda c: f"{c}")
def test_gpt_formula_equals_gptlib_gpt_exactly(config, variant):
    model = build_gpt(config, variant)
    p = parameter_counts(architecture_of(config, variant))
    assert model.num_parameters() == p.total
    blocks = numel(model, lambda n: n.startswith("blocks.") and "ln" not in n)
    assert blocks == p.layers
    norms = numel(model, lambda n: "ln" in n)
    assert norms == p.norms
    # the weight matrices: every Linear's weight, the unembedding counted even when tied
    matrices = sum(m.weight.numel() for m in model.modules() if isinstance(m, nn.Linear))
    assert matrices == p.matmul_weights


@pytest.mark.parametrize("name", ["GPT-2 small", "GPT-2 medium", "GPT-2 large", "GPT-2 XL"])
def test_gpt2_presets_equal_gptlib_gpt_on_meta(name):
    a = PRESETS[name]
    config = GPTConfig(
        vocab_size=a.vocab_size,
        d_model=a.d_model,
        n_heads=a.n_heads,
        n_layers=a.n_layers,
        max_len=a.context,
        tie_weights=True,
    )
    with torch.device("meta"):
        model = GPT(config)
    assert model.num_parameters() == parameter_counts(a).total
    known = {
        "GPT-2 small": 124_439_808,
        "GPT-2 medium": 354_823_168,
        "GPT-2 large": 774_030_080,
        "GPT-2 XL": 1_557_611_200,
    }
    assert parameter_counts(a).total == known[name]


def test_llama2_7b_shaped_module_on_meta_sums_to_the_table():
    with torch.device("meta"):
        model = LlamaShaped(32, 4096, 32, 32_000, 11_008)
    assert all(p.is_meta for p in model.parameters())
    assert numel(model) == LLAMA_N
    p = parameter_counts(LLAMA)
    assert numel(model.layers[0].self_attn) == p.attention_per_layer
    assert numel(model.layers[0].mlp) == p.ffn_per_layer
    assert numel(model, lambda n: "self_attn" in n or "mlp" in n) == p.layers
    assert numel(model, lambda n: "embed_tokens" in n or "lm_head" in n) == p.embeddings
    assert numel(model, lambda n: "norm" in n) == p.norms
    assert model.layers[0].mlp.gate_proj.weight.shape == (11_008, 4096)
    assert all(b is None for m in model.modules() if isinstance(m, nn.Linear) for b in [m.bias])


LLAMA3_N = 405_853_388_800  # the released Llama 3.1 405B's parameter count


def test_llama3_405b_with_grouped_query_attention_on_meta():
    arch = PRESETS["Llama 3 405B"]
    assert (arch.n_layers, arch.d_model, arch.n_heads, arch.kv_heads) == (126, 16_384, 128, 8)
    assert arch.head_size == 128 and arch.kv_width == 8 * 128
    p = parameter_counts(arch)
    # attention: W_Q and W_O are d × d, W_K and W_V are d × (8 · 128)
    assert p.attention_per_layer == 2 * 16_384**2 + 2 * 16_384 * 1024 == 570_425_344
    assert p.ffn_per_layer == 3 * 16_384 * 53_248
    assert p.attention_formula == "2d² + 2·d·n_kv·d_h"
    assert p.total == LLAMA3_N
    with torch.device("meta"):
        model = LlamaShaped(126, 16_384, 128, 128_256, 53_248, n_kv_heads=8)
    assert numel(model) == LLAMA3_N
    assert numel(model.layers[0].self_attn) == p.attention_per_layer
    assert model.layers[0].self_attn.k_proj.weight.shape == (1024, 16_384)
    tokens = costs.PRESET_TRAINING_TOKENS["Llama 3 405B"]
    assert 6 * p.total * tokens == pytest.approx(3.8e25, rel=0.01)  # as published


def test_grouped_query_attention_with_biases_and_validation():
    mha = parameter_counts(Architecture(2, 64, 8, 10, 16))
    gqa = parameter_counts(Architecture(2, 64, 8, 10, 16, n_kv_heads=2))
    # W_K, W_V and their biases shrink from 64 to 2 · 8 = 16 outputs
    assert mha.attention_per_layer - gqa.attention_per_layer == 2 * (64 * 48 + 48)
    assert gqa.attention_formula == "2d² + 2·d·n_kv·d_h + 2d + 2·n_kv·d_h"
    assert parameter_counts(Architecture(2, 64, 8, 10, 16, n_kv_heads=8)) == mha
    with pytest.raises(ValueError, match=r"n_kv_heads=3 does not divide n_heads=8.*\[1, 2, 4, 8\]"):
        Architecture(2, 64, 8, 10, 16, n_kv_heads=3)
    with pytest.raises(ValueError, match="n_kv_heads must be a positive int"):
        Architecture(2, 64, 8, 10, 16, n_kv_heads=0)


def test_grouped_llama_shaped_forward_shares_keys_within_a_group():
    torch.manual_seed(0)
    model = LlamaShaped(1, 32, 4, 20, 48, n_kv_heads=2)
    attention = model.layers[0].self_attn
    assert attention.k_proj.weight.shape == (16, 32)
    x = torch.randn(1, 6, 32)
    # reference: heads 0 and 1 read key/value head 0, heads 2 and 3 read head 1
    q = attention.q_proj(x).view(1, 6, 4, 8).transpose(1, 2)
    k = attention.k_proj(x).view(1, 6, 2, 8).transpose(1, 2)[:, [0, 0, 1, 1]]
    v = attention.v_proj(x).view(1, 6, 2, 8).transpose(1, 2)[:, [0, 0, 1, 1]]
    expected = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    expected = attention.o_proj(expected.transpose(1, 2).reshape(1, 6, 32))
    torch.testing.assert_close(attention(x), expected)
    idx = torch.randint(0, 20, (2, 6))
    arch = Architecture(
        1, 32, 4, 20, 6, d_ff=48, n_kv_heads=2, style="llama", bias=False, positions="rope"
    )
    p = parameter_counts(arch)
    assert numel(model) == p.total
    counted, _ = count_flops(lambda: model(idx))
    # the repeated keys are copies: only the projections and the full-width scores count
    assert counted == (2 * p.matmul_weights + attention_flops_per_token(1, 6, 32)) * 2 * 6
    with pytest.raises(ValueError, match="n_kv_heads=3 does not divide n_heads=4"):
        LlamaShaped(1, 32, 4, 20, 48, n_kv_heads=3)


def test_kv_cache_of_grouped_attention_uses_the_key_width():
    arch = PRESETS["Llama 3 405B"]
    report = cost_report(arch, 1e12)
    assert report.kv_cache_bytes == 2 * 126 * 8192 * 1024 * 2
    assert report.kv_cache_bytes == kv_cache_bytes(126, 8192, arch.kv_width)
    assert "key/value heads = 8" in report.lines()


def test_memory_text_labels_both_units():
    assert GB == 1_000_000_000 and GIB == 1_073_741_824
    assert memory_text(2 * GIB) == "2 GiB (2.147 GB)"
    assert memory_text(13_476_831_232) == "12.55 GiB (13.48 GB)"
    assert memory_text(10**9) == "0.9313 GiB (1 GB)"


def test_attention_share_is_linear_in_the_context_and_crosses_at_2n_over_4ld():
    share = attention_share(LLAMA, [1024, 4096, 32_768])
    two_n = 2 * LLAMA_N
    assert share.ratios == tuple(4 * 32 * t * 4096 / two_n for t in (1024, 4096, 32_768))
    assert share.ratio_at(4096) == pytest.approx(2_147_483_648 / 13_476_831_232)
    assert share.crossing == pytest.approx(two_n / (4 * 32 * 4096))
    assert round(share.crossing) == 25_705
    assert "Llama 2 7B, attention / 2N at 4,096 tokens = 0.159" in share.lines()
    assert share.lines()[-1] == "Llama 2 7B, context where attention equals 2N = 25,705 tokens"
    with pytest.raises(ValueError, match="was not computed"):
        share.ratio_at(2048)
    with pytest.raises(ValueError, match="at least one context"):
        attention_share(LLAMA, [])


def test_architecture_validation():
    with pytest.raises(ValueError, match="not divisible by n_heads=5"):
        Architecture(2, 64, 5, 10, 8)
    with pytest.raises(ValueError, match="no biases"):
        Architecture(2, 64, 4, 10, 8, style="llama")
    with pytest.raises(ValueError, match="n_layers must be a positive int"):
        Architecture(0, 64, 4, 10, 8)
    with pytest.raises(ValueError, match="positions must be one of"):
        Architecture(2, 64, 4, 10, 8, positions="alibi")
    assert Architecture(2, 64, 4, 10, 8).ffn_width == 256
    assert dataclasses.replace(LLAMA, d_ff=None).ffn_width == 4 * 4096


# FLOPs against torch's FLOP counter ---------------------------------------------------------


def _gpt(attention: str) -> tuple[GPT, torch.Tensor]:
    torch.manual_seed(0)
    config = GPTConfig(vocab_size=65, max_len=64)
    return build_gpt(config, Variant(attention=attention)), torch.randint(0, 65, (3, 64))


def test_forward_flops_counted_by_torch_equal_2_matmul_weights_plus_attention():
    model, idx = _gpt("written-out")
    B, T = idx.shape
    p = parameter_counts(architecture_of(model.config))
    counted, by_op = count_flops(lambda: model(idx))
    attention = attention_flops_per_token(4, T, 128)  # the math path computes the full square
    assert counted == (2 * p.matmul_weights + attention) * B * T
    assert by_op["bmm"] == attention * B * T
    # against the chapter's 2N (all parameters) the count is a few percent lower
    chapter = (2 * p.total + attention) * B * T
    assert 0.0 < 1 - counted / chapter < 0.05


def test_forward_plus_backward_is_three_forwards_6n():
    model, idx = _gpt("written-out")
    B, T = idx.shape
    p = parameter_counts(architecture_of(model.config))
    forward, _ = count_flops(lambda: model(idx))
    both, _ = count_flops(lambda: model(idx, idx)[1].backward())
    assert both == 3 * forward
    assert both == model_flops_per_token(p.matmul_weights, 4, T, 128) * B * T


def test_the_counter_sees_the_cpus_fused_attention_only_from_torch_2_15():
    """Before torch 2.15 FlopCounterMode has no formula for the CPU's fused attention (it counts
    0, as notebook 09 says); from 2.15 it counts the full T × T square, as the math path does."""
    model, idx = _gpt("fused")
    B, T = idx.shape
    p = parameter_counts(architecture_of(model.config))
    counted, by_op = count_flops(lambda: model(idx))
    weights = 2 * p.matmul_weights * B * T
    release = tuple(int(part) for part in torch.__version__.split(".")[:2])
    seen = attention_flops_per_token(4, T, 128) * B * T if release >= (2, 15) else 0
    assert counted == weights + seen
    assert "bmm" not in by_op


def test_llama_shaped_forward_counts_three_ffn_matrices():
    torch.manual_seed(0)
    arch = Architecture(2, 64, 4, 50, 16, d_ff=96, style="llama", bias=False, positions="rope")
    model = LlamaShaped(2, 64, 4, 50, 96)
    idx = torch.randint(0, 50, (2, 16))
    p = parameter_counts(arch)
    assert numel(model) == p.total
    counted, _ = count_flops(lambda: model(idx))
    assert counted == (2 * p.matmul_weights + attention_flops_per_token(2, 16, 64)) * 2 * 16


def test_llama_shaped_is_causal_and_rmsnorm_matches_torch():
    torch.manual_seed(0)
    model = LlamaShaped(2, 32, 4, 20, 48)
    idx = torch.randint(0, 20, (1, 10))
    changed = idx.clone()
    changed[0, -1] = (idx[0, -1] + 1) % 20
    a, b = model(idx), model(changed)
    assert a.shape == (1, 10, 20)
    torch.testing.assert_close(a[:, :-1], b[:, :-1])
    assert not torch.allclose(a[:, -1], b[:, -1])
    x = torch.randn(2, 5, 32)
    norm = RMSNorm(32)
    nn.init.normal_(norm.weight)
    reference = nn.RMSNorm(32, eps=1e-5)
    reference.weight.data.copy_(norm.weight.data)
    torch.testing.assert_close(norm(x), reference(x))
    ffn = SwiGLU(32, 48)
    expected = ffn.down_proj(nn.functional.silu(ffn.gate_proj(x)) * ffn.up_proj(x))
    torch.testing.assert_close(ffn(x), expected)
    with pytest.raises(ValueError, match="out of range"):
        model(torch.tensor([[20]]))


# Memory -------------------------------------------------------------------------------------


def test_training_memory_equals_real_adamw_state():
    model, idx = _gpt("fused")
    n = model.num_parameters()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(idx, idx)[1].backward()
    optimizer.step()
    memory = training_memory(n)
    assert memory.weights == sum(p.nbytes for p in model.parameters())
    assert memory.gradients == sum(p.grad.nbytes for p in model.parameters())
    moments = sum(
        s[key].nbytes for s in optimizer.state.values() for key in ("exp_avg", "exp_avg_sq")
    )
    assert memory.optimizer == moments
    assert memory.total == 16 * n
    mixed = training_memory(n, weight_bytes=2, grad_bytes=2, optimizer_bytes=12)
    assert mixed.total == 16 * n
    with pytest.raises(ValueError, match="weight_bytes"):
        training_memory(n, weight_bytes=0)


def test_kv_cache_bytes_equal_gptlib_kvcache():
    L, T, d, h, B = 32, 4096, 4096, 32, 2
    with torch.device("meta"):
        caches = [
            KVCache.empty((B, h, T, d // h), device=torch.device("meta"), dtype=torch.float16)
        ]
    per_layer = sum(t.nbytes for t in (caches[0].k, caches[0].v))
    assert L * per_layer == kv_cache_bytes(L, T, d, batch=B, bytes_per_value=2)
    assert kv_cache_bytes(32, 4096, 4096) == 2 * 2**30  # 2 GiB a sequence for Llama 2 7B
    with pytest.raises(ValueError, match="kv_width must be a positive int"):
        kv_cache_bytes(32, 4096, 0)


# Time, MFU and the calculator ---------------------------------------------------------------


def test_accelerator_hours_and_mfu_arithmetic_and_errors():
    assert accelerator_hours(3600 * 100.0, 100.0, 1.0) == pytest.approx(1.0)
    assert accelerator_hours(3600 * 100.0, 100.0, 0.5) == pytest.approx(2.0)
    assert mfu(50.0, 1.0, 100.0) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="mfu is a fraction"):
        accelerator_hours(1e20, 312e12, 40)
    with pytest.raises(ValueError, match="seconds_per_step"):
        mfu(1e9, 0.0, 1e11)


def test_measure_matmul_peak_uses_the_fastest_call(monkeypatch):
    monkeypatch.setattr(costs, "time_calls", lambda fn, **kwargs: [0.5, 0.25, 1.0])
    assert measure_matmul_peak(size=64) == pytest.approx(2 * 64**3 / 0.25)


def test_time_calls_runs_warmup_then_repeats():
    calls = []
    times = costs.time_calls(lambda: calls.append(1), repeats=3, warmup=2)
    assert len(calls) == 5 and len(times) == 3 and all(t >= 0 for t in times)
    with pytest.raises(ValueError, match="repeats"):
        costs.time_calls(lambda: None, repeats=0)


def test_cost_report_for_llama2_7b_prints_the_chapter_numbers():
    report = cost_report(LLAMA, 2e12, peak_flops=312e12, mfu=0.4)
    assert report.params.total == LLAMA_N
    assert report.accelerator_hours == pytest.approx(180_000, rel=0.001)
    lines = report.lines()
    assert "parameters N = 6,738,415,616 (6.74B)" in lines
    assert "forward FLOPs per token (2N) = 1.35e+10" in lines
    assert "attention FLOPs per token (4·L·T·d) = 2.15e+09" in lines
    assert "total training FLOPs = 8.09e+22" in lines
    assert "sustained FLOP/s (peak × MFU) = 1.25e+14" in lines
    assert "accelerator-hours = 179,979" in lines
    assert "training memory (bf16 weights and grads, fp32 Adam) = 100.4 GiB (107.8 GB)" in lines
    assert "KV cache (one sequence of T tokens, bf16) = 2 GiB (2.147 GB)" in lines
    assert "weights in bf16 (2 bytes each) = 12.55 GiB (13.48 GB)" in lines
    assert "key/value heads = 32" in lines
    assert "FFN per layer = 135,266,304 (3·d·d_ff)" in lines
    shape = ["model = Llama 2 7B", "layers L = 32", "width d = 4,096", "heads h = 32"]
    assert lines[:5] == [*shape, "head size d_h = 128"]


def test_cost_report_follows_its_inputs():
    small = cost_report(PRESETS["GPT-2 small"], 1e9, peak_flops=1e14, mfu=0.5)
    wider = cost_report(dataclasses.replace(PRESETS["GPT-2 small"], d_model=1536), 1e9, 1e14, 0.5)
    # L × (12d² weights + 9d biases): 4d + 4d (attention, MLP up) + d (MLP down)
    assert wider.params.layers == 12 * (12 * 1536**2 + 9 * 1536)
    assert small.params.layers == 12 * (12 * 768**2 + 9 * 768)
    assert small.total_training_flops == 6 * 124_439_808 * 1e9
    assert cost_report(PRESETS["GPT-2 small"], 2e9, 1e14, 0.5).accelerator_hours == pytest.approx(
        2 * small.accelerator_hours
    )
    with pytest.raises(ValueError, match="n_tokens"):
        cost_report(LLAMA, 0)


def test_calculator_report_defaults_to_the_chapters_run_and_applies_changes():
    lines = costs.calculator_report().lines()
    assert "total training FLOPs = 8.09e+22" in lines
    assert "accelerator-hours = 179,979" in lines
    half = costs.calculator_report("Llama 2 7B", n_layers=16)
    assert half.architecture.name == "Llama 2 7B (modified)"
    assert half.params.layers == 16 * (67_108_864 + 135_266_304)
    grouped = costs.calculator_report("Llama 2 7B", n_kv_heads=8)
    assert grouped.architecture.name == "Llama 2 7B (modified)"
    assert grouped.kv_cache_bytes == 2 * 2**30 // 4  # 8 key/value heads instead of 32
    assert costs.calculator_report("Llama 2 7B", n_kv_heads=32).architecture.name == "Llama 2 7B"
    with pytest.raises(ValueError, match="n_kv_heads=8 does not divide n_heads=4"):
        costs.calculator_report("Llama 3 405B", n_heads=4)
    same = costs.calculator_report("GPT-2 small", d_ff=3072, n_tokens=1e9, peak_tflops=100, mfu=0.5)
    assert same.architecture.name == "GPT-2 small"  # 4d given explicitly is no change
    assert same.accelerator_hours == pytest.approx(6 * 124_439_808 * 1e9 / (100e12 * 0.5) / 3600)
    chinchilla = costs.calculator_report("chapter GPT (characters)")
    assert chinchilla.n_tokens == 20 * 842_752
    with pytest.raises(ValueError, match="unknown preset"):
        costs.calculator_report("GPT-5")


def test_the_llama_block_exercise_agrees_with_the_per_layer_formula():
    from gptlib.lessons.engine.checks import REGISTRY

    reference = REGISTRY["llama-block-parameters"].reference
    for name in ("Llama 2 7B", "Llama 3 405B"):
        arch = PRESETS[name]
        p = parameter_counts(arch)
        per_layer = p.attention_per_layer + p.ffn_per_layer + 2 * arch.d_model  # two RMSNorms
        assert reference(arch.d_model, arch.n_heads, arch.kv_heads, arch.d_ff) == per_layer


def test_an_architecture_counts_whole_blocks_only():
    with pytest.raises(ValueError, match="counts whole blocks.*block_norms=False, mlp=True"):
        architecture_of(GPTConfig(vocab_size=10), Variant(block_norms=False))


def test_adamw_flops_per_parameter_tallies_torchs_update():
    """The update written out operation by operation matches torch's AdamW over three steps;
    its operations come to ADAMW_FLOPS_PER_PARAMETER FLOPs a parameter and step."""
    torch.manual_seed(0)
    lr, decay, (b1, b2), eps = 1e-2, 0.1, (0.9, 0.999), 1e-8
    p = torch.randn(50, dtype=torch.float64)
    param = nn.Parameter(p.clone())
    optimizer = torch.optim.AdamW([param], lr=lr, betas=(b1, b2), eps=eps, weight_decay=decay)
    m, v, flops = torch.zeros_like(p), torch.zeros_like(p), 0
    for t in (1, 2, 3):
        g = torch.randn(50, dtype=torch.float64)
        param.grad = g.clone()
        optimizer.step()
        p = p * (1 - lr * decay)  # 1 FLOP an element
        m = m + (1 - b1) * (g - m)  # 3
        v = b2 * v + (1 - b2) * (g * g)  # 4
        p = p - (lr / (1 - b1**t)) * m / (v.sqrt() / (1 - b2**t) ** 0.5 + eps)  # 6
        flops += 14
        torch.testing.assert_close(param.detach(), p, rtol=1e-12, atol=1e-12)
    assert flops / 3 == costs.ADAMW_FLOPS_PER_PARAMETER
