"""Numbers as text: the one convention every printed number of the course follows.

Stored notebook outputs are compared, character for character, with a fresh run on the reader's
machine (strict nbval). Another CPU sums in another order, so a value that is exactly 0 or 1 in
mathematics comes out as -1e-9 or 0.99999994 there. Printed through this convention both read
the same everywhere:

- fixed decimals, always (torch's repr prints `1.` when every value is exactly 1 and `1.000`
  otherwise);
- never a negative zero: `f"{x:z.3f}"` (the `z` of PEP 682) turns -0.000 into 0.000, in
  f-strings everywhere and in `fmt` below;
- arrays through `fmt`, never torch's or NumPy's repr.

A value whose rounding lands on a boundary across machines (0.0005 at 3 decimals) is printed
with fewer digits, or asserted instead of printed.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def number(x: float | torch.Tensor, digits: int = 3) -> str:
    """One value with `digits` decimals and no negative zero: -0.0004 → "0.000"."""
    value = float(x)
    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    return f"{value:z.{digits}f}"


def fmt(values: float | Sequence | torch.Tensor, digits: int = 3) -> str:
    """A number, list or tensor of any shape as text, `digits` decimals throughout (integers
    stay integers).

    A scalar → "0.401"; one axis → "[0.401, 0.198, 0.401]"; two or more → one row per line,
    every column right-aligned to the widest entry (as a matrix reads):

        [[1.000, 0.000],
         [0.304, 0.696]]
    """
    t = values if isinstance(values, torch.Tensor) else torch.as_tensor(values)
    t = t.detach().cpu()
    if t.dim() == 0:
        return number(t, digits) if t.is_floating_point() else str(t.item())
    if t.numel() == 0:
        return "[]"
    show = (lambda v: number(v, digits)) if t.is_floating_point() else str
    entries = [show(v) for v in t.flatten().tolist()]
    width = max(len(e) for e in entries)
    cells = iter(entries)

    def nest(shape: tuple[int, ...], depth: int) -> str:
        if len(shape) == 1:
            return "[" + ", ".join(next(cells).rjust(width) for _ in range(shape[0])) + "]"
        separator = "," + "\n" * (len(shape) - 1) + " " * (depth + 1)
        return "[" + separator.join(nest(shape[1:], depth + 1) for _ in range(shape[0])) + "]"

    return nest(tuple(t.shape), 0)
