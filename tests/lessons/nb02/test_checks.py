"""Notebook 02's exercises: the references agree with PyTorch, the softmax inputs separate a
stable softmax from fragile ones, right answers written in other ways pass, and a wrong half
of a tuple is named."""

import math
import re

import pytest
import torch
import torch.nn.functional as F

from gptlib.lessons.engine.checks import REGISTRY, CheckError, verify
from gptlib.lessons.nb02.checks import head_with_stale_gradients
from gptlib.model import attention_with_weights, causal_mask


def test_softmax_reference_is_torch_softmax():
    exercise = REGISTRY["softmax-rows"]
    for (scores,) in exercise.inputs():
        torch.testing.assert_close(exercise.reference(scores), torch.softmax(scores, dim=-1))


def test_attention_reference_is_torch_sdpa_and_gptlib():
    exercise = REGISTRY["attention"]
    masks_seen = []
    for q, k, v, *mask in exercise.inputs():
        out, weights = exercise.reference(q, k, v, *mask)
        attn_mask = mask[0] if mask else None
        masks_seen.append(attn_mask)
        torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask))
        ours_out, ours_weights = attention_with_weights(q, k, v, mask=attn_mask)
        torch.testing.assert_close(weights, ours_weights)
    # no mask; the causal mask; a mask that is not causal, every query seeing at least one key
    assert masks_seen[0] is None
    torch.testing.assert_close(masks_seen[1], causal_mask(5))
    assert masks_seen[2].any(-1).all() and masks_seen[2].triu(1).any()


def _shifted(shift):
    def softmax(s):
        e = (s - shift(s)).exp()
        return e / e.sum(dim=-1, keepdim=True)

    return softmax


FRAGILE_SOFTMAXES = {
    "plain exp": (_shifted(lambda s: 0.0), "exp overflows"),
    "plain exp in float64": (_shifted(lambda s: 0.0 * s.double()), "NaN or infinite"),
    "row mean": (_shifted(lambda s: s.mean(-1, keepdim=True)), "exp(150) overflows"),
    "row min": (_shifted(lambda s: s.amin(-1, keepdim=True)), "every exponent at least 0"),
    "row median": (_shifted(lambda s: s.median(-1, keepdim=True).values), "NaN or infinite"),
}


@pytest.mark.parametrize(("answer", "message"), FRAGILE_SOFTMAXES.values(), ids=FRAGILE_SOFTMAXES)
def test_a_softmax_without_the_max_shift_fails_on_a_wide_row(answer, message):
    with pytest.raises(CheckError, match=re.escape(message)) as info:
        verify("softmax-rows", answer)
    assert info.value.mistake is not None or "so that exp cannot overflow" in info.value.detail


def _max_without_keepdim(scores):
    m, _ = torch.max(scores, dim=-1)
    e = torch.exp(scores - m)
    return e / e.sum(-1, keepdim=True)


def _nothing_kept(scores):
    e = torch.exp(scores - scores.max(-1)[0])
    return e / e.sum(-1)


WITHOUT_KEEPDIM = {
    "the max": (_max_without_keepdim, "max-without-keepdim"),
    "the max and the sum": (_nothing_kept, "max-and-sum-without-keepdim"),
}


@pytest.mark.parametrize(("answer", "mistake"), WITHOUT_KEEPDIM.values(), ids=WITHOUT_KEEPDIM)
def test_a_max_without_keepdim_is_named_on_the_square_input_where_it_runs(answer, mistake):
    """The first input is square, where a row maximum without its axis broadcasts silently
    down the columns; the student is told so, not to shift by the maximum they already use."""
    assert REGISTRY["softmax-rows"].inputs()[0][0].shape == (5, 5)
    with pytest.raises(CheckError) as info:
        verify("softmax-rows", answer)
    assert info.value.mistake == mistake
    assert "Keep the reduced axis" in info.value.detail


SOFTMAXES = {
    "log-sum-exp": lambda s: (s - s.logsumexp(dim=-1, keepdim=True)).exp(),
    "max shift in float64": _shifted(lambda s: s.double().max(dim=-1, keepdim=True)[0]),
}


@pytest.mark.parametrize("answer", SOFTMAXES.values(), ids=SOFTMAXES)
def test_other_right_softmaxes_pass(answer):
    verify("softmax-rows", answer)


