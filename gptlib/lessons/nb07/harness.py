"""Lesson 07's adapters that a graded release ships: how a student's attention, MLP, block,
GPT and cached attention step are built and run the way the notebook's later cells run them
(loaded strictly, a forward and a backward pass compared with gptlib's), each on a fork of
torch's random stream; the messages of the structural mistakes those runs report."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from gptlib.lessons.engine.checks.compare import outputs_match
from gptlib.lessons.engine.checks.core import (
    CheckError,
    exercise_named,
    mistake_error,
)
from gptlib.lessons.engine.checks.delegation import unwatched
from gptlib.lessons.engine.checks.weights import load_weights, unexpected_buffers


def own_random_stream(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` run on a fork of torch's global random stream: building the check's models and the
    student's leaves the notebook's next random draws as they were."""

    @functools.wraps(fn)
    def forked(*args: Any, **kwargs: Any) -> Any:
        with torch.random.fork_rng(devices=[]):
            return fn(*args, **kwargs)

    return forked


def _forked(adapt: Callable[[Any], Callable[..., Any]], answer: Any) -> Callable[..., Any]:
    return own_random_stream(adapt(answer))


def forked_adapt(adapt: Callable[[Any], Callable[..., Any]]) -> Callable[[Any], Callable]:
    """An `adapt` whose adapted functions run on a fork of the global random stream."""
    return functools.partial(_forked, adapt)


# --- what later cells do with a module: a strict load, a forward and a backward pass -------

BUFFER_IN_STATE_DICT = (
    "buffer-in-the-state-dict",
    "your module keeps a tensor that is not a weight (a mask, say) in its state dict. "
    "gptlib's state dict holds weights only, and section 8 moves weights between your model "
    "and gptlib's with a strict load, which refuses any name that only one side has. A tensor "
    "that can be rebuilt belongs outside the state dict, or can be made anew in forward.",
    'register it as a non-persistent buffer: self.register_buffer("mask", mask, '
    "persistent=False), or build the mask inside forward",
)
IN_PLACE = (
    "in-place-on-a-saved-tensor",
    "your forward pass changes, in place, a tensor that autograd kept for the backward pass "
    "(an augmented assignment such as +=, or a method whose name ends in an underscore). The "
    "numbers come out right, but training's backward pass (section 10) stops with an error. "
    "Make a new tensor for each result instead of changing one.",
    "write x = x + self.attn(self.ln1(x)) rather than x += self.attn(self.ln1(x)) (and "
    "masked_fill rather than masked_fill_ on a tensor the gradient needs)",
)
GRADIENT_CUT = (
    "gradient-cut",
    "your model computes the right numbers, but part of it is cut off from the gradient: it "
    "runs without gradient tracking, or works on a detached copy of a tensor or of a weight. "
    "The parameters behind that cut get no gradient (or a wrong one), so training would leave "
    "them as they are.",
    "remove torch.no_grad(), .detach() and .data from forward",
)


def _cosine_weights(t: torch.Tensor) -> torch.Tensor:
    """Fixed, varied weights shaped like `t`: their weighted sum of `t` is a scalar whose
    gradient reaches every output entry differently."""
    return torch.cos(torch.arange(t.numel(), dtype=torch.float64)).to(t.dtype).view_as(t)


def _scalar(outputs: Any) -> torch.Tensor:
    """What the backward pass differentiates: the loss when there is one, else a fixed
    weighted sum of the (first) output."""
    if isinstance(outputs, tuple):
        if len(outputs) > 1 and isinstance(outputs[1], torch.Tensor):
            return outputs[1]
        outputs = outputs[0]
    return (outputs * _cosine_weights(outputs)).sum()


def _gradients(module: nn.Module) -> dict[str, torch.Tensor | None]:
    """Every parameter's gradient by name (a shared parameter under each of its names)."""
    return {name: p.grad for name, p in module.named_parameters(remove_duplicate=False)}


def _report(exercise: str, mistake: tuple[str, ...]) -> CheckError:
    """The error naming `mistake`: the catalogue's report of it (its fix from the second time),
    or the harness's own message where the exercise does not catalogue it."""
    for m in exercise_named(exercise).mistakes:
        if m.name == mistake[0]:
            return mistake_error(exercise_named(exercise), m)
    return CheckError(exercise, mistake[1], mistake[0])


def _load_strictly(exercise: str, model: nn.Module, source: nn.Module) -> None:
    """Load gptlib's state dict into the student's module strictly, as section 8 does: a buffer
    only the student's state dict holds is the named mistake; a misfit says which names and
    shapes differ."""
    state = source.state_dict()
    if unexpected_buffers(model, state):
        raise _report(exercise, BUFFER_IN_STATE_DICT)
    try:
        load_weights(model, state, strict=True)
    except ValueError as exc:
        raise CheckError(exercise, str(exc)) from None


