"""Comparing a student's output with the reference's, and saying in words what differs.

Outputs are tensors, numbers (Python, NumPy or 0-d tensors), or tuples/lists of them. Any
floating dtype and memory layout is accepted: values are compared in float64.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import torch


def as_tensor(value: Any) -> torch.Tensor | None:
    """A detached tensor for a tensor, a number or a NumPy array; None for anything else."""
    if isinstance(value, torch.Tensor):
        return value.detach()
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Real):
        return torch.tensor(float(value), dtype=torch.float64)
    if hasattr(value, "__array__") and hasattr(value, "dtype"):  # NumPy arrays and scalars
        try:
            return torch.as_tensor(value)
        except (TypeError, RuntimeError):
            return None
    return None


def outputs_match(got: Any, expected: Any, atol: float, rtol: float) -> bool:
    """True when two outputs (tensors, numbers, or tuples/lists of them) agree within tolerance."""
    if isinstance(expected, tuple | list):
        return (
            isinstance(got, tuple | list)
            and len(got) == len(expected)
            and all(outputs_match(g, e, atol, rtol) for g, e in zip(got, expected, strict=True))
        )
    g, e = as_tensor(got), as_tensor(expected)
    if g is None or e is None:
        return got == expected
    if g.shape != e.shape:
        return False
    g, e = g.to(torch.float64), e.to(torch.float64)
    return bool(torch.allclose(g, e, atol=atol, rtol=rtol, equal_nan=True))


def describe(value: Any) -> str:
    """A few words for a value: 'a tensor of shape [2, 3]', 'a tuple of 2 items', 'int 3'."""
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {list(value.shape)}"
    if isinstance(value, tuple | list):
        return f"a {type(value).__name__} of {len(value)} items"
    return f"{type(value).__name__} {value!r}"


# A None among returned tensors is most often a `.grad` that PyTorch did not keep.
NONE_ITEM = (
    "it is None where a tensor belongs. If it is a tensor's `.grad`: PyTorch keeps gradients "
    "only on leaves (tensors made directly, such as weights) unless it is asked, before the "
    "backward pass, to keep one on a tensor computed from others; and a `.grad` stays None "
    "until a backward pass reaches it"
)


def _item(i: int, names: Sequence[str]) -> str:
    return f"item {i} ({names[i]})" if i < len(names) else f"item {i}"


def shape_problem(got: Any, expected: Any, names: Sequence[str] = ()) -> str | None:
    """What is structurally wrong (type, shape, NaN), or None; `names` name a tuple's items."""
    if expected is None:  # an item the reference leaves empty, such as a loss without targets
        return None if got is None else f"it should return None, but returned {describe(got)}"
    if got is None:
        return "it returned None: check that it ends with a `return` statement"
    if isinstance(expected, tuple | list):
        if not isinstance(got, tuple | list) or len(got) != len(expected):
            return f"it should return {describe(expected)}, but returned {describe(got)}"
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            if g is None and isinstance(e, torch.Tensor):
                return f"{_item(i, names)}: {NONE_ITEM}"
            problem = shape_problem(g, e)
            if problem:
                return f"{_item(i, names)}: {problem}"
        return None
    if isinstance(expected, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return f"it should return a tensor, but returned {describe(got)}"
        if got.shape != expected.shape:
            return f"the result has shape {list(got.shape)}, expected {list(expected.shape)}"
        if got.is_floating_point() and not torch.isfinite(got).all():
            where = _index(torch.nonzero(~torch.isfinite(got))[0])
            return f"the result contains NaN or infinite values (the first at index {where})"
        return None
    if isinstance(expected, numbers.Real) and as_tensor(got) is None:
        return f"it should return a number, but returned {describe(got)}"
    return None


def _index(position: torch.Tensor) -> str:
    return str([int(i) for i in position])


def _number(value: float) -> str:
    return f"{value:z.6g}"


def _apart(yours: float, reference: float) -> tuple[str, str]:
    """The two numbers to 6 significant digits, or to as many more as it takes to tell them
    apart (6442450945 and 6442450944 both read 6.44245e+09 at 6)."""
    for digits in range(6, 18):
        shown = f"{yours:z.{digits}g}", f"{reference:z.{digits}g}"
        if shown[0] != shown[1]:
            break
    return shown


def value_difference(got: Any, expected: Any) -> str:
    """How one tensor or number differs from the reference: where, and by how much."""
    g, e = as_tensor(got), as_tensor(expected)
    if g is None or e is None or g.shape != e.shape:
        return f"expected {describe(expected)}, got {describe(got)}"
    if g.dim() == 0:
        yours, reference = _apart(g.item(), e.item())
        return f"yours is {yours}, the reference's is {reference}"
    if g.dtype == torch.bool and e.dtype == torch.bool:
        wrong = torch.nonzero(g != e)
        first = tuple(int(i) for i in wrong[0])
        return (
            f"{len(wrong)} of {g.numel()} entries differ, the first at index {list(first)} "
            f"(yours {bool(g[first])}, the reference's {bool(e[first])})"
        )
    gap = (g.double() - e.double()).abs()
    flat = int(torch.argmax(torch.nan_to_num(gap, nan=float("inf"))))
    where = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), gap.shape))
    yours, reference = _apart(g[where].item(), e[where].item())
    return (
        f"largest difference {gap[where].item():z.3g} at index {list(where)} "
        f"(yours {yours}, the reference's {reference})"
    )


