"""Exercise 3 of notebook 02 (measure-softmax) as its text specifies it: a tuple of four numbers,
each a float or a zero-dimensional tensor, the standard deviation of all the scores together by
either convention. Every answer the text allows passes, quietly; what it rules out is named."""

import math

import numpy as np
import pytest
import torch

from gptlib.lessons.engine.checks import CheckError, check, verify
from gptlib.lessons.engine.checks.core import forget_tries


def _measures(q, k, upstream, scaled, *, correction=1):
    """The four measures as zero-dimensional tensors, the last three still attached to autograd
    (what a student who returns them without .item() hands back)."""
    z = torch.einsum("nd,nkd->nk", q, k) / (math.sqrt(q.shape[-1]) if scaled else 1.0)
    z.requires_grad_(True)
    p = torch.softmax(z, dim=-1)
    (grad,) = torch.autograd.grad((p * upstream).sum(), z, create_graph=True)
    entropy = -(p * torch.log_softmax(z, dim=-1)).sum(-1)
    return (
        z.detach().std(correction=correction),
        p.amax(-1).mean(),
        entropy.mean(),
        grad.norm(dim=-1).mean(),
    )


READINGS = {
    "floats": lambda *a: tuple(x.item() for x in _measures(*a)),
    "zero-dimensional tensors attached to autograd": _measures,
    "a list": lambda *a: [x.item() for x in _measures(*a)],
    "NumPy floats": lambda *a: tuple(np.float64(x.item()) for x in _measures(*a)),
    "std divided by the count": lambda *a: _measures(*a, correction=0),
    "std divided by the count minus one": lambda *a: _measures(*a, correction=1),
}


@pytest.mark.parametrize("answer", READINGS.values(), ids=READINGS)
def test_every_reading_the_text_allows_passes_without_a_note(answer, capsys):
    forget_tries("measure-softmax")

    def measure_softmax(q, k, upstream, scaled):
        return answer(q, k, upstream, scaled)

    check("measure-softmax", measure_softmax, namespace={})
    shown = capsys.readouterr()
    assert shown.out.startswith("✔ measure-softmax: correct"), shown
    assert "Note:" not in shown.out and not shown.err  # nothing to worry a right answer


@pytest.mark.parametrize(
    "answer",
    [
        lambda *a: torch.stack([x.detach() for x in _measures(*a)]),
        lambda *a: dict(zip("abcd", (x.item() for x in _measures(*a)), strict=True)),
    ],
    ids=["one tensor of four", "a dict"],
)
def test_what_the_text_rules_out_is_told_as_such(answer):
    forget_tries("measure-softmax")
    with pytest.raises(CheckError, match="it should return a tuple of 4 items, but returned"):
        verify("measure-softmax", answer)


def test_the_std_of_each_row_averaged_is_named():
    def per_row(q, k, upstream, scaled):
        z = torch.einsum("nd,nkd->nk", q, k) / (math.sqrt(q.shape[-1]) if scaled else 1.0)
        return (
            z.std(dim=-1).mean().item(),
            *(x.item() for x in _measures(q, k, upstream, scaled)[1:]),
        )

    forget_tries("measure-softmax")
    with pytest.raises(CheckError) as info:
        verify("measure-softmax", per_row)
    assert info.value.mistake == "std-per-row"
