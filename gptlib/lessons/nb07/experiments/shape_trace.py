"""What one forward pass does to the shapes: each stage's tensor, recorded by hooks (notebook 07).

`trace_shapes(model, idx, stages)` runs the model once and records, through forward hooks
(`gptlib.hooks`), the tensor each named stage receives or returns: ids [B, T] → token vectors
[B, T, d] → ... → logits [B, T, V]. The model runs unchanged (in evaluation mode, no gradients).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from gptlib.hooks import capture_inputs, capture_outputs, evaluating

KINDS = ("input", "output")


@dataclass(frozen=True)
class TraceRow:
    """One stage: its label, the module's name in the model, what was recorded, the tensor's
    shape and the mean and standard deviation of its values."""

    stage: str
    module: str
    kind: str
    shape: tuple[int, ...]
    mean: float
    std: float


@dataclass(frozen=True)
class ShapeTrace:
    """The rows of `trace_shapes`, in the order the stages were given."""

    idx_shape: tuple[int, ...]
    rows: tuple[TraceRow, ...]

    def table(self) -> str:
        """The trace as an aligned text table, starting with the token ids."""
        width = max(len(r.stage) for r in self.rows)
        where = max(len(f"{r.kind} of {r.module}") for r in self.rows)
        header = f"{'stage':<{width}}  {'recorded':<{where}}  {'shape':<14} {'mean':>7} {'std':>7}"
        ids = f"{'token ids':<{width}}  {'the input':<{where}}  {_shape(self.idx_shape):<14}"
        lines = [header, ids]
        for r in self.rows:
            lines.append(
                f"{r.stage:<{width}}  {f'{r.kind} of {r.module}':<{where}}  "
                f"{_shape(r.shape):<14} {r.mean:z7.3f} {r.std:z7.3f}"
            )
        return "\n".join(lines)

    def shape_of(self, stage: str) -> tuple[int, ...]:
        """The recorded shape of the stage labelled `stage`."""
        for r in self.rows:
            if r.stage == stage:
                return r.shape
        raise ValueError(f"no stage {stage!r}; stages: {[r.stage for r in self.rows]}")


def _shape(shape: tuple[int, ...]) -> str:
    return str(list(shape))


def trace_shapes(
    model: nn.Module, idx: torch.Tensor, stages: Sequence[tuple[str, nn.Module, str]]
) -> ShapeTrace:
    """Run `model(idx)` once; for each (label, module, "input" or "output") in `stages`, record
    the tensor that module receives or returns. Each module must run exactly once."""
    names = {module: name for name, module in model.named_modules()}
    for label, module, kind in stages:
        if module not in names:
            raise ValueError(f"stage {label!r}: the module is not part of the model")
        if kind not in KINDS:
            raise ValueError(f"stage {label!r}: kind must be one of {KINDS}, got {kind!r}")
    with contextlib.ExitStack() as stack, evaluating(model), torch.no_grad():
        recorded = [
            stack.enter_context((capture_inputs if kind == "input" else capture_outputs)([module]))
            for _, module, kind in stages
        ]
        model(idx)
    rows = []
    for (label, module, kind), tensors in zip(stages, recorded, strict=True):
        if len(tensors) != 1:
            raise ValueError(f"stage {label!r}: {names[module]} ran {len(tensors)} times, not once")
        t = tensors[0].float()
        rows.append(
            TraceRow(label, names[module], kind, tuple(t.shape), t.mean().item(), t.std().item())
        )
    return ShapeTrace(tuple(idx.shape), tuple(rows))