def run_like_gptlib(exercise: str, model: nn.Module, source: nn.Module, *args: Any) -> Any:
    """`model`, built from the student's answer, with the weights of gptlib's `source`, run
    on `args` as the notebook runs it: loaded strictly, with gradients, and when its outputs
    agree with gptlib's, a backward pass whose gradients must agree too. Returns the outputs,
    detached."""
    _load_strictly(exercise, model, source)
    model.eval()
    limits = exercise_named(exercise)
    with torch.enable_grad():
        got = model(*args)
        with unwatched():  # gptlib's model beside the student's: not the student's call
            expected = source(*args)
        if not outputs_match(got, expected, limits.atol, limits.rtol):
            return _detached(got)
        model.zero_grad(set_to_none=True)
        source.zero_grad(set_to_none=True)
        ours = _scalar(got)
        if not ours.requires_grad:
            raise _report(exercise, GRADIENT_CUT)
        try:
            ours.backward()
        except RuntimeError as exc:
            if "inplace operation" in str(exc):
                raise _report(exercise, IN_PLACE) from None
            raise CheckError(exercise, f"the backward pass through yours failed: {exc}") from None
        with unwatched():
            _scalar(expected).backward()
    theirs = _gradients(source)
    for name, grad in _gradients(model).items():
        if grad is None or not _close(grad, theirs[name]):
            raise _report(exercise, GRADIENT_CUT)
    return _detached(got)


def _close(grad: torch.Tensor, expected: torch.Tensor) -> bool:
    scale = 1.0 + expected.abs().max().item()
    return torch.allclose(grad.double(), expected.double(), rtol=1e-3, atol=1e-4 * scale)


def _detached(outputs: Any) -> Any:
    if isinstance(outputs, tuple | list):
        return tuple(_detached(o) for o in outputs)
    return outputs.detach() if isinstance(outputs, torch.Tensor) else outputs


def run_module(exercise: str, module_class: Any) -> Callable[..., torch.Tensor]:
    """`adapt` for the attention and the block: build module_class(d_model, n_heads) and run
    it like gptlib's layer (`run_like_gptlib`)."""

    def run(d_model: int, n_heads: int, source: nn.Module, x: torch.Tensor) -> torch.Tensor:
        return run_like_gptlib(exercise, module_class(d_model, n_heads), source, x)

    return run


def _names_per_parameter(module: nn.Module) -> list[list[str]]:
    """Every parameter's names: one each, except for a parameter that several modules share."""
    names: dict[int, list[str]] = {}
    for name, p in module.named_parameters(remove_duplicate=False):
        names.setdefault(id(p), []).append(name)
    return list(names.values())


def _tied(module: nn.Module) -> bool:
    """Whether the unembedding and the token embedding are one matrix (tied weights)."""
    return any(
        any(n.startswith("tok_emb.") for n in names)
        and any(n.startswith("lm_head.") for n in names)
        for names in _names_per_parameter(module)
    )


def _blocks_share_weights(module: nn.Module) -> bool:
    """Whether two layers of the stack hold the same parameter ([Block(...)] * n_layers)."""
    return any(
        len({n.split(".")[1] for n in names if n.startswith("blocks.")}) > 1
        for names in _names_per_parameter(module)
    )


NOT_TIED = (
    "not-tied",
    "with tie_weights=True the unembedding must be the token embedding's matrix itself, one "
    "parameter used twice, not a copy of it: the model then holds V·d numbers fewer, and "
    "training updates the one matrix from both uses.",
    "after creating both layers: self.lm_head.weight = self.tok_emb.weight",
)
TIED_ALWAYS = (
    "tied-when-not-asked",
    "your model shares the unembedding with the token embedding although tie_weights is "
    "False: share the matrix only when it is asked for.",
    "if tie_weights: self.lm_head.weight = self.tok_emb.weight",
)
ONE_BLOCK_SHARED = (
    "one-block-shared",
    "every layer of your stack is one and the same block: a list that repeats one module "
    "holds n_layers references to it, so all layers share a single set of weights and the "
    "model has the parameters of one block. That is not weight tying, which shares only the "
    "token embedding with the unembedding. Each layer needs a block of its own, built anew "
    "for each place in the stack.",
    "self.blocks = nn.ModuleList(Block(d_model, n_heads) for _ in range(n_layers))",
)
OTHER_DEFAULTS = (
    "other-default-sizes",
    "your model is right when every size is given, but its default sizes are not the "
    "chapter's: section 8 builds it with the vocabulary size alone and loads the weights of "
    "gptlib's model of the chapter's sizes (d = 128, 4 heads, 4 layers, 256 positions).",
    "def __init__(self, vocab_size, d_model=128, n_heads=4, n_layers=4, max_len=256, "
    "tie_weights=False)",
)


