"""Inside a notebook kernel: record every `assert` instead of raising, and shift every seed.

`scripts/claim_margins.py` starts each notebook with a hidden cell that calls `install`. From
then on each `assert` statement of a cell is rewritten (an IPython AST transformer) into calls
that evaluate its clauses and append them to a JSON-lines log: for a comparison such as
`a < b < c` the values of a, b and c, for anything else whether it held. Nothing raises, so a
run goes on past a failing claim and the log shows how far each one is from its bound.

Every seed the notebook and gptlib set (`torch.manual_seed`, `torch.Generator().manual_seed`)
is shifted by `offset`, so offset 1 runs the same notebook on other random numbers throughout.
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Callable
from typing import Any

import torch

_COMPARISONS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


class Recorder:
    """Appends one JSON line per evaluated clause to `log`."""

    def __init__(self, log: str) -> None:
        self.log, self.cell = log, -1

    def _write(self, entry: dict[str, Any]) -> None:
        with open(self.log, "a") as f:
            f.write(json.dumps({"cell": self.cell, **entry}) + "\n")

    def compare(self, text: str, ops: list[str], operands: list[Callable[[], Any]]) -> None:
        """Record `operands[0] ops[0] operands[1] ...`, one entry per adjacent pair."""
        try:
            values = [float(f()) for f in operands]
        except Exception:  # not numbers (sets, strings), or an error in the clause
            self.truth(text, lambda: _chain(ops, [f() for f in operands]))
            return
        for pair, (op, a, b) in enumerate(zip(ops, values, values[1:], strict=False)):
            margin = b - a if op in ("<", "<=") else a - b
            holds = margin > 0 or (margin == 0 and op in ("<=", ">="))
            entry = {"text": text, "pair": pair, "op": op, "left": a, "right": b}
            self._write({**entry, "margin": margin, "holds": holds and math.isfinite(margin)})

    def truth(self, text: str, clause: Callable[[], Any]) -> None:
        """Record whether a clause that is not a numeric comparison held."""
        try:
            holds = bool(clause())
        except Exception as failure:
            self._write({"text": text, "holds": False, "error": repr(failure)})
            return
        self._write({"text": text, "holds": holds})


def _chain(ops: list[str], values: list[Any]) -> bool:
    checks = {
        "<": lambda a, b: a < b,
        "<=": lambda a, b: a <= b,
        ">": lambda a, b: a > b,
        ">=": lambda a, b: a >= b,
    }
    return all(checks[op](a, b) for op, a, b in zip(ops, values, values[1:], strict=False))


class _AssertsToRecords(ast.NodeTransformer):
    """`assert a < b and c` → `__guards__.compare("a < b", ["<"], [lambda: a, lambda: b])`,
    `__guards__.truth("c", lambda: c)`."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    def visit_Module(self, node: ast.Module) -> ast.Module:
        self.recorder.cell += 1
        self.generic_visit(node)
        return node

    def visit_Assert(self, node: ast.Assert) -> list[ast.stmt]:
        test = node.test
        clauses = (
            test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
        )
        statements = [ast.Expr(self._record(clause)) for clause in clauses]
        for statement in statements:
            ast.copy_location(statement, node)
            ast.fix_missing_locations(statement)
        return statements

    @staticmethod
    def _record(clause: ast.expr) -> ast.Call:
        text = ast.Constant(ast.unparse(clause))
        guards = ast.Name("__guards__", ast.Load())
        if isinstance(clause, ast.Compare) and all(type(op) in _COMPARISONS for op in clause.ops):
            ops = ast.List([ast.Constant(_COMPARISONS[type(op)]) for op in clause.ops], ast.Load())
            operands = ast.List([_thunk(e) for e in (clause.left, *clause.comparators)], ast.Load())
            return ast.Call(ast.Attribute(guards, "compare", ast.Load()), [text, ops, operands], [])
        return ast.Call(ast.Attribute(guards, "truth", ast.Load()), [text, _thunk(clause)], [])


def _thunk(expression: ast.expr) -> ast.Lambda:
    arguments = ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[])
    return ast.Lambda(arguments, expression)


def _shift_seeds(offset: int) -> None:
    manual_seed = torch.manual_seed

    def shifted_manual_seed(seed: int) -> torch.Generator:
        return manual_seed(int(seed) + offset)

    class ShiftedGenerator(torch.Generator):
        def manual_seed(self, seed: int) -> torch.Generator:
            return super().manual_seed(int(seed) + offset)

    torch.manual_seed = shifted_manual_seed
    torch.Generator = ShiftedGenerator


def install(log: str, offset: int) -> None:
    """Record this kernel's asserts into `log` and shift its seeds by `offset`."""
    from IPython import get_ipython

    shell = get_ipython()
    recorder = Recorder(log)
    shell.user_ns["__guards__"] = recorder
    shell.ast_transformers.append(_AssertsToRecords(recorder))
    if offset:
        _shift_seeds(offset)
