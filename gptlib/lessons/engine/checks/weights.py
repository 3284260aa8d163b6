"""gptlib's weights into a student's module, or a message that says what does not fit.

The module exercises of notebooks 04 and 07 are graded by giving the student's module the
weights of gptlib's and comparing what the two compute. The parameter names are the same by
design (gptlib's are the chapter's), so loading is `load_state_dict`; `load_weights` first reads
its report (names missing or unexpected, shapes that differ) and turns it into a sentence a
student can act on. Notebook 04 lets a module keep buffers of its own (a stored mask); notebook
07 loads strictly, as its section 8 does, so there `unexpected_buffers` must find none.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import torch
from torch import nn


def unexpected_buffers(module: nn.Module, state: Mapping[str, torch.Tensor]) -> list[str]:
    """The entries of the module's state dict that are not parameters and that `state` lacks:
    buffers kept in the state dict (persistent ones), which a strict load refuses."""
    parameters = {name for name, _ in module.named_parameters(remove_duplicate=False)}
    return [name for name in module.state_dict() if name not in parameters and name not in state]


def load_weights(
    module: nn.Module, state: Mapping[str, torch.Tensor], strict: bool = False
) -> None:
    """Load `state`, the state dict of a gptlib module, into the student's `module`.

    ValueError, before anything is loaded, naming the weights the module lacks, its parameters
    that gptlib has no weight for, and the shapes that differ, then every name and shape
    gptlib's module has. Buffers only the module has (a stored mask, say) keep their values;
    with `strict`, as `load_state_dict(strict=True)`, they are named as a misfit too.
    """
    own = module.state_dict()
    lacks = [name for name in state if name not in own]
    extra = [name for name, _ in module.named_parameters() if name not in state]
    shapes = [
        f"{name} is {list(own[name].shape)} in yours and {list(w.shape)} in gptlib's"
        for name, w in state.items()
        if name in own and own[name].shape != w.shape
    ]
    buffers = unexpected_buffers(module, state) if strict else []
    problems = [
        *([f"your module has no {', '.join(lacks)}"] if lacks else []),
        *([f"gptlib's has no weight for your {', '.join(extra)}"] if extra else []),
        *(
            [f"your state dict also holds {', '.join(buffers)}, which is no weight"]
            if buffers
            else []
        ),
        *shapes,
    ]
    if problems:
        expected = {re.sub(r"^blocks\.\d+\.", "blocks.{i}.", n): w for n, w in state.items()}
        raise ValueError(
            "the weights do not fit: "
            + "; ".join(problems)
            + ". Name and shape the parameters as gptlib does: "
            + ", ".join(f"{name} {list(w.shape)}" for name, w in expected.items())
        )
    module.load_state_dict(state, strict=strict)  # non-strict: only the module's buffers differ