def run_gpt(gpt_class: Any) -> Callable[..., tuple]:
    """`adapt`: build gpt_class(**config) and run it like gptlib's model (`run_like_gptlib`)."""

    def run(config: dict, source: nn.Module, idx: torch.Tensor, targets: Any) -> tuple:
        model = gpt_class(**config)
        if _blocks_share_weights(model):  # before loading, which would report a misfit
            raise _report("gpt", ONE_BLOCK_SHARED)
        ours, theirs = _shapes(model), _shapes(source)
        if set(config) == {"vocab_size"} and ours.keys() == theirs.keys() and ours != theirs:
            raise _report("gpt", OTHER_DEFAULTS)
        if _tied(model) != _tied(source):  # equal logits could hide it: a tie is not a value
            raise _report("gpt", NOT_TIED if config.get("tie_weights") else TIED_ALWAYS)
        if set(config) != {"vocab_size"}:
            return run_like_gptlib("gpt", model, source, idx, targets)
        try:
            return run_like_gptlib("gpt", model, source, idx, targets)
        except CheckError:
            raise
        except Exception as exc:
            raise CheckError(
                "gpt",
                f"built as section 8 builds it, GPT({config['vocab_size']}) with the chapter's "
                f"sizes, your model fails on a window of all {idx.shape[1]} positions it knows "
                f"(the chapter's script reads 64, and nothing stops a longer window): "
                f"{type(exc).__name__}: {exc}",
            ) from None

    return run


def _shapes(module: nn.Module) -> dict[str, tuple[int, ...]]:
    return {name: tuple(p.shape) for name, p in module.named_parameters()}


class Projections(nn.Module):
    """An attention layer's two linear maps and nothing else: what `attend_with_cache` may use.
    In the notebook it runs on the student's own layers, whose other attributes may be named
    otherwise than gptlib's."""

    def __init__(self, layer: nn.Module) -> None:
        super().__init__()
        self.qkv, self.proj = layer.qkv, layer.proj

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise CheckError(
            "kv-cache",
            "your function runs the whole attention layer, which recomputes every position it "
            "is given. A cached step computes the newest position's query, key and value with "
            "the layer's qkv, attends over the cache, and applies proj.",
        )


def run_step_by_step(attend: Any) -> Callable[..., tuple]:
    """`adapt`: feed x to `attend` one position at a time, starting from cache=None, passing on
    the cache it returns. → (outputs [B, T, d], keys, values of the last cache)."""

    def run(attn: nn.Module, x: torch.Tensor, n_heads: int) -> tuple:
        cache, outputs = None, []
        with torch.no_grad():
            for t in range(x.shape[1]):
                try:
                    returned = attend(attn, x[:, t : t + 1], cache, n_heads)
                except AttributeError as exc:
                    raise CheckError(
                        "kv-cache",
                        f"your function read an attribute the layer it is given need not have "
                        f"({exc}). Use only the layer's qkv and proj, and the n_heads argument: "
                        "in the notebook it runs on your own attention layers.",
                    ) from None
                if not (isinstance(returned, tuple) and len(returned) == 2):
                    raise CheckError(
                        "kv-cache",
                        "return two things, the output for the new position and the new "
                        f"cache: (y, (keys, values)); yours returned {type(returned).__name__}",
                    )
                y, cache = returned
                if not (isinstance(cache, tuple) and len(cache) == 2):
                    raise CheckError(
                        "kv-cache",
                        "the cache you return must be a pair (keys, values), each [B, h, t, "
                        f"d_h]; yours is {type(cache).__name__}",
                    )
                outputs.append(y)
        return torch.cat(outputs, dim=1), *cache

    return run


# --- properties: conditions any right answer meets (no reference needed) ---


def loss_is_a_number(out: tuple, config: dict, source, idx, targets) -> str | None:
    loss = out[1]
    if targets is None:
        return None if loss is None else "without targets, forward must return (logits, None)"
    if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
        return "the loss must be one number, a 0-d tensor: the mean over all B·T predictions"
    return None


def keeps_the_prompt(out: torch.Tensor, model, idx: torch.Tensor, *_: object) -> str | None:
    if not torch.equal(out[:, : idx.shape[1]], idx):
        return "the result must start with the prompt idx, unchanged, and append to it"
    return None
