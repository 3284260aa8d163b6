"""Looking inside a model without changing it: evaluation mode and forward hooks, used by
`GPT.generate` and the experiments of notebooks 01–08 (the attention maps among them).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator

import torch
from torch import nn


@contextlib.contextmanager
def evaluating(model: nn.Module) -> Iterator[nn.Module]:
    """Put `model` in evaluation mode (no dropout) for the block, then restore its mode."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


@contextlib.contextmanager
def capture_inputs(modules: Iterable[nn.Module]) -> Iterator[list[torch.Tensor]]:
    """Record the first input of every forward call of `modules`, in call order, for the block."""
    inputs: list[torch.Tensor] = []
    with _hooked(modules, lambda _module, args: inputs.append(args[0].detach()), pre=True):
        yield inputs


@contextlib.contextmanager
def capture_outputs(modules: Iterable[nn.Module]) -> Iterator[list[torch.Tensor]]:
    """Record the output of every forward call of `modules`, in call order, for the block."""
    outputs: list[torch.Tensor] = []
    with _hooked(modules, lambda _module, _args, output: outputs.append(output.detach())):
        yield outputs


@contextlib.contextmanager
def _hooked(
    modules: Iterable[nn.Module], hook: Callable[..., None], *, pre: bool = False
) -> Iterator[None]:
    """Register `hook` as a forward (pre-)hook on every module for the block, then remove it."""
    handles = [
        m.register_forward_pre_hook(hook) if pre else m.register_forward_hook(hook) for m in modules
    ]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
