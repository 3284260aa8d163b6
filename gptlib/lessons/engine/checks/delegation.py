"""An exercise is passed only by doing it: a check refuses an answer that hands the work to code
that already does it.

While a check runs the student's answer it watches two kinds of call (`watching`):

- Python functions: the exercise's reference (under any name, as the stand-in that replaces an
  unfinished answer, or subclassed) and each library function or class an exercise lists as a
  `Route` (`"gptlib.lessons.nb06.references:layer_norm"`), seen through `sys.setprofile`;
- PyTorch operators, whatever Python route reaches them (`torch.softmax`, `F.softmax` and
  `x.softmax` all run `aten::_softmax`), seen through a `TorchDispatchMode`; an exercise lists
  them as routes too (`"aten::_softmax"`).

After each call the check asks which route ran first (`Watch.hit`) and refuses the answer with a
message that says what was called and why the exercise asks for the student's own code. Code the
check runs for itself inside the watched call (the harness running gptlib's model beside the
student's, for instance) runs under `unwatched()`. Routes are named by strings so that a graded
release's recording can carry them without the modules it leaves out.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import sys
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import CodeType, FunctionType
from typing import Any

from torch.utils._python_dispatch import TorchDispatchMode

ATEN = "aten::"
DELEGATED = "delegated"  # the outcome's name in the class report


@dataclass(frozen=True)
class Route:
    """A call that would answer the exercise for the student.

    `target` is an operator (`"aten::_softmax"`) or a Python function or class as
    `"module:qualname"` (a class stands for every method it defines). `called` is how a message
    names it to the student; `why` says why the exercise asks for the student's own code.
    """

    target: str
    called: str
    why: str

    @property
    def is_operator(self) -> bool:
        return self.target.startswith(ATEN)


@dataclass
class Watch:
    """The routes watched during one call of a student's answer, and the first one that ran."""

    codes: dict[CodeType, Route]
    operators: dict[str, Route]
    hit: Route | None = None
    paused: int = field(default=0)

    def see(self, route: Route | None) -> None:
        if route is not None and self.hit is None and not self.paused:
            self.hit = route


_WATCH: ContextVar[Watch | None] = ContextVar("delegation_watch", default=None)


def code_objects(target: Any) -> list[CodeType]:
    """The code a call of `target` runs first: a function's own code; a class's methods (those it
    defines itself, properties' getters included); the function a wrapper wraps."""
    target = inspect.unwrap(target)
    if isinstance(target, type):
        found = []
        for member in vars(target).values():
            if isinstance(member, staticmethod | classmethod):
                member = member.__func__
            if isinstance(member, property):
                member = member.fget
            member = inspect.unwrap(member) if callable(member) else member
            if isinstance(member, FunctionType):  # a decorator's shared wrapper is unwrapped
                found.append(member.__code__)
        # code a dataclass generates (`__init__`, `__eq__`, ...) reads alike in every class
        return [code for code in found if not code.co_filename.startswith("<")]
    code = getattr(target, "__code__", None)
    return [code] if isinstance(code, CodeType) else []


def resolve(target: str) -> Any:
    """The object a Python route's `"module:qualname"` names (ValueError when there is none)."""
    module_name, _, qualname = target.partition(":")
    try:
        found: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"the route {target!r} names nothing importable ({exc})") from None
    return found


def reference_route(reference: Any) -> Route | None:
    """The route of an exercise's own reference, named so that a graded release can carry it
    when the reference is a library function it keeps (None for one defined in a checks module,
    which the release leaves out, or one that cannot be named)."""
    module, qualname = getattr(reference, "__module__", ""), getattr(reference, "__qualname__", "")
    if not module or "<" in qualname or module.rsplit(".", 1)[-1] == "checks":
        return None
    called = f"`{qualname}` from {module}, the course's reference answer to this exercise"
    return Route(f"{module}:{qualname}", called, REFERENCE_WHY)


REFERENCE_WHY = "a check of it tests the course's code, not yours."
_REFERENCE = Route("", "the course's reference answer to this exercise", REFERENCE_WHY)


def make_watch(answers: tuple[Any, ...], routes: tuple[Route, ...]) -> Watch:
    """A watch over the course's own answers' code (the reference, its stand-in) and the listed
    routes."""
    codes = {code: _REFERENCE for answer in answers for code in code_objects(answer)}
    operators = {}
    for route in routes:
        if route.is_operator:
            operators[route.target] = route
        else:
            codes.update({code: route for code in code_objects(resolve(route.target))})
    return Watch(codes, operators)


class _Operators(TorchDispatchMode):
    """Notes each operator that reaches the dispatcher in the active watch."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        watch = _WATCH.get()
        if watch is not None:
            watch.see(watch.operators.get(func._schema.name))
        return func(*args, **(kwargs or {}))


def _profiler(watch: Watch, previous: Any) -> Callable[..., None]:
    """A profile function noting each watched function called; it passes every event on to a
    Python-level profile function that was set before it."""
    chained = previous if callable(previous) else None

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            watch.see(watch.codes.get(frame.f_code))
        if chained is not None:
            chained(frame, event, arg)

    return profile


@contextlib.contextmanager
def watching(watch: Watch) -> Iterator[Watch]:
    """Run the block with `watch` noting the first watched route that runs (`watch.hit`)."""
    token = _WATCH.set(watch)
    previous = sys.getprofile()
    sys.setprofile(_profiler(watch, previous))
    modes = _Operators() if watch.operators else contextlib.nullcontext()
    try:
        with modes:
            yield watch
    finally:
        sys.setprofile(previous)
        _WATCH.reset(token)


@contextlib.contextmanager
def unwatched() -> Iterator[None]:
    """Run the block unwatched: for code a check runs for itself inside the watched call (gptlib's
    own model beside the student's, say), which is no call of the student's."""
    watch = _WATCH.get()
    if watch is None:
        yield
        return
    watch.paused += 1
    try:
        yield
    finally:
        watch.paused -= 1


def refusal(route: Route, answer_name: str) -> str:
    """The message for an answer that called `route`."""
    return (
        f"your `{answer_name}` called {route.called}: {route.why} Write that part with your own "
        "code, run its cell, then this check again."
    )
