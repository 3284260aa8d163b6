"""Lesson 06's adapter that a graded release ships: a student's gradient measurements are run
on a freshly built model of notebook 06 for every input, so that what one answer leaves in the
parameters' .grad never reaches the next."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from torch import nn

from gptlib.lessons.engine.checks.core import exercise_named, mistake_error
from gptlib.lessons.nb06 import experiments as npl


def fresh_model(norm: str, n_layers: int, seed: int, stale: bool, inputs, targets) -> nn.Module:
    """The input's model; `stale`: an earlier backward pass, on other targets, left its
    gradient in .grad."""
    model = npl.build_model(norm, n_layers, seed=seed)
    if stale:
        _, loss = model(inputs, targets.roll(1, dims=1))
        loss.backward()
    return model


def _on_a_fresh_model(name: str, empty_grad: str, answer: Callable[..., Any]) -> Callable[..., Any]:
    def run(norm, n_layers, seed, stale, inputs, targets):
        model = fresh_model(norm, n_layers, seed, stale, inputs, targets)
        try:
            return answer(model, inputs, targets)
        except (AttributeError, TypeError) as exc:
            if "NoneType" not in str(exc):
                raise
            exercise = exercise_named(name)
            mistake = next(m for m in exercise.mistakes if m.name == empty_grad)
            raise mistake_error(exercise, mistake) from exc

    return run


def on_a_fresh_model(name: str, empty_grad: str) -> Callable[[Any], Callable[..., Any]]:
    """`adapt` of the two exercises: build the input's model, then call the answer on it; an
    answer that reads a gradient that is still None is named as mistake `empty_grad`."""
    return functools.partial(_on_a_fresh_model, name, empty_grad)


# --- properties: conditions any right answer meets (no reference needed) ---


def zero_mean_per_token(out, x, gamma, beta, eps):
    normalised = (out - beta) / gamma
    worst = normalised.mean(dim=-1).abs().max().item()
    if worst > 1e-3:
        return (
            f"after undoing γ and β, a token's features should average 0, but one averages "
            f"{worst:z.3g}; subtract each token's mean over its own d features (the last axis)"
        )
    return None


def nearly_unit_variance(out, x, gamma, beta, eps):
    normalised = ((out - beta) / gamma)[:, :-1]  # the last token is nearly constant: skip it
    variance = normalised.pow(2).mean(dim=-1)
    worst = (variance - 1).abs().max().item()
    if worst > 1e-3:
        return (
            f"after undoing γ and β, a token's features should have variance 1, but one is off "
            f"by {worst:z.3g}"
        )
    return None