def _indices(chosen: torch.Tensor) -> str:
    found = [int(i) for i in torch.nonzero(chosen).flatten()]
    shown = ", ".join(str(i) for i in found[:6])
    return shown + (f" and {len(found) - 6} more" if len(found) > 6 else "")


def _slices(dim: int, ndim: int, chosen: torch.Tensor) -> str:
    """Words for the slices `chosen` of dimension `dim`, after 'every entry' or 'all': of rows
    and columns of a matrix (of every matrix, for a batch of them), else at indices of a
    dimension counted from 0."""
    several = int(chosen.sum()) > 1
    which = _indices(chosen)
    if ndim >= 2 and dim >= ndim - 2:
        kind = ("row", "rows") if dim == ndim - 2 else ("column", "columns")
        return f"of {kind[several]} {which}" + (" of every matrix" if ndim > 2 else "")
    if ndim == 1:
        return f"at {'positions' if several else 'position'} {which}"
    return f"at {'indices' if several else 'index'} {which} of dimension {dim} (counting from 0)"


def _where_they_differ(wrong: torch.Tensor, counted: bool = True) -> str | None:
    """Which entries differ: whole rows, columns or slices of another dimension, or (unless
    `counted` is False, for a difference whose count is told already) how many and where."""
    total, count = wrong.numel(), int(wrong.sum())
    if count == 0:
        return None
    if count == 1 and counted:
        return f"only that entry differs; the other {total - 1} match"
    ndim = wrong.dim()
    confined = None  # the dimension whose fewest slices hold every differing entry
    for dim in reversed(range(ndim)):
        others = [d for d in range(ndim) if d != dim]
        touched = wrong.any(dim=others) if others else wrong
        if bool(touched.all()):
            continue
        shape = [1] * ndim
        shape[dim] = -1
        if bool(torch.equal(wrong, touched.view(shape).expand_as(wrong))):
            return f"every entry {_slices(dim, ndim, touched)} differs, and every other matches"
        share = float(touched.double().mean())
        if confined is None or share < confined[0]:
            confined = (share, dim, touched)
    if not counted:
        return None
    if count == total:
        return "every entry differs, and not by one constant factor or shift"
    text = f"{count} of {total} entries differ"
    if confined is not None:
        text += ", all " + _slices(confined[1], ndim, confined[2]).replace("of ", "in ", 1)
    return text


def difference_pattern(got: Any, expected: Any, atol: float, rtol: float) -> str | None:
    """The pattern of a difference between two tensors of the same shape, in words, or None:
    yours is the reference transposed, with its sign flipped, times a constant, plus a
    constant, or zero; else which entries differ (whole rows, whole columns, how many)."""
    g, e = as_tensor(got), as_tensor(expected)
    if g is None or e is None or g.shape != e.shape or g.numel() < 2:
        return None
    if g.dtype == torch.bool or e.dtype == torch.bool:
        return _where_they_differ(g != e, counted=False)
    g, e = g.double(), e.double()
    if not (torch.isfinite(g).all() and torch.isfinite(e).all()):
        return None
    atol, rtol = 10 * max(atol, 1e-7), 10 * max(rtol, 1e-6)

    def same(a: torch.Tensor, b: torch.Tensor) -> bool:
        return bool(torch.allclose(a, b, atol=atol, rtol=rtol))

    if g.dim() >= 2 and g.shape[-1] == g.shape[-2] and same(g, e.transpose(-2, -1)):
        return (
            "yours equals the reference transposed (its last two dimensions swapped): "
            "rows and columns are exchanged"
        )
    if same(g, torch.zeros_like(g)):
        return "yours is 0 at every entry"
    if same(g, -e):
        return "yours is the reference with its sign flipped at every entry"
    norm = float((e * e).sum())
    if norm > 0:
        factor = float((g * e).sum()) / norm
        if same(g, factor * e):
            return (
                f"yours is {_number(factor)} × the reference at every entry: a constant factor "
                "apart"
            )
    shift = float((g - e).mean())
    if same(g, e + shift):
        return f"yours is the reference plus {_number(shift)} at every entry: a constant shift"
    return _where_they_differ(~torch.isclose(g, e, atol=atol / 10, rtol=rtol / 10))


def _told(got: Any, expected: Any, atol: float, rtol: float) -> str:
    text = value_difference(got, expected)
    pattern = difference_pattern(got, expected, atol, rtol)
    return f"{text}; {pattern}" if pattern else text


def difference(got: Any, expected: Any, atol: float, rtol: float, names: Sequence[str] = ()) -> str:
    """What differs between an answer and the reference, naming the first item that differs,
    where and by how much, and in which pattern (`difference_pattern`)."""
    if isinstance(expected, tuple | list) and isinstance(got, tuple | list):
        for i, (g, e) in enumerate(zip(got, expected, strict=False)):
            if not outputs_match(g, e, atol, rtol):
                return f"{_item(i, names)} differs from the reference: {_told(g, e, atol, rtol)}"
    return f"the result differs from the reference: {_told(got, expected, atol, rtol)}"
