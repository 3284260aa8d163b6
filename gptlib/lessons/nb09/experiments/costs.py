"""Counting a Transformer: parameters, FLOPs, training time and memory (notebook 09).

Everything here is arithmetic on a model's shape (`Architecture`), except the timing helpers at
the end (`time_calls`, `measure_matmul_peak`), with which the notebook measures the reader's
machine. The FLOP counts the arithmetic is checked against are the student's own measurement.

Conventions: N is a parameter count, D a number of training tokens, T a context length,
L layers, d the model width, V the vocabulary, d_ff the FFN width. FLOPs count a multiply-add
as 2 floating-point operations. Memory is in bytes; shown, it is both GiB (2³⁰ bytes, the unit
of GPU memory sizes) and GB (10⁹ bytes, the unit of "13.5 GB of weights"), each labelled.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import torch

from gptlib.lessons.shared.experiments.variants import POSITIONS, Variant
from gptlib.model import GPTConfig
from gptlib.validation import check_heads, check_positive_int

STYLES = ("gpt", "llama")
ARCHITECTURE_POSITIONS = (*POSITIONS, "rope")
A100_BF16_PEAK = 312e12  # FLOP/s, dense BF16 tensor cores (NVIDIA's datasheet)
LLAMA2_7B_REPORTED_GPU_HOURS = 184_320  # A100-80GB hours, Touvron et al. 2023, Table 2
GB = 10**9  # a gigabyte: 10⁹ bytes
GIB = 2**30  # a gibibyte: 2³⁰ = 1,073,741,824 bytes


def memory_text(n_bytes: float) -> str:
    """Bytes in both units, each labelled: 7_247_757_312 → '6.75 GiB (7.248 GB)'."""
    return f"{n_bytes / GIB:z.4g} GiB ({n_bytes / GB:z.4g} GB)"


def _check_positive(name: str, value: float) -> None:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")


@dataclass(frozen=True)
class Architecture:
    """The numbers that fix a decoder-only Transformer's size (notebook 09).

    style="gpt": LayerNorm (γ, plus β when `bias`), a GELU MLP with two matrices d × d_ff,
    biases in every linear layer when `bias`. style="llama": RMSNorm (γ only), a SwiGLU FFN
    with three matrices d × d_ff, no biases. `context` is T: the length of learned position
    tables, of the attention term and of the KV cache. d_ff defaults to 4d. `n_kv_heads`
    (grouped-query attention, chapter 1.4) gives keys and values fewer heads than queries:
    W_K and W_V become d × (n_kv_heads·d_h); None means one per query head (plain multi-head).
    """

    n_layers: int
    d_model: int
    n_heads: int
    vocab_size: int
    context: int
    d_ff: int | None = None
    n_kv_heads: int | None = None
    style: str = "gpt"
    bias: bool = True
    tie_weights: bool = False
    positions: str = "learned"
    final_norm: bool = True
    name: str = field(default="custom", compare=False)

    def __post_init__(self) -> None:
        for name in ("n_layers", "d_model", "n_heads", "vocab_size", "context"):
            check_positive_int(name, getattr(self, name))
        for name in ("d_ff", "n_kv_heads"):
            if getattr(self, name) is not None:
                check_positive_int(name, getattr(self, name))
        check_heads(self.d_model, self.n_heads)
        if self.n_heads % self.kv_heads:
            divisors = [k for k in range(1, self.n_heads + 1) if self.n_heads % k == 0]
            raise ValueError(
                f"n_kv_heads={self.n_kv_heads} does not divide n_heads={self.n_heads}: each "
                f"key/value head serves a whole group of query heads. Choose from {divisors}"
            )
        if self.style not in STYLES:
            raise ValueError(f"style must be one of {STYLES}, got {self.style!r}")
        if self.style == "llama" and self.bias:
            raise ValueError("style='llama' has no biases: pass bias=False")
        if self.positions not in ARCHITECTURE_POSITIONS:
            raise ValueError(
                f"positions must be one of {ARCHITECTURE_POSITIONS}, got {self.positions!r}"
            )

    @property
    def ffn_width(self) -> int:
        """d_ff: the FFN's hidden width (4d unless given)."""
        return 4 * self.d_model if self.d_ff is None else self.d_ff

    @property
    def head_size(self) -> int:
        """d_h = d / h."""
        return self.d_model // self.n_heads

    @property
    def kv_heads(self) -> int:
        """Heads of keys and values: n_kv_heads, or h when every query head has its own."""
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def kv_width(self) -> int:
        """Width of one token's key (and of its value) in one layer: kv_heads · d_h."""
        return self.kv_heads * self.head_size