def _by_einsum(q, k, v, mask=None):
    scores = torch.einsum("bqd,bkd->bqk", q, k).mul(q.shape[-1] ** -0.5)
    if mask is not None:
        scores = torch.where(mask, scores, float("-inf"))
    weights = scores.softmax(-1)
    return torch.einsum("bqk,bkd->bqd", weights, v), weights


def _by_sdpa(q, k, v, mask=None):
    scores = q @ k.mT / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask.logical_not(), -1e9)  # a large finite fill works too
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask), torch.softmax(scores, -1)


def _by_baddbmm_in_float64(q, k, v, mask=None):
    q, k, v = q.double(), k.double(), v.double()
    additive = torch.zeros(q.shape[1], k.shape[1], dtype=torch.float64)
    if mask is not None:
        additive = additive.masked_fill(~mask, float("-inf"))
    scores = torch.baddbmm(additive.expand(q.shape[0], -1, -1), q, k.transpose(1, 2))
    weights = (scores / math.sqrt(q.shape[-1])).softmax(-1)
    return [torch.bmm(weights, v), weights]  # a list is as good as a tuple


def _by_boolean_indexing(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores[..., ~mask] = float("-inf")
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def _renormalised_after_the_softmax(q, k, v, mask=None):
    # Equal to masking before the softmax on paper, and on these inputs in float32 too.
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    if mask is not None:
        weights = weights * mask
        weights = weights / weights.sum(-1, keepdim=True)
    return weights @ v, weights


@pytest.mark.parametrize(
    "answer",
    [
        _by_einsum,
        _by_baddbmm_in_float64,
        _by_boolean_indexing,
        _renormalised_after_the_softmax,
    ],
)
def test_other_right_attentions_pass(answer):
    verify("attention", answer)


def test_an_attention_without_a_mask_argument_is_told_what_raised():
    def attention(q, k, v):  # last round's signature
        return _by_einsum(q, k, v)

    with pytest.raises(CheckError, match="your `attention` stopped: it raised TypeError"):
        verify("attention", attention)


def test_a_tuple_whose_second_item_is_off_names_the_weights_and_the_gap():
    def answer(q, k, v, mask=None):
        out, weights = _by_einsum(q, k, v, mask)
        weights = weights.clone()
        weights[0, 1] = weights[0, 1].flip(-1)  # still a distribution: only the values tell
        return out, weights

    with pytest.raises(CheckError) as info:
        verify("attention", answer)
    assert info.value.mistake is None
    assert re.match(
        r"item 1 \(the weights\) differs from the reference: largest difference [\d.]+ at index "
        r"\[0, 1, \d\] \(yours [\d.]+, the reference's [\d.]+\); [^;]*\. Hint [12] of 2: ",
        info.value.detail,
    ), info.value.detail


# --- measure-softmax: the spread of q·k and what it does to the softmax ----------------------


def _scores(q, k, scaled):
    scores = torch.einsum("nd,nkd->nk", q, k)
    return scores * q.shape[-1] ** -0.5 if scaled else scores


def _measure_by_formulas(q, k, upstream, scaled):
    # Biased std, entropy with xlogy, the Jacobian-vector product written out: no autograd.
    z = _scores(q, k, scaled)
    p = torch.softmax(z, dim=-1)
    grad = p * (upstream - (p * upstream).sum(-1, keepdim=True))  # (diag(p) - p pᵀ) g
    return (
        z.std(correction=0),
        p.amax(-1).mean(),
        -torch.special.xlogy(p, p).sum(-1).mean(),
        torch.linalg.vector_norm(grad, dim=-1).mean(),
    )


def _measure_in_float64_with_autograd_grad(q, k, upstream, scaled):
    q, k, upstream = q.double(), k.double(), upstream.double()
    z = (q[:, None, :] * k).sum(-1)
    if scaled:
        z = z / math.sqrt(q.shape[1])
    z.requires_grad_()
    p = F.softmax(z, -1)
    (grad,) = torch.autograd.grad((p * upstream).sum(), z)
    p = p.detach()
    entropy = -(p * p.clamp_min(1e-300).log()).sum(-1)
    return [
        z.std().item(),
        p.max(-1)[0].mean().item(),
        entropy.mean().item(),
        grad.norm(dim=-1).mean().item(),
    ]


def _measure_row_by_row(q, k, upstream, scaled):
    rows = []
    for q_n, k_n, g_n in zip(q, k, upstream, strict=True):
        z = (k_n @ q_n) / (math.sqrt(len(q_n)) if scaled else 1.0)
        jacobian = torch.diag(torch.softmax(z, 0)) - torch.outer(*(torch.softmax(z, 0),) * 2)
        entropy = torch.distributions.Categorical(logits=z).entropy()
        rows.append((z, torch.softmax(z, 0).max(), entropy, (jacobian @ g_n).norm()))
    z, top, entropy, grad = (torch.stack(column) for column in zip(*rows, strict=True))
    return z.std(), top.mean(), entropy.mean(), grad.mean()


def _measure_with_bmm_and_nan_to_num(q, k, upstream, scaled):
    scores = torch.bmm(k, q.unsqueeze(-1)).squeeze(-1)
    if scaled:
        scores *= 1 / q.size(-1) ** 0.5
    scores.requires_grad = True
    weights = scores.softmax(dim=1)
    torch.sum(weights * upstream).backward()
    weights = weights.detach()
    entropy = torch.nan_to_num(-weights * weights.log()).sum(dim=1)  # 0 · ln 0 → 0
    return (
        float(scores.detach().std()),
        float(weights.max(dim=1).values.mean()),
        float(entropy.mean()),
        float(scores.grad.pow(2).sum(1).sqrt().mean()),
    )


def _measure_by_logsumexp(q, k, upstream, scaled):
    z = _scores(q, k, scaled)
    p = torch.softmax(z, -1)
    entropy = torch.logsumexp(z, -1) - (p * z).sum(-1)  # H = log Σ e^z − Σ p z
    _, vjp = torch.func.vjp(lambda s: torch.softmax(s, -1), z)
    (grad,) = vjp(upstream)
    return z.std(), p.max(-1).values.mean(), entropy.mean(), grad.norm(dim=-1).mean()


MEASURES = {
    "formulas": _measure_by_formulas,
    "float64, autograd.grad, a list": _measure_in_float64_with_autograd_grad,
    "row by row": _measure_row_by_row,
    "bmm, nan_to_num": _measure_with_bmm_and_nan_to_num,
    "logsumexp, func.vjp": _measure_by_logsumexp,
}


@pytest.mark.parametrize("answer", MEASURES.values(), ids=MEASURES)
def test_other_right_measures_pass(answer):
    verify("measure-softmax", answer)


def test_measure_reference_agrees_with_closed_forms():
    exercise = REGISTRY["measure-softmax"]
    for q, k, upstream, scaled in exercise.inputs():
        expected = [float(x) for x in _measure_by_formulas(q, k, upstream, scaled)]
        assert exercise.reference(q, k, upstream, scaled) == pytest.approx(expected, rel=2e-3)


def test_measure_inputs_hold_underflowing_weights_and_both_modes():
    # What the sweep of notebook 02 feeds: 256 queries of 16 keys, scaled and unscaled, and at
    # d_k = 1024 unscaled rows where float32 weights are exactly 0 (0 · ln 0 must not be NaN).
    inputs = REGISTRY["measure-softmax"].inputs()
    assert {scaled for *_, scaled in inputs} == {False, True}
    assert all(q.shape[0] == 256 and k.shape[:2] == (256, 16) for q, k, _, _ in inputs)
    q, k, _, scaled = inputs[1]
    assert q.shape[1] == 1024 and not scaled
    assert (torch.softmax(_scores(q, k, False), -1) == 0).any()


def test_a_softmax_measure_mistake_names_itself_not_a_neighbour():
    # On the first input (scaled) every catalogued mistake gives its own numbers.
    exercise = REGISTRY["measure-softmax"]
    args = exercise.inputs()[0]
    outputs = {m.name: m.implementation(*args) for m in exercise.mistakes}
    reference = exercise.reference(*args)
    for name, got in outputs.items():
        if name == "entropy-nan":  # right on this input; NaN only where weights underflow
            continue
        assert got != pytest.approx(reference, rel=1e-3), name


# --- first-step-gradients: where the gradient of the retrieval head's first step goes ----------


def _answers(values, queried):
    return values[torch.arange(len(queried)), queried]


def _gradients_by_autograd_grad(head, keys, values, queried):
    # No .grad fields at all: stale gradients cannot get in.
    logits, scores = head(keys, values, queried)
    loss = F.cross_entropy(logits, _answers(values, queried))
    g_q, g_k, g_scores = torch.autograd.grad(loss, [head.W_Q.weight, head.W_K.weight, scores])
    return torch.linalg.norm(g_q), torch.linalg.norm(g_k), g_scores * len(queried)


def _gradients_of_the_summed_loss(head, keys, values, queried):
    for parameter in head.parameters():
        parameter.grad = None
    logits, scores = head(keys, values, queried)
    scores.retain_grad()
    F.nll_loss(F.log_softmax(logits, -1), _answers(values, queried), reduction="sum").backward()
    batch = keys.shape[0]
    return head.W_Q.weight.grad.norm() / batch, head.W_K.weight.grad.norm() / batch, scores.grad


def _gradients_example_by_example(head, keys, values, queried):
    logits, scores = head(keys, values, queried)
    losses = F.cross_entropy(logits, _answers(values, queried), reduction="none")
    rows = [
        torch.autograd.grad(losses[b], scores, retain_graph=True)[0][b] for b in range(len(losses))
    ]
    g_q, g_k = torch.autograd.grad(losses.mean(), [head.W_Q.weight, head.W_K.weight])
    return g_q.norm().item(), g_k.norm().item(), torch.stack(rows)


def _gradients_in_float64(head, keys, values, queried):
    head = head.double()
    head.zero_grad(set_to_none=True)
    logits, scores = head(keys, values, queried)
    scores.retain_grad()
    F.cross_entropy(logits, values.gather(1, queried.unsqueeze(1)).squeeze(1)).backward()
    return (
        head.W_Q.weight.grad.pow(2).sum().sqrt(),
        head.W_K.weight.grad.pow(2).sum().sqrt(),
        scores.grad * queried.numel(),
    )


GRADIENTS = {
    "autograd.grad": _gradients_by_autograd_grad,
    "summed loss, grads set to None": _gradients_of_the_summed_loss,
    "example by example": _gradients_example_by_example,
    "float64": _gradients_in_float64,
}


@pytest.mark.parametrize("answer", GRADIENTS.values(), ids=GRADIENTS)
def test_other_right_gradient_measures_pass(answer):
    verify("first-step-gradients", answer)


def test_gradient_reference_agrees_with_the_chain_rule_written_out():
    # ∂L_b/∂z_bj = p_bj (u_bj - Σ_i p_bi u_bi), u_bj = g_b · v_bj, g_b = Rᵀ(softmax - e_y).
    exercise = REGISTRY["first-step-gradients"]
    for spec, keys, values, queried in exercise.inputs():
        head = head_with_stale_gradients(*spec)
        _, _, per_example = exercise.reference(head, keys, values, queried)
        with torch.no_grad():
            logits, scores = head(keys, values, queried)
            pairs = (head.key_emb(keys) + head.value_emb(values)) / math.sqrt(2)
            v = head.W_V(pairs)  # [B, n_pairs, d_model]
            error = torch.softmax(logits, -1) - F.one_hot(_answers(values, queried), 16)
            g = error @ head.readout.weight  # [B, d_model]
            u = (v @ g[:, :, None])[..., 0]  # [B, n_pairs]
            p = torch.softmax(scores, -1)
            expected = p * (u - (p * u).sum(-1, keepdim=True))
        torch.testing.assert_close(per_example, expected, atol=1e-5, rtol=1e-4)


def test_gradient_inputs_are_what_the_notebook_feeds_with_stale_gradients():
    inputs = REGISTRY["first-step-gradients"].inputs()
    assert [spec for spec, *_ in inputs[:2]] == [(512, False, 0), (512, True, 0)]
    assert all(keys.shape == (32, 16) for _, keys, _, _ in inputs[:2])
    head = head_with_stale_gradients(512, False, 0)
    assert head.W_Q.weight.grad is not None and head.W_Q.weight.grad.norm() > 0


# ---------------------------------------------------------------- read for every exercise
# tests/lessons/engine/checks/test_every_exercise.py runs, for each exercise of this lesson,
# every right answer written another way (at least two) through its check, and holds the one
# named in INDEPENDENT, which shares no code with the reference, to not copying its formula.
RIGHT_ANSWERS = {
    "softmax-rows": SOFTMAXES,
    "attention": {
        "einsum": _by_einsum,
        "baddbmm in float64": _by_baddbmm_in_float64,
        "boolean indexing": _by_boolean_indexing,
        "renormalised after the softmax": _renormalised_after_the_softmax,
    },
    "measure-softmax": MEASURES,
    "first-step-gradients": GRADIENTS,
}
INDEPENDENT = {
    "softmax-rows": "log-sum-exp",
    "attention": "einsum",
    "measure-softmax": "formulas",
    "first-step-gradients": "autograd.grad",
}
