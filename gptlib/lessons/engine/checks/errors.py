"""An error raised by a student's answer, explained: which line of their code, which operation,
the shapes of the tensors it held there, and what the complaint means in plain words.

A check calls `explain_error(error, answer_name)` when the student's function raises on one of
its inputs (and no catalogued mistake raises the same), so that a student reads what their code
did instead of PyTorch's message from deep inside a library:

    your `attention` stopped at `scores = q @ k.transpose(-2, -1)`: a matrix product needs the
    left operand's last size to equal the right operand's second-to-last; here 6 met 5 (as 2-D:
    4×6 and 5×4). Tensors there: q [2, 4, 6] float32, k [2, 4, 5] float32.

PyTorch's own words are added only for an error this module does not know.
"""

from __future__ import annotations

import linecache
import re
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from types import FrameType, TracebackType

import torch

_LIBRARIES = tuple(
    str(Path(p).resolve())
    for p in (
        Path(torch.__file__).parent,
        Path(__file__).resolve().parents[3],  # gptlib
        sys.prefix,
        sys.base_prefix,
    )
)
_MAX_TENSORS = 6


def _sizes(text: str) -> str:
    return "[" + ", ".join(s.strip() for s in text.split(",") if s.strip()) + "]"


# (pattern of the error's message, explanation built from the match), tried in order.
_EXPLANATIONS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = tuple(
    (re.compile(pattern), explain)
    for pattern, explain in (
        (
            r"mat1 and mat2 shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\)",
            lambda m: (
                "a matrix product needs the left operand's last size to equal the right "
                f"operand's second-to-last; here {m[2]} met {m[3]} (as 2-D: {m[1]}×{m[2]} and "
                f"{m[3]}×{m[4]})"
            ),
        ),
        (
            r"Expected size for first two dimensions of batch2 tensor to be: \[(\d+), (\d+)\] "
            r"but got: \[(\d+), (\d+)\]",
            lambda m: (
                "a batched matrix product needs the same batch size on both sides and the left "
                "operand's last size equal to the right operand's second-to-last; the right "
                f"operand should start [{m[1]}, {m[2]}] and starts [{m[3]}, {m[4]}]"
            ),
        ),
        (
            r"The size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\) at "
            r"non-singleton dimension (\d+)",
            lambda m: (
                "two tensors were broadcast together (entry by entry, or the batch "
                "dimensions of a matrix product), but in dimension "
                f"{m[3]} (counting from 0) of the broadcast result the first operand, the one "
                f"on the left, has size {m[1]} and the second has size {m[2]}; neither is 1, so "
                "they cannot be broadcast together (sizes are matched from the last dimension "
                "backwards, a missing one counting as 1)"
            ),
        ),
        (
            r"The expanded size of the tensor \((\d+)\) must match the existing size \((\d+)\) "
            r"at non-singleton dimension (\d+)",
            lambda m: (
                f"a tensor of size {m[2]} in dimension {m[3]} (counting from 0) was stretched "
                f"(broadcast) to size {m[1]}; only a dimension of size 1 can be stretched"
            ),
        ),
        (
            r"Dimension out of range \(expected to be in range of \[(-?\d+), (-?\d+)\], but got "
            r"(-?\d+)\)",
            lambda m: (
                f"dimension {m[3]} was asked of a tensor with {int(m[2]) + 1} dimension(s) "
                f"(valid: {m[1]} to {m[2]})"
            ),
        ),
        (
            r"shape '\[([-\d, ]*)\]' is invalid for input of size (\d+)",
            lambda m: (
                f"a reshape to {_sizes(m[1])} cannot hold the tensor's {int(m[2]):,} entries: "
                "the sizes of the new shape must multiply to the same number"
            ),
        ),
        (
            r"view size is not compatible with input tensor's size and stride",
            lambda m: (
                "view can only relabel a tensor whose entries lie in memory in the new order; "
                "after a transpose they do not (the tensor is not contiguous), so view refuses. "
                "reshape copies when it has to, as does .contiguous() before view"
            ),
        ),
        (
            r"index (-?\d+) is out of bounds for dimension (\d+) with size (\d+)",
            lambda m: (
                f"index {m[1]} was used in dimension {m[2]}, which has only {m[3]} entries "
                f"(valid: 0 to {int(m[3]) - 1}, or negative from the end)"
            ),
        ),
        (
            r"index out of range in self",
            lambda m: (
                "a table lookup (an embedding) got an id that is negative or not below the "
                "table's number of rows"
            ),
        ),
        (
            r"Target (-?\d+) is out of bounds",
            lambda m: (
                f"cross-entropy got the target class {m[1]}, but targets must lie between 0 and "
                "the number of classes minus 1 (the logits' last size)"
            ),
        ),
        (
            r"Expected input batch_size \((\d+)\) to match target batch_size \((\d+)\)",
            lambda m: (
                f"cross-entropy got {m[1]} rows of logits but {m[2]} targets: it wants logits "
                "[N, classes] and targets [N], one target per row"
            ),
        ),
        (
            r"Expected target size \[([\d, ]+)\], got \[([\d, ]+)\]",
            lambda m: (
                "cross-entropy reads the classes from dimension 1 (counting from 0) of "
                "logits with more than two dimensions, so it wanted targets of shape "
                f"[{m[1]}] and got [{m[2]}]: logits [B, T, classes] put the positions where "
                "it looks for the classes. Flatten them to [B·T, classes] with targets [B·T], "
                "or move the classes to dimension 1"
            ),
        ),
        (
            r"expected target dtype to be (.+?),? but got (\w+)",
            lambda m: (
                f"cross-entropy's targets must be class ids, whole numbers ({m[1]}), and these "
                f"were {m[2]}"
            ),
        ),
        (
            r"expected scalar type (\w+) but found (\w+)",
            lambda m: (
                f"one operation mixed dtypes: it expected {m[1]} and found {m[2]}; convert one "
                "side (.to(...), .long(), .float())"
            ),
        ),
        (
            r"Expected tensor for argument #\d+ 'indices' to have one of the following scalar "
            r"types: ([\w, ]+); but got (\S+) instead",
            lambda m: (
                f"indices must be integers ({m[1]}), and these were {m[2]}: ids and positions "
                "index a table, so they cannot be floats"
            ),
        ),
        (
            r"(?:tensors used as indices must be long|indices must be)",
            lambda m: "a tensor used to index must hold integers (or booleans), not floats",
        ),
        (
            r"masked_fill_? only supports boolean masks|expected mask dtype to be Bool",
            lambda m: "a mask must be a boolean tensor (True/False), not numbers",
        ),
        (
            r"element 0 of tensors does not require grad and does not have a grad_fn",
            lambda m: (
                "backward() was called on a value no parameter led to: it was computed under "
                "torch.no_grad(), or detached, or from tensors that do not require gradients"
            ),
        ),
        (
            r"Trying to backward through the graph a second time",
            lambda m: (
                "backward() ran twice through the same forward pass; after the first, the "
                "graph's saved values are freed: run the forward pass again for each backward"
            ),
        ),
        (
            r"a leaf Variable that requires grad is being used in an in-place operation",
            lambda m: (
                "a parameter was changed in place while autograd records operations; change "
                "parameters inside torch.no_grad()"
            ),
        ),
        (
            r"one of the variables needed for gradient computation has been modified by an "
            r"inplace operation",
            lambda m: (
                "an in-place operation overwrote a value that backward() still needed; compute "
                "a new tensor instead of writing into the old one"
            ),
        ),
        (
            r"Can't call numpy\(\) on Tensor that requires grad",
            lambda m: ".numpy() was called on a tensor autograd tracks: .detach() it first",
        ),
        (
            r"Boolean value of Tensor with more than one (?:value|element) is ambiguous",
            lambda m: (
                "an `if`, `and`, `or` or `not` met a tensor of several values, which has no single "
                "truth value: reduce it first (.all(), .any()) or compare single numbers"
            ),
        ),
        (
            r"only one element tensors can be converted to Python scalars",
            lambda m: "float(), int() or .item() met a tensor holding more than one value",
        ),
        (
            r"Expected all tensors to be on the same device",
            lambda m: "tensors on different devices (CPU and GPU) met in one operation",
        ),
        (
            r"Sizes of tensors must match except in dimension (\d+)",
            lambda m: (
                f"tensors joined along dimension {m[1]} must have equal sizes in every other "
                "dimension"
            ),
        ),
        (
            r"stack expects each tensor to be equal size",
            lambda m: "torch.stack needs tensors of exactly the same shape",
        ),
        (
            r"too many indices for tensor of dimension (\d+)",
            lambda m: f"a tensor with {m[1]} dimension(s) was indexed with more indices than that",
        ),
        (
            r"Given normalized_shape=\[([\d, ]*)\], expected input with shape \[\*, ([\d, ]*)\], "
            r"but got input of size\s*\[([\d, ]*)\]",
            lambda m: (
                f"a layer norm over the last size(s) {_sizes(m[1])} got an input of shape "
                f"{_sizes(m[3])}"
            ),
        ),
        (
            r"Error\(s\) in loading state_dict",
            lambda m: (
                "a state dict did not fit the model: its parameter names or shapes differ from "
                "the model's (see the names below)"
            ),
        ),
    )
)


