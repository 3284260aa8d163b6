"""Notebook 08's exercises: right surprisals, counts of choices and nuclei written in other ways
pass (other formulas, float64, other bases), the reference agrees with the hand-computed and the
library's numbers, and an exp without the max shift fails at a low temperature with a message
that says why."""

import math

import pytest
import torch
import torch.nn.functional as F

from gptlib.lessons.checks import REGISTRY, CheckError, verify

# --- surprisal -------------------------------------------------------------------------------


def _surprisal_by_cross_entropy(logits, tokens):
    return F.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:], reduction="none")


def _surprisal_in_float64(logits, tokens):
    probs = logits[:, :-1].double().softmax(-1)
    picked = torch.take_along_dim(probs, tokens[:, 1:, None], dim=-1)[..., 0]
    return -picked.log()


def _surprisal_from_bits(logits, tokens):
    log2 = logits[:, :-1].log_softmax(-1) / math.log(2)
    return -log2.gather(-1, tokens[:, 1:].unsqueeze(-1)).squeeze(-1) * math.log(2)


SURPRISALS = {
    "cross_entropy without reduction": _surprisal_by_cross_entropy,
    "float64 probabilities": _surprisal_in_float64,
    "bits, converted back to nats": _surprisal_from_bits,
}


@pytest.mark.parametrize("answer", SURPRISALS.values(), ids=SURPRISALS)
def test_other_right_surprisals_pass(answer):
    assert verify("surprisal", answer) == 2


def test_the_mean_surprisal_is_the_models_loss_and_a_certain_guess_costs_nothing():
    logits, tokens = REGISTRY["surprisal"].inputs()[1]
    V = logits.shape[-1]
    mean = REGISTRY["surprisal"].reference(logits, tokens).mean()
    expected = F.cross_entropy(logits[:, :-1].reshape(-1, V), tokens[:, 1:].reshape(-1))
    torch.testing.assert_close(mean, expected)
    uniform = REGISTRY["surprisal"].reference(torch.zeros(1, 3, V), tokens[:1, :3])
    torch.testing.assert_close(uniform, torch.full((1, 2), math.log(V)))


# --- effective choices -------------------------------------------------------------------------


def _choices_in_bits(logits, temperature):
    probs = F.softmax(logits / temperature, dim=-1)
    bits = -(probs * torch.log2(probs.clamp_min(1e-30))).sum(-1)
    return 2**bits


def _choices_in_float64(logits, temperature):
    log_probs = torch.log_softmax(logits.double() / temperature, dim=-1)
    return torch.exp(-(log_probs.exp() * log_probs).sum(-1)).float()


def _choices_by_special_entr(logits, temperature):
    return torch.special.entr(F.softmax(logits / temperature, -1)).sum(-1).exp()


CHOICES = {
    "2 to the entropy in bits": _choices_in_bits,
    "float64": _choices_in_float64,
    "torch.special.entr": _choices_by_special_entr,
}


@pytest.mark.parametrize("answer", CHOICES.values(), ids=CHOICES)
def test_other_right_counts_of_choices_pass(answer):
    assert verify("effective-choices", answer) == 4


def test_uniform_rows_leave_v_choices_and_a_certain_row_one():
    reference = REGISTRY["effective-choices"].reference
    torch.testing.assert_close(reference(torch.zeros(2, 7), 1.0), torch.full((2,), 7.0))
    certain = torch.tensor([[50.0, 0.0, 0.0, 0.0]])
    torch.testing.assert_close(reference(certain, 1.0), torch.ones(1), atol=1e-6, rtol=0)


def test_an_exp_without_the_max_shift_is_named_from_the_low_temperature_case():
    def plain_exp(logits, temperature):
        e = torch.exp(logits / temperature)
        p = e / e.sum(-1, keepdim=True)
        return torch.exp(-(p * p.log()).sum(-1))

    with pytest.raises(CheckError, match="at a low one the divided logits are large") as info:
        verify("effective-choices", plain_exp)
    assert info.value.mistake == "exp-overflows"


# --- top-p -----------------------------------------------------------------------------------


def _top_p_by_searchsorted(logits, p):
    probs = logits.softmax(-1)
    sorted_probs, order = probs.sort(-1, descending=True)
    total = sorted_probs.cumsum(-1)
    n_kept = torch.searchsorted(total, torch.full((len(total), 1), p)) + 1  # reach p
    ranks = torch.empty_like(order).scatter_(
        -1, order, torch.arange(probs.shape[-1]).expand_as(order)
    )
    kept = ranks < n_kept
    return torch.where(kept, probs, 0.0) / torch.where(kept, probs, 0.0).sum(-1, keepdim=True)


def _top_p_in_float64_by_loops(logits, p):
    out = torch.zeros_like(logits)
    for row, row_logits in enumerate(logits.double()):
        probs, total = row_logits.softmax(-1), 0.0
        kept = []
        for index in probs.argsort(descending=True).tolist():
            kept.append(index)
            total += probs[index].item()
            if total >= p:
                break
        out[row, kept] = (probs[kept] / probs[kept].sum()).float()
    return out


@pytest.mark.parametrize("answer", [_top_p_by_searchsorted, _top_p_in_float64_by_loops])
def test_other_right_nuclei_pass(answer):
    assert verify("top-p-probabilities", answer) == 4


def test_the_nucleus_is_one_token_when_it_alone_reaches_p_and_everything_at_p_1():
    reference = REGISTRY["top-p-probabilities"].reference
    peaked = torch.tensor([[4.0, 0.0, 0.0, 0.0]])  # p(first) = e⁴ / (e⁴ + 3) = 0.948
    assert reference(peaked, 0.9).gt(0).sum().item() == 1
    assert reference(peaked, 0.95).gt(0).sum().item() == 2  # one more reaches 0.95
    torch.testing.assert_close(reference(peaked, 1.0), peaked.softmax(-1))


def test_no_running_total_of_the_top_p_inputs_lies_near_p():
    """So that every right answer, in any float order, makes the same cut."""
    for logits, p in REGISTRY["top-p-probabilities"].inputs():
        sorted_probs = logits.softmax(-1).sort(-1, descending=True).values
        assert (sorted_probs.cumsum(-1) - p).abs().min() > 1e-4
