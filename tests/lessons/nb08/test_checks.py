"""Notebook 08's exercises: right batches, training loops, counts of choices and nuclei written
in other ways pass (other formulas, other torch calls, float64, other bases, other
loop shapes), the references agree with computations made another way (the library's batch
sampler and Trainer, hand-computed numbers), and the mistakes that look alike are told apart
(an exp that overflows, a p · ln p that meets 0 · ln 0; gradients cleared before the update,
an update before backward)."""

import functools

import pytest
import torch
import torch.nn.functional as F

from gptlib.data.batches import BatchSampler
from gptlib.lessons.engine.checks import REGISTRY, CheckError, verify
from gptlib.lessons.engine.checks.core import forget_tries
from gptlib.lessons.nb08.checks import LoopCase, _flawed_train, loop_model, run_loop
from gptlib.model import GPT, GPTConfig
from gptlib.train import TrainConfig, Trainer

# --- get_batch -------------------------------------------------------------------------------


def _batch_by_unfold(ids, batch_size, block_size, generator):
    windows = ids.unfold(0, block_size + 1, 1)  # [N − T, T + 1]: every window and its target
    rows = windows[torch.randint(0, len(windows), (batch_size,), generator=generator)]
    return rows[:, :-1], rows[:, 1:]


def _batch_by_offsets(ids, batch_size, block_size, generator):
    starts = torch.randint(high=len(ids) - block_size, size=(batch_size, 1), generator=generator)
    index = starts + torch.arange(block_size)
    return ids[index], ids[index + 1]


def _batch_without_replacement(ids, batch_size, block_size, generator):
    starts = torch.randperm(len(ids) - block_size, generator=generator)[:batch_size].tolist()
    x = torch.stack([ids[s : s + block_size] for s in starts])
    return x, torch.stack([ids[s + 1 : s + 1 + block_size] for s in starts])


def _batch_by_multinomial(ids, batch_size, block_size, generator):
    weights = torch.ones(len(ids) - block_size)
    starts = torch.multinomial(weights, batch_size, replacement=True, generator=generator)
    x = torch.empty(batch_size, block_size, dtype=torch.long)
    y = torch.empty_like(x)
    for row, s in enumerate(starts.tolist()):
        x[row], y[row] = ids[s : s + block_size], ids[s + 1 : s + block_size + 1]
    return x, y


BATCHES = {
    "unfold": _batch_by_unfold,
    "offsets of a [B, 1] draw": _batch_by_offsets,
    "randperm, without replacement": _batch_without_replacement,
    "multinomial and a loop": _batch_by_multinomial,
}


@pytest.mark.parametrize("answer", BATCHES.values(), ids=BATCHES)
def test_other_right_batches_pass(answer):
    assert verify("get-batch", answer) == 2


def test_the_reference_draws_the_batches_of_the_library_sampler():
    """The notebook's runs and gptlib's `BatchSampler` see the same windows for the same seed."""
    ids = torch.randint(65, (5_000,), generator=torch.Generator().manual_seed(0))
    sampler = BatchSampler(ids, 12, 64, seed=3)
    generator = torch.Generator().manual_seed(3)
    for _ in range(3):
        mine = REGISTRY["get-batch"].reference(ids, 12, 64, generator)
        for got, expected in zip(mine, sampler.sample(), strict=True):
            assert torch.equal(got, expected)


def test_a_batch_of_floats_or_of_the_wrong_shape_is_named_in_words():
    def floats(ids, batch_size, block_size, generator):
        x, y = _batch_by_offsets(ids, batch_size, block_size, generator)
        return x.float(), y.float()

    def flat(ids, batch_size, block_size, generator):
        x, y = _batch_by_offsets(ids, batch_size, block_size, generator)
        return x.flatten(), y.flatten()

    with pytest.raises(CheckError, match="x should be a tensor of token ids"):
        verify("get-batch", floats)
    with pytest.raises(CheckError, match=r"x has shape \[32\]; a batch is \[batch_size"):
        verify("get-batch", flat)


# --- the training loop ------------------------------------------------------------------------


