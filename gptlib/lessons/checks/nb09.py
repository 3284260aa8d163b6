"""Exercises of notebook 09 (cost accounting): a Llama block's parameters with grouped-query
attention, a run's GPU-hours."""

from __future__ import annotations

from collections.abc import Callable

import torch

from gptlib.lessons.checks.core import Exercise, Mistake, Property, register
from gptlib.lessons.experiments.llama_shape import LlamaBlock


def _llama_block_parameters(d_model: int, n_heads: int, n_kv_heads: int, d_ff: int) -> int:
    """Parameters of one Llama block (RMSNorms, grouped-query attention, SwiGLU, no biases),
    counted on a real module built on the meta device."""
    with torch.device("meta"):
        block = LlamaBlock(d_model, n_heads, d_ff, n_kv_heads)
    return sum(p.numel() for p in block.parameters())


def _is_whole_number(out: object, *args: int) -> str | None:
    if isinstance(out, float) and not out.is_integer():
        return f"got {out}: a parameter count is a whole number"
    return None


def _counted(
    kv_width: Callable[[int, int, int], int] = lambda d, h, kv: kv * (d // h),
    ffn_matrices: int = 3,
    norms: int = 2,
    biases: bool = False,
) -> Callable[[int, int, int, int], int]:
    """The count with one part changed: each catalogued mistake is one of these."""

    def count(d: int, h: int, kv: int, d_ff: int) -> int:
        width = kv_width(d, h, kv)
        attention = 2 * d * d + 2 * d * width + (2 * d + 2 * width if biases else 0)
        ffn = ffn_matrices * d * d_ff + ((ffn_matrices - 1) * d_ff + d if biases else 0)
        return attention + ffn + norms * d

    return count


register(
    Exercise(
        name="llama-block-parameters",
        notebook="09_cost_accounting",
        reference=_llama_block_parameters,
        # Llama 2 7B's block (32 key/value heads: plain multi-head attention), Llama 3 8B's and
        # 405B's (grouped), and a small odd one
        make_inputs=lambda g: [
            (4096, 32, 32, 11_008),
            (4096, 32, 8, 14_336),
            (16_384, 128, 8, 53_248),
            (96, 6, 2, 256),
        ],
        properties=(Property("a whole number", _is_whole_number),),
        mistakes=(
            Mistake(
                "kv-heads-ignored",
                "your count gives the key and the value matrix d × d weights each, as if every "
                "query head had a key and value head of its own. With grouped-query attention "
                "there are only n_kv_heads of them, each as wide as a query head.",
                _counted(kv_width=lambda d, h, kv: d),
                fix="W_K and W_V are d × (n_kv_heads · d_model // n_heads) each",
            ),
            Mistake(
                "kv-width-without-head-size",
                "the key and value matrices hold n_kv_heads heads of d / n_heads features each: "
                "their width is the number of key/value heads times the head size, not times "
                "the model's width.",
                _counted(kv_width=lambda d, h, kv: kv * d),
                fix="kv_width = n_kv_heads * (d_model // n_heads)",
            ),
            Mistake(
                "swiglu-with-two-matrices",
                "SwiGLU has three d × d_ff matrices, not two: a gate and an up projection side "
                "by side (their product is the hidden vector), then the down projection.",
                _counted(ffn_matrices=2),
                fix="ffn = 3 * d_model * d_ff",
            ),
            Mistake(
                "biases-counted",
                "Llama's linear layers have no biases: count the weight matrices only.",
                _counted(biases=True),
                fix="leave out every bias term: attention = 2·d·d + 2·d·kv_width",
            ),
            Mistake(
                "norms-as-layernorm",
                "an RMSNorm holds a scale of width d and no shift: the block's two norms hold "
                "2d parameters, not 4d.",
                _counted(norms=4),
                fix="norms = 2 * d_model",
            ),
            Mistake(
                "norms-left-out",
                "the two RMSNorms are missing: each holds a scale of width d. They are a "
                "rounding error at this size, but they are parameters.",
                _counted(norms=0),
                fix="norms = 2 * d_model",
            ),
        ),
        atol=0.5,
        rtol=0.0,
        hints=(
            "Count by part: four attention projections, of which the key and value ones are "
            "narrower when key/value heads are fewer than query heads; the three matrices of "
            "the SwiGLU network; the two norms. Ask of each part whether it has a bias.",
            "W_Q and W_O are d × d; W_K and W_V map d to n_kv_heads heads of d / n_heads "
            "features; SwiGLU's gate, up and down matrices each hold d · d_ff weights; an "
            "RMSNorm holds d scales and nothing else; nothing has a bias.",
        ),
    )
)


def _training_gpu_hours(n_params: float, n_tokens: float, peak_flops: float, mfu: float) -> float:
    return 6 * n_params * n_tokens / (peak_flops * mfu) / 3600


def _positive(out: object, *args: float) -> str | None:
    if isinstance(out, int | float) and out <= 0:
        return f"got {out}: a training run takes a positive number of hours"
    return None


register(
    Exercise(
        name="training-gpu-hours",
        notebook="09_cost_accounting",
        reference=_training_gpu_hours,
        make_inputs=lambda g: [
            (6_738_415_616, 2e12, 312e12, 0.4),
            (124_439_808, 1e10, 1e14, 0.5),
            (174.6e9, 300e9, 125e12, 0.3),
        ],
        properties=(Property("positive", _positive),),
        mistakes=(
            Mistake(
                "forward only",
                "2·N·D counts the forward pass only. Training also runs the backward pass, "
                "about twice the forward's work: six FLOPs per parameter and token in all.",
                lambda n, d, peak, mfu: 2 * n * d / (peak * mfu) / 3600,
                fix="flops = 6 * n_params * n_tokens",
            ),
            Mistake(
                "at peak",
                "you divided by the peak alone: a real run sustains only the fraction mfu of it.",
                lambda n, d, peak, mfu: 6 * n * d / peak / 3600,
                fix="seconds = flops / (peak_flops * mfu)",
            ),
            Mistake(
                "times mfu",
                "mfu scales the speed, not the work: the achieved rate is the peak times mfu, "
                "so a lower mfu means more hours, not fewer.",
                lambda n, d, peak, mfu: 6 * n * d / peak * mfu / 3600,
                fix="seconds = flops / (peak_flops * mfu)",
            ),
            Mistake(
                "seconds",
                "that is GPU-seconds (FLOPs divided by FLOP/s); an hour holds 3,600 of them.",
                lambda n, d, peak, mfu: 6 * n * d / (peak * mfu),
                fix="return seconds / 3600",
            ),
            Mistake(
                "days",
                "that is GPU-days: you divided by the seconds of a day, where the question asks "
                "for hours.",
                lambda n, d, peak, mfu: 6 * n * d / (peak * mfu) / 86_400,
                fix="return seconds / 3600",
            ),
        ),
        atol=0.0,
        rtol=1e-6,
        hints=(
            "Training costs about six FLOPs per parameter per token (two in the forward pass, "
            "four in the backward pass); one GPU delivers its peak rate times the utilisation "
            "you assume.",
            "All the FLOPs divided by one GPU's effective FLOP/s give GPU-seconds; divide by "
            "3600 for GPU-hours.",
        ),
    )
)
