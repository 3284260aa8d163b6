"""Notebook 08's exercises: right losses, temperatures and top-ks written in other ways pass
(other formulas, float64, an nn.Module), and a temperature softmax without the max shift fails
at a low temperature only."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from gptlib.lessons.checks import REGISTRY, CheckError, verify


def _loss_by_gather(logits, tokens):
    log_probs = logits[:, :-1].log_softmax(-1)
    return -log_probs.gather(-1, tokens[:, 1:, None]).mean()


LOSSES = {
    "[B, V, T] form": lambda lo, tk: F.cross_entropy(lo[:, :-1].transpose(1, 2), tk[:, 1:]),
    "log_softmax and gather": _loss_by_gather,
    "nll_loss in float64": lambda lo, tk: F.nll_loss(
        F.log_softmax(lo[:, :-1].double(), -1).flatten(0, 1), tk[:, 1:].flatten()
    ),
    "nn.CrossEntropyLoss": lambda lo, tk: torch.nn.CrossEntropyLoss()(
        lo[:, :-1].reshape(-1, lo.shape[-1]), tk[:, 1:].reshape(-1)
    ),
}


@pytest.mark.parametrize("answer", LOSSES.values(), ids=LOSSES)
def test_other_right_losses_pass(answer):
    verify("next-token-loss", answer)


def test_the_reference_loss_is_the_mean_negative_log_likelihood():
    for logits, tokens in REGISTRY["next-token-loss"].inputs():
        probs = logits.softmax(-1)
        B, T, _ = logits.shape
        nll = [-probs[b, t, tokens[b, t + 1]].log() for b in range(B) for t in range(T - 1)]
        torch.testing.assert_close(
            REGISTRY["next-token-loss"].reference(logits, tokens), torch.stack(nll).mean()
        )


class TemperatureSoftmax(nn.Module):
    """A correct answer written as a module: its instance is the student's function."""

    def forward(self, logits, temperature):
        return nn.Softmax(dim=-1)(logits / temperature)


TEMPERATURES = {
    "F.softmax": lambda lo, t: F.softmax(lo / t, dim=-1),
    "exp of log_softmax": lambda lo, t: (lo * (1 / t)).log_softmax(-1).exp(),
    "max shift in float64": lambda lo, t: (
        lambda z: (
            (z - z.amax(-1, keepdim=True)).exp()
            / (z - z.amax(-1, keepdim=True)).exp().sum(-1, keepdim=True)
        )
    )(lo.double() / t),
    "an nn.Module": TemperatureSoftmax(),
}


@pytest.mark.parametrize("answer", TEMPERATURES.values(), ids=TEMPERATURES)
def test_other_right_temperatures_pass(answer):
    verify("temperature-probabilities", answer)


def test_a_plain_exp_fails_at_a_low_temperature_only():
    def plain(logits, temperature):
        e = (logits / temperature).exp()
        return e / e.sum(-1, keepdim=True)

    *ordinary, (logits, low) = REGISTRY["temperature-probabilities"].inputs()
    assert low <= 0.05
    for args in ordinary:
        torch.testing.assert_close(
            plain(*args), REGISTRY["temperature-probabilities"].reference(*args)
        )
    with pytest.raises(CheckError, match="At a low temperature") as info:
        verify("temperature-probabilities", plain)
    assert info.value.mistake == "exp without the max shift"


def _top_k_by_scatter(logits, k):
    top = torch.topk(logits, k, dim=-1)
    kept = torch.full_like(logits, float("-inf")).scatter(-1, top.indices, top.values)
    return kept.softmax(-1)


def _top_k_by_renormalising(logits, k):
    probs = logits.softmax(-1)
    kth = probs.sort(dim=-1, descending=True).values[:, k - 1 : k]
    kept = torch.where(probs >= kth, probs, torch.zeros_like(probs))
    return kept / kept.sum(-1, keepdim=True)


def _top_k_by_kthvalue(logits, k):
    kth = logits.kthvalue(logits.shape[-1] - k + 1, dim=-1, keepdim=True).values
    return F.softmax(torch.where(logits >= kth, logits, -1e9), dim=-1)


def _top_k_in_float64(logits, k):
    z = logits.double()
    kth = z.topk(k, dim=-1).values[:, -1:]
    return z.masked_fill(z < kth, float("-inf")).softmax(-1)


TOP_KS = [_top_k_by_scatter, _top_k_by_renormalising, _top_k_by_kthvalue, _top_k_in_float64]


@pytest.mark.parametrize("answer", TOP_KS, ids=lambda f: f.__name__)
def test_other_right_top_ks_pass(answer):
    verify("top-k-probabilities", answer)


def test_top_k_inputs_hold_no_ties_at_the_kth_logit():
    for logits, _ in REGISTRY["top-k-probabilities"].inputs():
        for row in logits:
            assert row.unique().numel() == row.numel(), f"a tie in {row}"