def _train_by_tokens(model, get_batch, eval_batches, steps, lr, eval_every):
    """Estimates as a mean over every token (reduction="sum"), in inference mode, after each
    step; the optimizer's multi-tensor kernel."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr, foreach=True)

    def mean_loss(batches):
        was = model.training
        model.eval()
        total, count = 0.0, 0
        with torch.inference_mode():
            for x, y in batches:
                logits, _ = model(x)
                total += F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="sum").item()
                count += y.numel()
        model.train(was)
        return total / count

    history = {"losses": [], "steps": [0], "train": [], "val": []}
    history["train"].append(mean_loss(eval_batches["train"]))
    history["val"].append(mean_loss(eval_batches["val"]))
    for step in range(1, steps + 1):
        x, y = get_batch()
        model.zero_grad()
        loss = model(x, y)[1]
        loss.backward()
        opt.step()
        history["losses"].append(float(loss.detach()))
        if step % eval_every == 0:
            history["steps"].append(step)
            for split in ("train", "val"):
                history[split].append(mean_loss(eval_batches[split]))
    return history["losses"], history["steps"], history["train"], history["val"]


def _train_in_float64_tensors(model, get_batch, eval_batches, steps, lr, eval_every):
    """Estimates as detached float64 tensors from torch.stack(...).mean(), losses as 0-d
    tensors, the estimate decorated with no_grad, zero_grad(set_to_none=False)."""
    optimizer = torch.optim.AdamW(params=list(model.parameters()), lr=lr)

    @torch.no_grad()
    def estimate(split):
        model.eval()
        out = torch.stack([model(x, y)[1].double() for x, y in eval_batches[split]]).mean()
        model.train()
        return out

    losses, marks, train_curve, val_curve = [], [], [], []
    step = 0
    while True:
        if step % eval_every == 0:
            marks.append(step)
            train_curve.append(estimate("train"))
            val_curve.append(estimate("val"))
        if step == steps:
            return losses, marks, train_curve, val_curve
        x, y = get_batch()
        optimizer.zero_grad(set_to_none=False)
        loss = model(x, y)[1]
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
        step += 1


LOOPS = {
    "mean over tokens in inference mode, foreach AdamW": _train_by_tokens,
    "float64 tensors, a while loop": _train_in_float64_tensors,
}


@pytest.mark.parametrize("answer", LOOPS.values(), ids=LOOPS)
def test_other_right_loops_pass(answer):
    assert verify("train", answer) == 3


def test_the_reference_loop_is_the_library_trainer_with_its_extras_turned_off():
    """Trainer at a constant rate (no warmup, min_lr = lr), no clipping, AdamW's default weight
    decay on every parameter and its default betas: the same estimates as the reference."""
    torch.manual_seed(0)
    ids = torch.randint(11, (400,), generator=torch.Generator().manual_seed(1))
    train_ids, val_ids = ids[:300], ids[300:]
    config = TrainConfig(steps=8, batch_size=4, block_size=8, lr=1e-2, min_lr=1e-2,
                         warmup_steps=0, weight_decay=0.01, beta2=0.999, grad_clip=0.0,
                         eval_interval=4, eval_batches=3, seed=7)  # fmt: skip
    model = GPT(GPTConfig(vocab_size=11, d_model=16, n_heads=2, n_layers=1, max_len=8))
    twin = GPT(model.config)
    twin.load_state_dict(model.state_dict())
    trainer = Trainer(model, train_ids, val_ids, config)
    trainer.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)  # one group, decay 0.01
    history = trainer.run(progress=False)
    losses, steps, train_est, val_est = REGISTRY["train"].reference(
        twin, BatchSampler(train_ids, 4, 8, seed=7).sample, trainer.eval_sets, 8, 1e-2, 4
    )
    assert steps == history.eval_step == [0, 4, 8]
    torch.testing.assert_close(losses, history.train_loss, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(train_est, history.eval_train_loss, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(val_est, history.eval_val_loss, rtol=1e-5, atol=1e-6)


def test_the_reference_loop_learns_and_each_flaw_changes_what_it_returns():
    run = run_loop(REGISTRY["train"].reference)
    case = REGISTRY["train"].inputs()[0][0]
    good = run(case)
    assert good[3][-1] < good[3][0] - 0.1  # the held-out estimate fell
    seen = {repr(good)}
    flaws = (
        "zero_grad forgotten",
        "update without gradients",
        "optimizer made every step",
        "dropout on in estimates",
        "gradients on in estimates",
        "estimates summed",
    )
    for flaw in flaws:
        out = run_loop(functools.partial(_flawed_train, flaw=flaw))(case)
        assert repr(out) not in seen, flaw
        seen.add(repr(out))
    frozen = run_loop(functools.partial(_flawed_train, flaw="update without gradients"))(case)
    assert frozen[3][0] == frozen[3][-1]  # nothing was learned


def test_a_step_before_backward_stops_the_loop_as_torch_would_and_is_named():
    step_first = functools.partial(_flawed_train, flaw="step before backward")
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        run_loop(step_first)(REGISTRY["train"].inputs()[0][0])
    forget_tries()
    with pytest.raises(CheckError) as info:
        verify("train", step_first)
    assert info.value.mistake == "step-before-backward"


def test_clearing_after_backward_is_named_like_clearing_before_the_step():
    """Both leave every update without gradients: one mistake, one message for both orders."""

    def cleared_after_backward(model, get_batch, eval_batches, steps, lr, eval_every):
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
        est = functools.partial(_estimate, model)
        out = [], [0], [est(eval_batches["train"])], [est(eval_batches["val"])]
        for step in range(1, steps + 1):
            _, loss = model(*get_batch())
            loss.backward()
            optimizer.zero_grad()
            optimizer.step()
            out[0].append(loss.item())
            if step % eval_every == 0:
                out[1].append(step)
                out[2].append(est(eval_batches["train"]))
                out[3].append(est(eval_batches["val"]))
        return out

    forget_tries()
    with pytest.raises(CheckError) as info:
        verify("train", cleared_after_backward)
    assert info.value.mistake == "update-without-gradients"


def test_an_estimate_added_after_the_loop_is_named_for_reading_after_the_last_as_one_more():
    """A student trial read "after every eval_every steps and after the last" as one estimate
    more, and got only 'a list of 4 items' and a general hint."""

    def one_more_at_the_end(model, get_batch, eval_batches, steps, lr, eval_every):
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
        est = functools.partial(_estimate, model)
        out = [], [0], [est(eval_batches["train"])], [est(eval_batches["val"])]
        for step in range(1, steps + 1):
            _, loss = model(*get_batch())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            out[0].append(loss.item())
            if step % eval_every == 0:
                out[1].append(step)
                out[2].append(est(eval_batches["train"]))
                out[3].append(est(eval_batches["val"]))
        out[1].append(steps)  # and "after the last"
        out[2].append(est(eval_batches["train"]))
        out[3].append(est(eval_batches["val"]))
        return out

    forget_tries()
    with pytest.raises(CheckError) as info:
        verify("train", one_more_at_the_end)
    assert info.value.mistake == "last-estimate-twice"


@torch.no_grad()
def _estimate(model, batches):
    model.eval()
    mean = sum(model(x, y)[1].item() for x, y in batches) / len(batches)
    model.train()
    return mean


def test_a_loop_that_returns_a_dict_is_told_what_to_return():
    def as_dict(*args):
        losses, steps, train_est, val_est = _train_by_tokens(*args)
        return {"losses": losses, "steps": steps, "train": train_est, "val": val_est}

    with pytest.raises(CheckError, match="train should return four lists"):
        verify("train", as_dict)


def test_the_check_models_are_the_kinds_the_notebook_trains():
    """A gptlib GPT with dropout (estimates differ in training mode) and a model that is
    neither a GPT nor has dropout (a loop must not assume a GPT)."""
    gpt = loop_model("gpt", 11)
    assert isinstance(gpt, GPT) and gpt.config.dropout > 0
    assert not isinstance(loop_model("bigram", 11), GPT)
    assert {c[0].model for c in REGISTRY["train"].inputs()} == {"gpt", "bigram"}
    assert all(isinstance(c[0], LoopCase) for c in REGISTRY["train"].inputs())


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
    assert verify("effective-choices", answer) == 5


def test_uniform_rows_leave_v_choices_and_a_certain_row_one():
    reference = REGISTRY["effective-choices"].reference
    torch.testing.assert_close(reference(torch.zeros(2, 7), 1.0), torch.full((2,), 7.0))
    certain = torch.tensor([[50.0, 0.0, 0.0, 0.0]])
    torch.testing.assert_close(reference(certain, 1.0), torch.ones(1), atol=1e-6, rtol=0)


def _probabilities_over_t(logits, temperature):
    p = F.softmax(logits, dim=-1)
    p = p / temperature
    return (-(p * (p + 1e-30).log()).sum(-1)).exp()


def _log_probabilities_over_t(logits, temperature):
    log_p = F.log_softmax(logits, -1) / temperature
    return torch.exp(-torch.sum(torch.exp(log_p) * log_p, dim=-1))


AFTER_THE_SOFTMAX = {
    "probabilities divided": (_probabilities_over_t, "temperature-after-softmax"),
    "log-probabilities divided": (_log_probabilities_over_t, "temperature-on-log-probabilities"),
}


@pytest.mark.parametrize(("answer", "mistake"), AFTER_THE_SOFTMAX.values(), ids=AFTER_THE_SOFTMAX)
def test_a_temperature_applied_after_the_softmax_is_named_not_sent_to_the_range(answer, mistake):
    with pytest.raises(CheckError) as info:
        verify("effective-choices", answer)
    assert info.value.mistake == mistake
    assert "before the softmax" in info.value.detail


def test_an_exp_without_the_max_shift_is_named_from_the_low_temperature_case():
    def plain_exp(logits, temperature):
        e = torch.exp(logits / temperature)
        p = e / e.sum(-1, keepdim=True)
        return torch.exp(-(p * p.log()).sum(-1))

    with pytest.raises(CheckError, match="at a low one the divided logits are large") as info:
        verify("effective-choices", plain_exp)
    assert info.value.mistake == "exp-overflows"


def test_p_log_p_after_a_softmax_is_named_for_zero_times_log_zero_not_for_overflow():
    """softmax subtracts the maximum, so nothing overflows; at a low temperature some p round to
    0 and 0 · ln 0 is NaN (issue 33)."""

    def softmax_then_p_log_p(logits, temperature):
        p = torch.softmax(logits / temperature, dim=-1)
        return torch.exp(-(p * torch.log(p)).sum(-1))

    forget_tries()
    with pytest.raises(CheckError, match=r"0 · \(−∞\), which is NaN") as info:
        verify("effective-choices", softmax_then_p_log_p)
    assert info.value.mistake == "zero-times-log-zero"


def test_the_low_temperature_cases_overflow_an_exp_and_underflow_a_probability():
    cases = REGISTRY["effective-choices"].inputs()
    overflow, underflow = cases[3], cases[4]
    scaled = overflow[0] / overflow[1]
    assert scaled.min() > 88.8 and (scaled.max(-1).values - scaled.min(-1).values).max() < 11
    assert (torch.softmax(underflow[0] / underflow[1], -1) == 0).any()


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


def _top_p_without_the_way_back(logits, p):
    probs = logits.softmax(dim=-1)
    sorted_probs, _ = torch.sort(probs, dim=-1, descending=True)
    keep = torch.cumsum(sorted_probs, dim=-1) - sorted_probs < p
    return torch.where(keep, logits, torch.tensor(float("-inf"))).softmax(dim=-1)


def _top_p_returned_sorted(logits, p):
    probs, _ = logits.softmax(dim=-1).sort(dim=-1, descending=True)
    keep = probs.cumsum(dim=-1) - probs < p
    kept = probs * keep
    return kept / kept.sum(dim=-1, keepdim=True)


@pytest.mark.parametrize(
    ("answer", "mistake"),
    [
        (_top_p_without_the_way_back, "decision-not-mapped-back"),
        (_top_p_returned_sorted, "left-in-sorted-order"),
    ],
)
def test_a_top_p_decision_left_in_sorted_order_is_named(answer, mistake):
    with pytest.raises(CheckError) as raised:
        verify("top-p-probabilities", answer)
    assert raised.value.mistake == mistake


# ---------------------------------------------------------------- read for every exercise
# tests/lessons/engine/checks/test_every_exercise.py runs, for each exercise of this lesson,
# every right answer written another way (at least two) through its check, and holds the one
# named in INDEPENDENT, which shares no code with the reference, to not copying its formula.
RIGHT_ANSWERS = {
    "get-batch": BATCHES,
    "train": LOOPS,
    "effective-choices": CHOICES,
    "top-p-probabilities": {
        "searchsorted": _top_p_by_searchsorted,
        "float64 loops": _top_p_in_float64_by_loops,
    },
}
INDEPENDENT = {
    "get-batch": "unfold",
    "train": "mean over tokens in inference mode, foreach AdamW",
    "effective-choices": "torch.special.entr",
    "top-p-probabilities": "searchsorted",
}
