"""Notebook 07's exercise: right next-token losses written in other ways pass."""

import pytest
import torch
import torch.nn.functional as F

from gptlib.lessons.checks import REGISTRY, verify


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
