"""Exercises of notebook 09 (cost accounting): a GPT block's parameters, a run's GPU-hours."""

from __future__ import annotations

import torch

from gptlib.blocks import Block
from gptlib.lessons.checks.core import Exercise, Mistake, Property, register


def _block_parameters(d_model: int) -> int:
    """Parameters of one Pre-LN GPT block of width d with biases, counted on a real module."""
    with torch.device("meta"):
        block = Block(d_model, n_heads=1)
    return sum(p.numel() for p in block.parameters())


def _is_whole_number(out: object, d_model: int) -> str | None:
    if isinstance(out, float) and not out.is_integer():
        return f"got {out} for d={d_model}: a parameter count is a whole number"
    return None


register(
    Exercise(
        name="gpt-block-parameters",
        notebook="09_cost_accounting",
        reference=_block_parameters,
        make_inputs=lambda g: [(64,), (128,), (768,)],
        properties=(Property("a whole number", _is_whole_number),),
        mistakes=(
            Mistake(
                "weights only",
                "you counted the weight matrices (12d²) but not the biases and LayerNorms: add "
                "4d of attention biases, d_ff + d = 5d of MLP biases and 2 × 2d for the two "
                "LayerNorms' γ and β.",
                lambda d: 12 * d * d,
            ),
            Mistake(
                "no layer norms",
                "the two LayerNorms are missing: each holds γ and β, 2d parameters, so add 4d.",
                lambda d: 12 * d * d + 9 * d,
            ),
            Mistake(
                "layer norms without beta",
                "each LayerNorm holds a shift β as well as a scale γ: 2d parameters, not d.",
                lambda d: 12 * d * d + 11 * d,
            ),
            Mistake(
                "mlp as 4d squared",
                "the MLP has two matrices, d × 4d and 4d × d: 8d² weights, not 4d².",
                lambda d: 8 * d * d + 13 * d,
            ),
            Mistake(
                "no output projection",
                "attention has four d × d matrices: W_Q, W_K, W_V and the output projection "
                "W_O, 4d² (and 4d biases).",
                lambda d: 11 * d * d + 12 * d,
            ),
            Mistake(
                "mlp biases 2d",
                "the MLP's first bias has one entry per hidden unit, d_ff = 4d, and the second "
                "d: 5d MLP biases, not 2d.",
                lambda d: 12 * d * d + 10 * d,
            ),
        ),
        atol=0.5,
        rtol=0.0,
        hints=(
            "Count by part: the attention's projections, the MLP's two layers and the two "
            "LayerNorms, each with its weights and its biases.",
            "The fused qkv is one layer d → 3d and the output projection d → d; the MLP's "
            "layers are d → 4d and 4d → d; a layer from m to n features has m·n weights and n "
            "biases, and a LayerNorm has a γ and a β of width d.",
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
                "2·N·D counts the forward pass only; training also runs the backward pass (4N a "
                "token): use 6·N·D FLOPs.",
                lambda n, d, peak, mfu: 2 * n * d / (peak * mfu) / 3600,
            ),
            Mistake(
                "at peak",
                "you divided by the peak alone: a real run sustains only the fraction mfu of "
                "it, so divide by peak_flops × mfu.",
                lambda n, d, peak, mfu: 6 * n * d / peak / 3600,
            ),
            Mistake(
                "times mfu",
                "mfu scales the speed, not the work: the achieved rate is peak_flops × mfu "
                "FLOP/s, so divide by it (a lower mfu means more hours, not fewer).",
                lambda n, d, peak, mfu: 6 * n * d / peak * mfu / 3600,
            ),
            Mistake(
                "seconds",
                "that is GPU-seconds (FLOPs ÷ FLOP/s); divide by 3600 for hours.",
                lambda n, d, peak, mfu: 6 * n * d / (peak * mfu),
            ),
            Mistake(
                "days",
                "that is GPU-days; an hour is 3600 seconds (divide by 3600, not 86,400).",
                lambda n, d, peak, mfu: 6 * n * d / (peak * mfu) / 86_400,
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