def architecture_of(config: GPTConfig, variant: Variant | None = None) -> Architecture:
    """The `Architecture` of `build_gpt(config, variant)`: a `gptlib.GPT` (notebook 09), or a
    lesson variant with other positions or Post-LN blocks (blocks without their LayerNorms or
    their MLP are not an `Architecture`'s)."""
    variant = Variant() if variant is None else variant
    if not (variant.block_norms and variant.mlp):
        raise ValueError(
            "an Architecture counts whole blocks, with their LayerNorms and MLP; got "
            f"block_norms={variant.block_norms}, mlp={variant.mlp}"
        )
    return Architecture(
        n_layers=config.n_layers,
        d_model=config.d_model,
        n_heads=config.n_heads,
        vocab_size=config.vocab_size,
        context=config.max_len,
        style="gpt",
        bias=config.bias,
        tie_weights=config.tie_weights,
        positions=variant.positions,
        final_norm=variant.final_norm and variant.norm == "pre",  # Post-LN blocks end in one
        name="gptlib.GPT",
    )


PRESETS: dict[str, Architecture] = {
    arch.name: arch
    for arch in (
        Architecture(4, 128, 4, 65, 256, name="chapter GPT (characters)"),
        Architecture(12, 768, 12, 50_257, 1024, tie_weights=True, name="GPT-2 small"),
        Architecture(24, 1024, 16, 50_257, 1024, tie_weights=True, name="GPT-2 medium"),
        Architecture(36, 1280, 20, 50_257, 1024, tie_weights=True, name="GPT-2 large"),
        Architecture(48, 1600, 25, 50_257, 1024, tie_weights=True, name="GPT-2 XL"),
        Architecture(96, 12_288, 96, 50_257, 2048, tie_weights=True, name="GPT-3 175B"),
        Architecture(
            32,
            4096,
            32,
            32_000,
            4096,
            d_ff=11_008,
            style="llama",
            bias=False,
            positions="rope",
            name="Llama 2 7B",
        ),
        Architecture(
            126,
            16_384,
            128,
            128_256,
            8192,
            d_ff=53_248,
            n_kv_heads=8,
            style="llama",
            bias=False,
            positions="rope",
            name="Llama 3 405B",
        ),
    )
}
"""Named shapes, as published. GPT-2 (Radford et al. 2019) and GPT-3 (Brown et al. 2020, Table
2.1) tie the unembedding to the token embedding. Llama 2 7B: Touvron et al. 2023. Llama 3 405B:
Dubey et al. 2024 ("The Llama 3 Herd of Models", Table 3: 126 layers, d = 16,384, d_ff =
53,248, 128 query heads, 8 key/value heads), with the 128,256-token vocabulary and untied
output layer of the released model's configuration and the 8,192-token pre-training context."""

PRESET_TRAINING_TOKENS: dict[str, float] = {
    "GPT-3 175B": 300e9,
    "Llama 2 7B": 2e12,
    "Llama 3 405B": 15.6e12,
}
"""Tokens the published runs trained on (Brown et al. 2020; Touvron et al. 2023; Dubey et al.
2024)."""


@dataclass(frozen=True)
class ParameterRow:
    """One line of a parameter table: what, by which formula, how many."""

    component: str
    formula: str
    count: int


@dataclass(frozen=True)
class ParameterCounts:
    """Parameters of an `Architecture`, by component (notebook 09).

    `layers` is L × (attention + FFN), as in the chapter's table; norms, embeddings and the
    position table are counted apart. `matmul_weights` are the parameters that take part in one
    multiply-add per token: every weight matrix, the unembedding included even when it is tied.
    Embedding rows are looked up, not multiplied, and norms and biases only scale and add, so
    2 × matmul_weights is exactly the forward matmul FLOPs per token outside attention.
    """

    n_layers: int
    attention_per_layer: int
    ffn_per_layer: int
    layers: int
    embeddings: int
    positions: int
    norms: int
    matmul_weights: int
    attention_formula: str
    ffn_formula: str
    embeddings_label: str
    embeddings_formula: str
    norms_formula: str

    @property
    def total(self) -> int:
        return self.layers + self.embeddings + self.positions + self.norms

    def rows(self) -> list[ParameterRow]:
        """The chapter's table: (component, formula, count) rows, the total last."""
        rows = [
            ParameterRow(
                "attention per layer (W_Q, W_K, W_V, W_O)",
                self.attention_formula,
                self.attention_per_layer,
            ),
            ParameterRow("FFN per layer", self.ffn_formula, self.ffn_per_layer),
            ParameterRow(f"all {self.n_layers} layers", "L × (attention + FFN)", self.layers),
            ParameterRow(self.embeddings_label, self.embeddings_formula, self.embeddings),
        ]
        if self.positions:
            rows.append(ParameterRow("position embedding (learned)", "T·d", self.positions))
        rows.append(ParameterRow("norm weights", self.norms_formula, self.norms))
        rows.append(ParameterRow("total", "", self.total))
        return rows


