"""Exercises of notebook 09 (cost accounting): a Llama block's parameters with grouped-query
attention, the FLOPs per token PyTorch counts in a model's forward and training passes, a run's
GPU-hours."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from gptlib.lessons.engine.checks.core import Exercise, Mistake, Property, register
from gptlib.lessons.engine.checks.delegation import Route
from gptlib.lessons.nb09.experiments.llama_shape import LlamaBlock
from gptlib.lessons.shared.experiments.variants import Variant, build_gpt
from gptlib.model import GPT, GPTConfig


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


def _llama_inputs(g: torch.Generator) -> list[tuple]:
    """(d_model, n_heads, n_kv_heads, d_ff): Llama 2 7B's block (32 key/value heads: plain
    multi-head attention), Llama 3 8B's and 405B's (grouped), a small odd one, and one drawn
    from `g` (so that grading's hidden inputs differ from these)."""
    heads = 2 ** int(torch.randint(1, 6, (1,), generator=g))
    kv_heads = heads // 2 ** int(torch.randint(0, 2, (1,), generator=g))
    d = heads * 16 * int(torch.randint(1, 9, (1,), generator=g))
    drawn = (d, heads, kv_heads, 32 * int(torch.randint(2, 40, (1,), generator=g)))
    return [
        (4096, 32, 32, 11_008),
        (4096, 32, 8, 14_336),
        (16_384, 128, 8, 53_248),
        (96, 6, 2, 256),
        drawn,
    ]


register(
    Exercise(
        name="llama-block-parameters",
        notebook="09_cost_accounting",
        reference=_llama_block_parameters,
        forbidden=(
            Route(
                "gptlib.lessons.nb09.experiments.llama_shape:LlamaBlock",
                "the course's `LlamaBlock`",
                (
                    "it counts the parameters of a built block; the exercise asks for the count "
                    "from the architecture's shapes."
                ),
            ),
            Route(
                "gptlib.lessons.nb09.experiments.llama_shape:LlamaShaped",
                "the course's `LlamaShaped`",
                (
                    "it counts the parameters of a built block; the exercise asks for the count "
                    "from the architecture's shapes."
                ),
            ),
            Route(
                "gptlib.lessons.nb09.experiments.costs:parameter_counts",
                "the course's `parameter_counts`",
                "it computes the count this exercise asks you to write as a formula.",
            ),
            Route(
                "gptlib.lessons.nb09.experiments.costs:architecture_of",
                "the course's `architecture_of`",
                "it computes the count this exercise asks you to write as a formula.",
            ),
        ),
        # Llama 2 7B's block (32 key/value heads: plain multi-head attention), Llama 3 8B's and
        # 405B's (grouped), and a small odd one
        make_inputs=_llama_inputs,
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


def _counted_flops(
    model: nn.Module,
    idx: torch.Tensor,
    targets: torch.Tensor | None,
    *,
    tokens: Callable[[torch.Tensor], int] = lambda idx: idx.shape[0] * idx.shape[1],
    backward: bool = True,
    forward_counted: bool = True,
    extra_forward: bool = False,
    grad: bool = True,
) -> tuple[float, float]:
    """The measurement with one part changed: each catalogued mistake is one of these."""
    with torch.set_grad_enabled(grad):
        loss = None
        if targets is not None and not forward_counted:
            _, loss = model(idx, targets)
        with FlopCounterMode(display=False) as counter:
            if extra_forward or targets is None:
                model(idx)
            if targets is not None:
                if loss is None:
                    _, loss = model(idx, targets)
                if backward:
                    loss.backward()
    attention = counter.get_flop_counts()["Global"].get(torch.ops.aten.bmm, 0)
    n = tokens(idx)
    return counter.get_total_flops() / n, attention / n


def _flops_per_token(
    model: nn.Module, idx: torch.Tensor, targets: torch.Tensor | None = None
) -> tuple[float, float]:
    """FLOPs per token PyTorch's counter counts for `model` on idx [B, T]: the forward pass, or
    with targets [B, T] the loss's forward and backward; (all, batched products' (bmm))."""
    n_tokens = idx.shape[0] * idx.shape[1]
    with FlopCounterMode(display=False) as counter:
        if targets is None:
            model(idx)
        else:
            _, loss = model(idx, targets)
            loss.backward()
    attention = counter.get_flop_counts()["Global"].get(torch.ops.aten.bmm, 0)
    return counter.get_total_flops() / n_tokens, attention / n_tokens


def _flops_inputs(g: torch.Generator) -> list[tuple]:
    """Small GPTs with the attention written out (its products counted) and fused (on the CPU
    counted as nothing), forward and training passes, one trained with only its token table, and
    the notebook's model and batch in a training pass (L = 4, d = 128, 12 sequences of 64
    tokens)."""
    torch.manual_seed(0)
    small = GPTConfig(vocab_size=11, d_model=32, n_heads=4, n_layers=2, max_len=8)
    written_out = build_gpt(small, Variant(attention="written-out"))
    frozen = build_gpt(small, Variant(attention="written-out"))
    for name, weight in frozen.named_parameters():
        weight.requires_grad_(name == "tok_emb.weight")
    chapter = GPTConfig(vocab_size=65, max_len=64)
    notebook_model = build_gpt(chapter, Variant(attention="written-out"))

    def tokens(vocab: int, batch: int, length: int) -> torch.Tensor:
        return torch.randint(0, vocab, (batch, length), generator=g)

    idx, targets = tokens(11, 3, 8), tokens(11, 3, 8)
    big_idx = tokens(65, 12, 64)
    return [
        (written_out, idx, None),
        (written_out, idx, targets),
        (GPT(small), tokens(11, 5, 6), None),
        (GPT(small), idx, targets),
        (frozen, idx, targets),
        (notebook_model, big_idx, big_idx),
    ]


def _attention_within_total(out: object, *args: object) -> str | None:
    if isinstance(out, tuple) and len(out) == 2 and isinstance(out[0], int | float):
        total, attention = out
        if isinstance(attention, int | float) and not 0 <= attention <= total:
            return (
                f"got {attention} FLOPs of batched products against {total} in all: they are a "
                "part of all the counted FLOPs, never more"
            )
    return None


register(
    Exercise(
        name="flops-per-token",
        notebook="09_cost_accounting",
        reference=_flops_per_token,
        make_inputs=_flops_inputs,
        returns=("all FLOPs per token", "batched products' FLOPs per token"),
        properties=(Property("a part of the whole", _attention_within_total),),
        mistakes=(
            Mistake(
                "per sequence",
                "you divided by the number of sequences. A token is one position of one "
                "sequence: a batch of B sequences of T tokens holds B times T of them.",
                lambda m, i, t: _counted_flops(m, i, t, tokens=lambda idx: idx.shape[0]),
                fix="n_tokens = idx.shape[0] * idx.shape[1]  # B·T",
            ),
            Mistake(
                "per position",
                "you divided by the sequence length only. Every sequence of the batch runs "
                "through the model too: the batch holds B times T tokens.",
                lambda m, i, t: _counted_flops(m, i, t, tokens=lambda idx: idx.shape[-1]),
                fix="n_tokens = idx.shape[0] * idx.shape[1]  # B·T",
            ),
            Mistake(
                "whole batch",
                "that is the count for the whole batch. The question is per token: divide by "
                "the number of tokens the batch holds.",
                lambda m, i, t: _counted_flops(m, i, t, tokens=lambda idx: 1),
                fix="divide both counts by idx.shape[0] * idx.shape[1]",
            ),
            Mistake(
                "forward only",
                "with targets, the pass to count is a training pass: the loss's forward pass "
                "and then its backward pass, both while the counter runs. Yours counts the "
                "forward pass alone.",
                lambda m, i, t: _counted_flops(m, i, t, backward=False),
                fix="inside the counter: _, loss = model(idx, targets); loss.backward()",
            ),
            Mistake(
                "backward only",
                "the forward pass of the loss ran before the counter started, so only the "
                "backward pass was counted. A training step pays for both: run the forward "
                "pass inside the counter too.",
                lambda m, i, t: _counted_flops(m, i, t, forward_counted=False),
                fix="with FlopCounterMode(display=False) as counter: compute the loss there, "
                "then call loss.backward() there",
            ),
            Mistake(
                "two forward passes",
                "with targets you counted a forward pass of its own and then the loss's forward "
                "and backward: a training step runs the model forward once.",
                lambda m, i, t: _counted_flops(m, i, t, extra_forward=True),
                fix="call model(idx) only when targets is None; otherwise only "
                "model(idx, targets) and loss.backward()",
            ),
            Mistake(
                "without gradients",
                "the training pass ran with gradient tracking switched off, so the loss has no "
                "graph to go backward through. Count the training pass with gradients on.",
                lambda m, i, t: _counted_flops(m, i, t, grad=False),
                fix="remove torch.no_grad() around the training pass",
            ),
        ),
        atol=0.0,
        rtol=1e-9,
        hints=(
            "Run the pass inside PyTorch's FLOP counter, as for the single linear layer above: "
            "for a training pass that means computing the loss and then its backward pass "
            "while the counter runs. Then turn both totals into per-token numbers: the batch "
            "holds B sequences of T tokens.",
            "The counter's total is all the FLOPs; its counts by operation (the Global entry) "
            "hold the batched matrix products under the bmm operation of aten, absent when "
            "the attention ran fused. Divide each by the number of tokens, B times T.",
        ),
    )
)


def _training_gpu_hours(n_params: float, n_tokens: float, peak_flops: float, mfu: float) -> float:
    return 6 * n_params * n_tokens / (peak_flops * mfu) / 3600


def _positive(out: object, *args: float) -> str | None:
    if isinstance(out, int | float) and out <= 0:
        return f"got {out}: a training run takes a positive number of hours"
    return None


def _hours_inputs(g: torch.Generator) -> list[tuple]:
    """(n_params, n_tokens, peak FLOP/s, MFU): Llama 2 7B's run, GPT-2 small's, GPT-3's, and one
    drawn from `g` (so that grading's hidden inputs differ from these)."""
    u = torch.rand(4, generator=g, dtype=torch.float64).tolist()
    drawn = (
        1e8 * 10 ** (3 * u[0]),
        1e10 * 10 ** (3 * u[1]),
        1e14 * (1 + 9 * u[2]),
        0.2 + 0.4 * u[3],
    )
    return [
        (6_738_415_616, 2e12, 312e12, 0.4),
        (124_439_808, 1e10, 1e14, 0.5),
        (174.6e9, 300e9, 125e12, 0.3),
        drawn,
    ]


register(
    Exercise(
        name="training-gpu-hours",
        notebook="09_cost_accounting",
        reference=_training_gpu_hours,
        forbidden=(
            Route(
                "gptlib.lessons.nb09.experiments.costs:accelerator_hours",
                "the course's `accelerator_hours`",
                "it does the arithmetic this exercise asks you to write.",
            ),
        ),
        make_inputs=_hours_inputs,
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