def plain_words(error: BaseException) -> str | None:
    """What `error` means, in plain words; None for an error this module does not know."""
    text = str(error)
    for pattern, explain in _EXPLANATIONS:
        match = pattern.search(text)
        if match:
            return explain(match)
    return None


def _is_library(filename: str) -> bool:
    resolved = str(Path(filename).resolve()) if not filename.startswith("<") else filename
    return resolved.startswith(_LIBRARIES)


def _student_frame(tb: TracebackType | None) -> tuple[FrameType, int] | None:
    """The innermost frame of the traceback that is the student's code (a notebook cell, not
    torch, gptlib or the standard library), with its line number."""
    found = None
    for frame, lineno in traceback.walk_tb(tb):
        if not _is_library(frame.f_code.co_filename):
            found = (frame, lineno)
    return found


def _tensors(frame: FrameType) -> str:
    shown = [
        f"{name} {list(value.shape)} {str(value.dtype).removeprefix('torch.')}"
        for name, value in frame.f_locals.items()
        if isinstance(value, torch.Tensor) and not name.startswith("_")
    ]
    more = len(shown) - _MAX_TENSORS
    text = ", ".join(shown[:_MAX_TENSORS]) + (f" and {more} more" if more > 0 else "")
    return f" Tensors there: {text}." if shown else ""


def explain_error(error: BaseException, answer_name: str) -> str:
    """The explanation a check gives of `error`, raised by the student's `answer_name`."""
    located = _student_frame(error.__traceback__)
    where = ""
    tensors = ""
    if located is not None:
        frame, lineno = located
        line = linecache.getline(frame.f_code.co_filename, lineno, frame.f_globals).strip()
        where = f" at `{line}`" if line else f" at line {lineno}"
        tensors = _tensors(frame)
    meaning = plain_words(error)
    if meaning is None:
        first = (str(error).strip().splitlines() or [""])[0]
        meaning = f"it raised {type(error).__name__}" + (f" ({first})" if first else "")
    return f"your `{answer_name}` stopped{where}: {meaning}.{tensors}"