def parameter_counts(arch: Architecture) -> ParameterCounts:
    """Count an `Architecture`'s parameters component by component (notebook 09).

    GPT style, per layer: attention 4d² (+ 4d biases), MLP 2·d·d_ff (+ d_ff + d biases), two
    LayerNorms of d weights (+ d biases each). Llama style: attention 4d², SwiGLU 3·d·d_ff,
    two RMSNorms of d weights. With fewer key/value heads (n_kv_heads) attention holds
    2d² + 2·d·(n_kv_heads·d_h). Then V·d for the token embedding, V·d more for an untied
    unembedding, T·d for learned positions and one final norm.
    """
    L, d, V, d_ff = arch.n_layers, arch.d_model, arch.vocab_size, arch.ffn_width
    n_ffn_matrices = 3 if arch.style == "llama" else 2
    grouped = arch.kv_heads != arch.n_heads
    attention_weights = 2 * d * d + 2 * d * arch.kv_width
    ffn_weights = n_ffn_matrices * d * d_ff
    attention, ffn = attention_weights, ffn_weights
    attention_formula = "2d² + 2·d·n_kv·d_h" if grouped else "4d²"
    ffn_formula = f"{n_ffn_matrices}·d·d_ff"
    if arch.bias:
        attention, ffn = attention + 2 * d + 2 * arch.kv_width, ffn + d_ff + d
        attention_formula += " + 2d + 2·n_kv·d_h" if grouped else " + 4d"
        ffn_formula += " + d_ff + d"
    per_norm = 2 * d if arch.style == "gpt" and arch.bias else d
    norm_symbol = "2d" if per_norm == 2 * d else "d"
    norms = (2 * L + arch.final_norm) * per_norm
    norms_formula = f"2·{norm_symbol}·L" + (f" + {norm_symbol}" if arch.final_norm else "")
    if arch.tie_weights:
        label, embeddings, formula = "token embedding (tied with the output layer)", V * d, "Vd"
    else:
        label, embeddings, formula = "input embedding + output layer (untied)", 2 * V * d, "2Vd"
    return ParameterCounts(
        n_layers=L,
        attention_per_layer=attention,
        ffn_per_layer=ffn,
        layers=L * (attention + ffn),
        embeddings=embeddings,
        positions=arch.context * d if arch.positions == "learned" else 0,
        norms=norms,
        matmul_weights=L * (attention_weights + ffn_weights) + V * d,
        attention_formula=attention_formula,
        ffn_formula=ffn_formula,
        embeddings_label=label,
        embeddings_formula=formula,
        norms_formula=norms_formula,
    )


def gpt_layers_approximation(n_layers: int, d_model: int) -> int:
    """12·L·d²: a GPT block's 4d² attention plus 8d² MLP weights, times L (no embeddings)."""
    return 12 * n_layers * d_model**2


# FLOPs ------------------------------------------------------------------------------------


def attention_flops_per_token(
    n_layers: int, context: int, d_model: int, causal: bool = False
) -> int:
    """Forward FLOPs per token of the attention scores QKᵀ and the mix AV: 4·L·T·d.

    Per layer and token, q·k against T keys costs 2·T·d and weighting T values another 2·T·d.
    With `causal=True` only the unmasked half of the T × T square is computed (as fused
    kernels do): 2·L·T·d. The written-out math path computes the whole square.
    """
    full = 4 * n_layers * context * d_model
    return full // 2 if causal else full


