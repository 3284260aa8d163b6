"""Experiments of notebook 05: where a block's parameters live, the MLP's nonlinearity, deep
stacks with and without residual connections (measured by the functions handed in), and the
residual stream's writes.

Shapes: B batch, T positions, d model width, L blocks.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from gptlib.hooks import capture_inputs, capture_outputs, evaluating
from gptlib.lessons.shared.experiments.variants import Variant, build_gpt
from gptlib.model import GPT, Block, GPTConfig
from gptlib.validation import check_heads, check_positive_int

ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "ReLU": F.relu,  # the original Transformer
    "GELU": F.gelu,  # GPT-2 (exact erf form)
    "SiLU": F.silu,  # the gate inside SwiGLU (modern LLMs)
}


def _count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def block_parameter_counts(d_model: int, n_heads: int = 4, bias: bool = True) -> dict[str, int]:
    """Parameters of one gptlib `Block`, counted from its real modules: attention, MLP, norms.

    The block is built on the meta device (shapes only, no memory), so any width is cheap.
    """
    check_positive_int("d_model", d_model)
    check_positive_int("n_heads", n_heads)
    check_heads(d_model, n_heads)
    with torch.device("meta"):
        block = Block(d_model, n_heads, bias=bias)
    return {
        "attention": _count(block.attn),
        "mlp": _count(block.mlp),
        "layer norms": _count(block.ln1) + _count(block.ln2),
    }


def activation_values_and_slopes(
    x: torch.Tensor,
) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """For each activation in `ACTIVATIONS`: (φ(x), φ'(x)), both shaped like x [N].

    The slopes come from autograd, so they are the derivatives backpropagation really uses.
    """
    result = {}
    for name, phi in ACTIVATIONS.items():
        xs = x.detach().clone().requires_grad_(True)
        y = phi(xs)
        (slope,) = torch.autograd.grad(y.sum(), xs)
        result[name] = (y.detach(), slope)
    return result


def gelu_gain() -> float:
    """1 / √E[GELU(z)²] for z ~ N(0, 1), about 1.53: the gain that undoes GELU's shrinkage.

    GELU keeps about 0.425 of a unit-variance input's second moment (ReLU keeps 0.5, hence He's
    gain √2). Computed by integrating against the normal density on a fine grid, in float64.
    """
    z = torch.linspace(-12.0, 12.0, 240_001, dtype=torch.float64)
    density = torch.exp(-0.5 * z**2) / math.sqrt(2 * math.pi)
    second_moment = torch.trapezoid(F.gelu(z) ** 2 * density, z)
    return float(second_moment.rsqrt())


def deep_stack(
    n_layers: int,
    residual: bool,
    layer_norm: bool = True,
    init: Callable[[GPT], object] | None = None,
    d_model: int = 64,
    n_heads: int = 4,
    block_size: int = 32,
    vocab_size: int = 65,
    seed: int = 0,
    mlp: Callable[[int], nn.Module] | None = None,
    final_norm: bool = True,
) -> GPT:
    """A float64 GPT whose blocks keep or drop their skip connections (a lesson variant,
    `gptlib.lessons.shared.experiments.variants`), with GPT-2's initialisation unless `init(model)`
    re-initialises it in place.

    `layer_norm=False` makes each block's two LayerNorms the identity, leaving the residual
    connection as the only difference between `residual=True` and `False`. The final
    LayerNorm before the unembedding stays unless `final_norm=False` makes it the identity too.
    float64 so that gradients far below float32's smallest positive number (about 1.4e-45) are
    measured rather than rounded to 0.

    `mlp(d_model)` (notebook 05's `MLP` class) builds the module that replaces each block's MLP,
    loaded with that MLP's weights (its layers named `up` and `down`, as gptlib's): the same
    stack, run by another MLP. `init` runs after the swap, on the new modules, drawing what it
    would draw without it.
    """
    torch.manual_seed(seed)
    config = GPTConfig(
        vocab_size=vocab_size,
        d_model=d_model,
        n_heads=n_heads,
        n_layers=n_layers,
        max_len=block_size,
    )
    model = build_gpt(config, Variant(residual=residual, block_norms=layer_norm))
    if mlp is not None:
        with torch.random.fork_rng(devices=[]):  # building it draws nothing `init` will draw
            for block in model.blocks:
                own = mlp(d_model)
                own.load_state_dict(block.mlp.state_dict())
                block.mlp = own
    if not final_norm:
        model.ln_f = nn.Identity()
    if init is not None:
        init(model)
    return model.double()


def stack_lines(model: GPT) -> list[str]:
    """What a GPT's stack is made of, as `name = value` lines: depth, width and heads, the MLP's
    widths, and the standard deviation of each kind of weight: the embedding tables, each
    linear layer of a block (pooled over the blocks) and the unembedding."""
    config = model.config
    mlp_layers = [m for m in model.blocks[0].mlp.modules() if isinstance(m, nn.Linear)]
    widths = [mlp_layers[0].in_features] + [m.out_features for m in mlp_layers]
    pooled: dict[str, list[torch.Tensor]] = {}
    tables = []
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear | nn.Embedding):
            kind = ".".join(name.split(".")[-2:]) if name.startswith("blocks.") else name
            pooled.setdefault(kind, []).append(module.weight.detach().flatten())
            tables += [kind] if isinstance(module, nn.Embedding) else []
    std = {kind: f"{float(torch.cat(weights).std()):z.2g}" for kind, weights in pooled.items()}
    in_blocks = [kind for kind in std if "." in kind]
    return [
        f"blocks = {len(model.blocks)}",
        f"d = {config.d_model} ({config.n_heads} heads)",
        f"MLP widths = {' -> '.join(str(w) for w in widths)}",
        "embedding std = " + ", ".join(f"{k} {std[k]}" for k in tables),
        "weight std in every block = " + ", ".join(f"{k} {std[k]}" for k in in_blocks),
        f"unembedding weight std = {std['lm_head']}",
    ]


@dataclass(frozen=True)
class GradientFlow:
    """What one backward pass through a deep stack shows (notebook 05).

    grad_norms [L]: each block's gradient norm, as the measuring function returned it.
    stream_norms [L]: mean per-token norm |x| of each block's output.
    outputs [L, B, T, d]: each block's output, every token's vector divided by its largest
    entry (directions kept: a cosine is the same; sizes down to 1e-118 become comparable).
    errors [L]: mean per-token norm of ∂loss/∂(block output), the back-propagated error.
    weight_grads, bias_grads [L]: the gradient norm of each block's weight matrices alone and
    of its biases alone (a weight's gradient sums δ·aᵀ over tokens, a bias's only δ).
    final_norm_gain: mean over tokens of |ln_f(x)| / |x − mean(x)|, what the final LayerNorm
    multiplies the (centred) stream by; 1/√ε when the stream's variance is far below ε.
    """

    grad_norms: torch.Tensor
    stream_norms: torch.Tensor
    outputs: torch.Tensor
    errors: torch.Tensor
    weight_grads: torch.Tensor
    bias_grads: torch.Tensor
    final_norm_gain: float


GradNorms = Callable[[GPT, torch.Tensor, torch.Tensor], torch.Tensor]


def gradient_flow(
    n_layers: int,
    residual: bool,
    grad_norms: GradNorms,
    layer_norm: bool = True,
    init: Callable[[GPT], object] | None = None,
    batch_size: int = 8,
    block_size: int = 32,
    d_model: int = 64,
    seed: int = 0,
    mlp: Callable[[int], nn.Module] | None = None,
    final_norm: bool = True,
) -> GradientFlow:
    """One forward and backward pass of `deep_stack` (each block's MLP built by `mlp` if given,
    the final LayerNorm kept unless `final_norm=False`)
    on random tokens, measured by `grad_norms(model, inputs, targets)` (per-block gradient norms
    [L]: notebook 05 hands in `loss_gradient_norms`), with each block's output recorded on the
    way. A second pass of its own splits each block's gradient into weights and biases and
    measures the error reaching each block's output and the final LayerNorm's gain."""
    if n_layers < 1 or block_size < 2:
        raise ValueError(f"need n_layers >= 1 and block_size >= 2, got {n_layers}, {block_size}")
    model = deep_stack(
        n_layers,
        residual,
        layer_norm,
        init,
        d_model=d_model,
        block_size=block_size,
        seed=seed,
        mlp=mlp,
        final_norm=final_norm,
    )
    generator = torch.Generator().manual_seed(seed)
    V = model.config.vocab_size
    inputs = torch.randint(0, V, (batch_size, block_size), generator=generator)
    targets = torch.randint(0, V, (batch_size, block_size), generator=generator)
    with capture_outputs(model.blocks) as captured:
        norms = grad_norms(model, inputs, targets)
    outputs = torch.stack(captured[:n_layers])  # [L, B, T, d]; the first forward pass's
    largest = outputs.abs().amax(dim=-1, keepdim=True).clamp_min(torch.finfo(outputs.dtype).tiny)
    errors, weights, biases, gain = _split_gradients(model, inputs, targets)
    return GradientFlow(
        norms.detach(),
        outputs.norm(dim=-1).mean(dim=(1, 2)),
        outputs / largest,
        errors,
        weights,
        biases,
        gain,
    )


def _split_gradients(
    model: GPT, inputs: torch.Tensor, targets: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, float]:
    """(errors [L], weight_grads [L], bias_grads [L], final_norm_gain) of `GradientFlow`, from
    one forward and backward pass of `model` on inputs and targets [B, T]."""
    model.zero_grad(set_to_none=True)
    outputs: list[torch.Tensor] = []  # kept attached, to take the loss's gradient at each
    handles = [
        b.register_forward_hook(lambda _m, _a, out: outputs.append(out)) for b in model.blocks
    ]
    try:
        with capture_inputs([model.ln_f]) as stream:
            _, loss = model(inputs, targets)
    finally:
        for handle in handles:
            handle.remove()
    errors = torch.autograd.grad(loss, outputs, retain_graph=True)
    loss.backward()
    errors = torch.stack([e.norm(dim=-1).mean() for e in errors])

    def norm_of(block: nn.Module, kind: str) -> torch.Tensor:
        grads = [p.grad for name, p in block.named_parameters() if name.endswith(kind)]
        return torch.stack([g.double().pow(2).sum() for g in grads]).sum().sqrt()

    weights = torch.stack([norm_of(block, ".weight") for block in model.blocks])
    biases = torch.stack([norm_of(block, ".bias") for block in model.blocks])
    model.zero_grad(set_to_none=True)
    with torch.no_grad():
        x = stream[0]
        centred = x - x.mean(dim=-1, keepdim=True)
        gain = (model.ln_f(x).norm(dim=-1) / centred.norm(dim=-1)).mean()
    return errors.detach(), weights, biases, float(gain)


@dataclass(frozen=True)
class StreamWrites:
    """The residual stream of a Pre-LN GPT, taken apart (notebook 05).

    embedding [B, T, d]: token + position vectors, the stream's start.
    updates [2L, B, T, d]: what each sublayer adds (attention of block 1, its MLP, block 2, ...).
    final [B, T, d]: the stream after the last block (before the final LayerNorm).
    relative [2L]: mean over tokens of |update| / |stream just before it|.
    names [2L]: "attn 1", "mlp 1", "attn 2", ...
    """

    embedding: torch.Tensor
    updates: torch.Tensor
    final: torch.Tensor
    relative: torch.Tensor
    names: tuple[str, ...]


@torch.no_grad()
def residual_stream_writes(model: GPT, idx: torch.Tensor) -> StreamWrites:
    """Record every write into the residual stream of a Pre-LN `model` on token ids idx [B, T]."""
    rewired = [i for i, block in enumerate(model.blocks) if type(block) is not Block]
    if rewired:
        raise ValueError(
            "residual_stream_writes needs gptlib's own Pre-LN blocks, with their residual "
            f"connections; blocks {rewired} are rewired lesson variants. Build the model with "
            "gptlib.GPT(config)"
        )
    names = tuple(
        f"{kind} {i}" for i in range(1, len(model.blocks) + 1) for kind in ("attn", "mlp")
    )
    sublayers = [layer for block in model.blocks for layer in (block.attn, block.mlp)]
    with (
        evaluating(model),
        capture_inputs(model.blocks[:1]) as embedding,
        capture_outputs(sublayers) as writes,
        capture_outputs(model.blocks[-1:]) as final,
    ):
        model(idx)
    updates = torch.stack(writes)  # [2L, B, T, d], in call order: attn 1, mlp 1, attn 2, ...
    before = embedding[0] + updates.cumsum(dim=0) - updates  # the stream before each write
    relative = (updates.norm(dim=-1) / before.norm(dim=-1)).mean(dim=(1, 2))
    return StreamWrites(embedding[0], updates, final[0], relative, names)
