"""Looking inside a model without changing it: evaluation mode and forward hooks.

`evaluating(model)` runs a block of code in evaluation mode and restores the mode after;
`capture_inputs(modules)` and `capture_outputs(modules)` record what modules receive and return;
`attention_weights(model)` records every attention layer's weights [B, h, T, T_k]. Used by the
experiments of notebooks 03–08 and by `GPT.attention_maps`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator

import torch
from torch import nn

from gptlib.attention import CausalSelfAttention


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

    def keep(_module: nn.Module, args: tuple) -> None:
        inputs.append(args[0].detach())

    handles = [module.register_forward_pre_hook(keep) for module in modules]
    try:
        yield inputs
    finally:
        for handle in handles:
            handle.remove()


@contextlib.contextmanager
def capture_outputs(modules: Iterable[nn.Module]) -> Iterator[list[torch.Tensor]]:
    """Record the output of every forward call of `modules`, in call order, for the block."""
    outputs: list[torch.Tensor] = []

    def keep(_module: nn.Module, _inputs: tuple, output: torch.Tensor) -> None:
        outputs.append(output.detach())

    handles = [module.register_forward_hook(keep) for module in modules]
    try:
        yield outputs
    finally:
        for handle in handles:
            handle.remove()


@contextlib.contextmanager
def attention_weights(model: nn.Module) -> Iterator[list[torch.Tensor]]:
    """Record each attention layer's weights [B, h, T, T_k], in call order, for the block.

    Fused attention never forms the weights, so every layer of `model` takes the explicit path
    (the same numbers, see notebook 02) while the block runs.
    """
    layers = [m for m in model.modules() if isinstance(m, CausalSelfAttention)]
    impls = [layer.impl for layer in layers]
    for layer in layers:
        layer.impl = "explicit"
    try:
        with capture_outputs(layer.weights for layer in layers) as weights:
            yield weights
    finally:
        for layer, impl in zip(layers, impls, strict=True):
            layer.impl = impl