def model_flops_per_token(
    n_params: int, n_layers: int, context: int, d_model: int, training: bool = True
) -> int:
    """FLOPs a model's math needs per token, attention included: 6N + 3·4LTd when training
    (backward costs twice the forward, attention too), 2N + 4LTd for a forward pass.

    This is the numerator of MFU (model FLOPs utilisation, Chowdhery et al. 2022, app. B).
    """
    attention = attention_flops_per_token(n_layers, context, d_model)
    return 6 * n_params + 3 * attention if training else 2 * n_params + attention


@dataclass(frozen=True)
class AttentionShare:
    """The attention term over the weights' forward FLOPs, 4·L·T·d / 2N, as T grows (notebook
    09). `crossing` is the context at which the two are equal: T = 2N / (4·L·d)."""

    name: str
    contexts: tuple[int, ...]
    ratios: tuple[float, ...]
    crossing: float

    def ratio_at(self, context: int) -> float:
        """The ratio at one of `contexts`."""
        if context not in self.contexts:
            raise ValueError(f"context {context} was not computed; choose from {self.contexts}")
        return self.ratios[self.contexts.index(context)]

    def lines(self) -> list[str]:
        """The ratio at each context and the crossing, as `name = value` lines."""
        return [
            *(
                f"{self.name}, attention / 2N at {t:,} tokens = {r:z.3g}"
                for t, r in zip(self.contexts, self.ratios, strict=True)
            ),
            f"{self.name}, context where attention equals 2N = {self.crossing:z,.0f} tokens",
        ]


def attention_share(arch: Architecture, contexts: Sequence[int]) -> AttentionShare:
    """4·L·T·d / 2N of `arch` at each context T in `contexts` (its own `context` is ignored).

    Linear in T: the weights' FLOPs do not depend on the context, the attention term does.
    """
    if not contexts:
        raise ValueError("give at least one context length, e.g. [512, 4096]")
    for t in contexts:
        check_positive_int("context", t)
    two_n = 2 * parameter_counts(arch).total
    ratios = tuple(
        attention_flops_per_token(arch.n_layers, t, arch.d_model) / two_n for t in contexts
    )
    return AttentionShare(
        arch.name, tuple(contexts), ratios, two_n / (4 * arch.n_layers * arch.d_model)
    )


def accelerator_hours(total_flops: float, peak_flops: float, mfu: float) -> float:
    """Hours one accelerator needs for `total_flops` at `peak_flops` (FLOP/s) × `mfu`.

    `mfu` is the fraction of the peak that the run sustains (0.4 is a realistic 40%).
    """
    _check_positive("total_flops", total_flops)
    _check_positive("peak_flops", peak_flops)
    if not 0 < mfu <= 1:
        raise ValueError(f"mfu is a fraction of the peak in (0, 1], got {mfu!r} (40% is 0.4)")
    return total_flops / (peak_flops * mfu) / 3600


def mfu(flops_per_step: float, seconds_per_step: float, peak_flops: float) -> float:
    """Model FLOPs utilisation: achieved FLOP/s (flops_per_step / seconds) over the peak."""
    _check_positive("flops_per_step", flops_per_step)
    _check_positive("seconds_per_step", seconds_per_step)
    _check_positive("peak_flops", peak_flops)
    return flops_per_step / seconds_per_step / peak_flops


# AdamW's update of one parameter, in FLOPs per step (torch.optim.AdamW's algorithm; its bias
# corrections are scalars, computed once a step): decay p·(1 − ηλ): 1; first moment
# m + (1 − β1)·(g − m): 3; second moment β2·v + (1 − β2)·g²: 4; step
# p − (η / (1 − β1ᵗ))·m / (√v / √(1 − β2ᵗ) + ε): 6.
ADAMW_FLOPS_PER_PARAMETER = 14


# Memory -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainingMemory:
    """Bytes held for training with Adam: weights, gradients, optimizer state (no activations)."""

    weights: int
    gradients: int
    optimizer: int

    @property
    def total(self) -> int:
        return self.weights + self.gradients + self.optimizer


def training_memory(
    n_params: int, weight_bytes: int = 4, grad_bytes: int = 4, optimizer_bytes: int = 8
) -> TrainingMemory:
    """Weights, gradients and Adam state of `n_params` parameters, in bytes.

    Defaults are fp32 throughout: Adam keeps two fp32 moments (8 bytes a parameter). For BF16
    mixed precision pass weight_bytes=2, grad_bytes=2, optimizer_bytes=12 (moments plus an
    fp32 master copy): 16 bytes a parameter either way. Activations come on top.
    """
    for name, value in (
        ("n_params", n_params),
        ("weight_bytes", weight_bytes),
        ("grad_bytes", grad_bytes),
        ("optimizer_bytes", optimizer_bytes),
    ):
        check_positive_int(name, value)
    return TrainingMemory(
        n_params * weight_bytes, n_params * grad_bytes, n_params * optimizer_bytes
    )


