"""gptlib's weights into a student's module, or a message that says what does not fit.

The module exercises of notebooks 04 and 07 are graded by giving the student's module the
weights of gptlib's and comparing what the two compute. The parameter names are the same by
design (gptlib's are the chapter's), so loading is `load_state_dict`; `load_weights` first reads
its report (names missing or unexpected, shapes that differ) and turns it into a sentence a
student can act on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import torch
from torch import nn


def load_weights(module: nn.Module, state: Mapping[str, torch.Tensor]) -> None:
    """Load `state`, the state dict of a gptlib module, into the student's `module`.

    ValueError, before anything is loaded, naming the weights the module lacks, its parameters
    that gptlib has no weight for, and the shapes that differ, then every name and shape
    gptlib's module has. Buffers only the module has (a stored mask, say) keep their values.
    """
    own = module.state_dict()
    lacks = [name for name in state if name not in own]
    extra = [name for name, _ in module.named_parameters() if name not in state]
    shapes = [
        f"{name} is {list(own[name].shape)} in yours and {list(w.shape)} in gptlib's"
        for name, w in state.items()
        if name in own and own[name].shape != w.shape
    ]
    problems = [
        *([f"your module has no {', '.join(lacks)}"] if lacks else []),
        *([f"gptlib's has no weight for your {', '.join(extra)}"] if extra else []),
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
    module.load_state_dict(state, strict=False)  # strict but for the module's own buffers