def kv_cache_bytes(
    n_layers: int, context: int, kv_width: int, batch: int = 1, bytes_per_value: int = 2
) -> int:
    """Bytes of the KV cache: a key and a value vector per layer, token and sequence.

    2·L·T·kv_width·B values. `kv_width` is d for multi-head attention (every head keeps its
    keys) and n_kv_heads·d_h with grouped-query attention (`Architecture.kv_width`).
    `bytes_per_value`: 2 for fp16/bf16, 4 for fp32.
    """
    for name, value in (
        ("n_layers", n_layers),
        ("context", context),
        ("kv_width", kv_width),
        ("batch", batch),
        ("bytes_per_value", bytes_per_value),
    ):
        check_positive_int(name, value)
    return 2 * n_layers * context * kv_width * batch * bytes_per_value


# The cost calculator ----------------------------------------------------------------------


def _count(n: float) -> str:
    """6738415616 → '6.74B', 842752 → '0.84M'."""
    return f"{n / 1e9:z.2f}B" if n >= 1e9 else f"{n / 1e6:z.2f}M"


@dataclass(frozen=True)
class CostReport:
    """Everything the cost calculator shows for one architecture and training run (notebook 09).

    Memory assumes BF16 mixed precision (16 bytes a parameter with Adam); the KV cache is for
    one sequence of T tokens in BF16. Memory lines give GiB and GB (`memory_text`).
    """

    architecture: Architecture
    params: ParameterCounts
    n_tokens: float
    peak_flops: float
    mfu: float
    forward_flops_per_token: int
    attention_flops_per_token: int
    training_flops_per_token: int
    total_training_flops: float
    accelerator_hours: float
    memory: TrainingMemory
    kv_cache_bytes: int

    def lines(self) -> list[str]:
        """The report as `name = value` lines: the shape, the parameter table, then the bill.

        The names stay fixed whatever the inputs (units sit in the names, notes after the
        value), so a test finds `total training FLOPs = 8.09e+22` by its name.
        """
        a, p = self.architecture, self.params
        h = self.accelerator_hours
        table = [f"{r.component} = {r.count:,} ({r.formula})" for r in p.rows()[:-1]]
        return [
            f"model = {a.name}",
            f"layers L = {a.n_layers}",
            f"width d = {a.d_model:,}",
            f"heads h = {a.n_heads}",
            f"head size d_h = {a.head_size}",
            f"key/value heads = {a.kv_heads}",
            f"vocabulary V = {a.vocab_size:,}",
            f"context T = {a.context:,}",
            f"FFN width d_ff = {a.ffn_width:,}",
            *table,
            f"parameters N = {p.total:,} ({_count(p.total)})",
            f"weights in bf16 (2 bytes each) = {memory_text(2 * p.total)}",
            f"forward FLOPs per token (2N) = {self.forward_flops_per_token:z.3g}",
            f"attention FLOPs per token (4·L·T·d) = {self.attention_flops_per_token:z.3g}",
            f"training FLOPs per token (6N) = {self.training_flops_per_token:z.3g}",
            f"training tokens D = {self.n_tokens:z.3g}",
            f"total training FLOPs = {self.total_training_flops:z.3g}",
            f"sustained FLOP/s (peak × MFU) = {self.peak_flops * self.mfu:z.3g}",
            f"accelerator-hours = {h:z,.0f}" if h >= 100 else f"accelerator-hours = {h:z.3g}",
            "training memory (bf16 weights and grads, fp32 Adam) = "
            f"{memory_text(self.memory.total)}",
            f"KV cache (one sequence of T tokens, bf16) = {memory_text(self.kv_cache_bytes)}",
        ]


def cost_report(
    arch: Architecture, n_tokens: float, peak_flops: float = A100_BF16_PEAK, mfu: float = 0.4
) -> CostReport:
    """Parameters, FLOPs, accelerator-hours and memory of training `arch` on `n_tokens` tokens
    with accelerators of `peak_flops` FLOP/s sustaining a fraction `mfu` of it (notebook 09).

    The pure function behind the cost-calculator widget.
    """
    _check_positive("n_tokens", n_tokens)
    params = parameter_counts(arch)
    n = params.total
    total = 6 * n * n_tokens  # 6·N·D: attention left out, as in the chapter
    return CostReport(
        architecture=arch,
        params=params,
        n_tokens=n_tokens,
        peak_flops=peak_flops,
        mfu=mfu,
        forward_flops_per_token=2 * n,
        attention_flops_per_token=attention_flops_per_token(
            arch.n_layers, arch.context, arch.d_model
        ),
        training_flops_per_token=6 * n,
        total_training_flops=total,
        accelerator_hours=accelerator_hours(total, peak_flops, mfu),
        memory=training_memory(n, weight_bytes=2, grad_bytes=2, optimizer_bytes=12),
        kv_cache_bytes=kv_cache_bytes(arch.n_layers, arch.context, arch.kv_width),
    )


def calculator_report(
    preset: str = "Llama 2 7B",
    *,
    n_layers: int | None = None,
    d_model: int | None = None,
    n_heads: int | None = None,
    vocab_size: int | None = None,
    context: int | None = None,
    d_ff: int | None = None,
    n_kv_heads: int | None = None,
    n_tokens: float | None = None,
    peak_tflops: float = A100_BF16_PEAK / 1e12,
    mfu: float = 0.4,
) -> CostReport:
    """The cost calculator's state as a pure function (notebook 09's widget).

    Starts from `PRESETS[preset]` (style, biases, tying and positions come from it) and
    replaces the shape numbers that are given. `n_kv_heads` must divide the number of heads
    (the preset's, or `n_heads`). `n_tokens` defaults to the published run's tokens for GPT-3
    and the Llamas, else to 20 tokens a parameter (the compute-optimal ratio of Hoffmann et al.
    2022). The peak is in TFLOP/s, `mfu` a fraction of it.
    """
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose one of {list(PRESETS)}")
    base = PRESETS[preset]
    changes = {
        name: value
        for name, value in (
            ("n_layers", n_layers),
            ("d_model", d_model),
            ("n_heads", n_heads),
            ("vocab_size", vocab_size),
            ("context", context),
            ("d_ff", d_ff),
            ("n_kv_heads", n_kv_heads),
        )
        if value is not None
    }
    arch = replace(base, **changes)
    shape = ("n_layers", "d_model", "n_heads", "vocab_size", "context", "ffn_width", "kv_heads")
    if any(getattr(arch, name) != getattr(base, name) for name in shape):
        arch = replace(arch, name=f"{preset} (modified)")
    if n_tokens is None:
        n_tokens = PRESET_TRAINING_TOKENS.get(preset, 20 * parameter_counts(arch).total)
    _check_positive("peak_tflops", peak_tflops)
    return cost_report(arch, n_tokens, peak_flops=peak_tflops * 1e12, mfu=mfu)


# Measuring --------------------------------------------------------------------------------


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def time_calls(
    fn: Callable[[], object],
    repeats: int = 5,
    warmup: int = 1,
    device: torch.device | str = "cpu",
) -> list[float]:
    """Seconds taken by each of `repeats` calls of `fn()`, after `warmup` untimed calls.

    Waits for the accelerator to finish (cuda, mps) before reading the clock.
    """
    check_positive_int("repeats", repeats)
    check_positive_int("warmup", warmup, minimum=0)
    device = torch.device(device)
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        _synchronize(device)
        start = time.perf_counter()
        fn()
        _synchronize(device)
        times.append(time.perf_counter() - start)
    return times


def measure_matmul_peak(
    size: int = 1024,
    repeats: int = 10,
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float32,
) -> float:
    """This machine's matmul FLOP/s: 2·size³ over the fastest of `repeats` square products.

    The best run approximates the peak that a large, well-shaped matmul reaches; use it as
    the denominator of MFU on machines without a datasheet figure.
    """
    check_positive_int("size", size)
    generator = torch.Generator().manual_seed(0)
    a = torch.randn(size, size, generator=generator).to(device=device, dtype=dtype)
    b = torch.randn(size, size, generator=generator).to(device=device, dtype=dtype)
    fastest = min(time_calls(lambda: a @ b, repeats=repeats, warmup=2, device=device))
    return 2 * size**3 / fastest


def median_seconds(times: list[float]) -> float:
    """The median of a list of timings: robust to a stray slow call on a busy machine."""
    if not times:
        raise ValueError("median_seconds needs at least one timing")
    return statistics.median(times)
