"""Exercises of notebook 08 (train and sample): training batches, the training loop with its
held-out estimate, the number of characters a temperature leaves to choose from, and nucleus
(top-p) sampling. Notebook 07 had the student write the model, its loss, temperature and top-k;
these ask for what it did not."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from gptlib.data.batches import BatchSampler
from gptlib.lessons.engine.checks.compare import describe
from gptlib.lessons.engine.checks.core import CheckError, Exercise, Mistake, Property, register
from gptlib.lessons.engine.checks.delegation import Route
from gptlib.model import GPT, GPTConfig

# --- 1. training batches: random windows and their next characters ---------------------------


def _get_batch(
    ids: torch.Tensor, batch_size: int, block_size: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """ids [N] → x, y [batch_size, block_size]: windows of ids at random starts drawn with
    `generator`, every window equally likely; y[b, t] is the token after x[b, t]."""
    starts = torch.randint(len(ids) - block_size, (batch_size,), generator=generator)
    x = torch.stack([ids[s : s + block_size] for s in starts])
    y = torch.stack([ids[s + 1 : s + block_size + 1] for s in starts])
    return x, y


def _batch_inputs(g: torch.Generator) -> list[tuple[int, int, int, int, int]]:
    """(n tokens, batch_size, block_size, draws, seed): a text with 12 possible windows, 400
    rows drawn in all; and the notebook's batch size on a text with 100 windows, 1,800 rows.
    Either way every start turns up (a miss has a probability below 10⁻⁵), so any uniform way
    of drawing gives the same summary."""
    return [(20, 4, 8, 100, 0), (140, 12, 40, 150, 5)]


def _targets_not_shifted(ids, batch_size, block_size, generator):
    x, _ = _get_batch(ids, batch_size, block_size, generator)
    return x, x.clone()


def _last_window_never_drawn(ids, batch_size, block_size, generator):
    starts = torch.randint(len(ids) - block_size - 1, (batch_size,), generator=generator)
    x = torch.stack([ids[s : s + block_size] for s in starts])
    y = torch.stack([ids[s + 1 : s + block_size + 1] for s in starts])
    return x, y


def _window_past_the_end(ids, batch_size, block_size, generator):
    starts = torch.randint(len(ids) - block_size + 1, (batch_size,), generator=generator)
    x = torch.stack([ids[s : s + block_size] for s in starts])
    y = torch.stack([ids[s + 1 : s + block_size + 1] for s in starts])
    return x, y


def _generator_ignored(ids, batch_size, block_size, generator):
    return _get_batch(ids, batch_size, block_size, None)


BATCH_SUMMARY = (
    "x's rows",
    "y's rows",
    "the smallest start drawn",
    "the largest start drawn",
    "how many different starts were drawn",
    "drawing with the same generator state twice",
    "drawing with another seed",
)


WINDOWS = ("windows of the text", "not all windows of the text")


TARGETS = ("x's windows one token later", "not all x's windows one token later")


SAME = ("the same batch twice", "two different batches")


OTHER = ("another batch", "the same batch")


def summarise_batches(get_batch: Callable[..., Any]) -> Callable[..., tuple]:
    """`adapt`: call get_batch(ids, B, T, generator) `draws` times on a text of `n` distinct
    tokens in random order; return what the batches show (`BATCH_SUMMARY`), not the draws
    themselves, so that any way of drawing uniform starts passes."""

    def run(n: int, batch_size: int, block_size: int, draws: int, seed: int) -> tuple:
        ids = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
        where = torch.empty(n, dtype=torch.long)
        where[ids] = torch.arange(n)  # token → its position in the text
        generator = torch.Generator().manual_seed(seed + 1)
        windows = targets = True
        starts: list[int] = []
        for _ in range(draws):
            x, y = _batch_pair(get_batch(ids, batch_size, block_size, generator))
            _check_batch_shape(x, y, batch_size, block_size)
            for row_x, row_y in zip(x, y, strict=True):
                s = int(where[row_x[0]])
                windows &= s + block_size <= n and torch.equal(row_x, ids[s : s + block_size])
                targets &= s + block_size < n and torch.equal(
                    row_y, ids[s + 1 : s + block_size + 1]
                )
                starts.append(s)
        same = [_batch_pair(get_batch(ids, batch_size, block_size, _seeded(seed))) for _ in "ab"]
        other = _batch_pair(get_batch(ids, batch_size, block_size, _seeded(seed + 7)))
        return (
            WINDOWS[not windows],
            TARGETS[not targets],
            min(starts),
            max(starts),
            len(set(starts)),
            SAME[not torch.equal(same[0][0], same[1][0])],
            OTHER[torch.equal(same[0][0], other[0])],
        )

    return run


def _seeded(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _batch_pair(out: object) -> tuple[torch.Tensor, torch.Tensor]:
    if not (isinstance(out, tuple | list) and len(out) == 2):
        raise CheckError(
            "get-batch",
            f"get_batch should return two tensors, x and y; it returned {describe(out)}",
        )
    x, y = out
    for name, t in (("x", x), ("y", y)):
        if not isinstance(t, torch.Tensor) or t.dtype != torch.long:
            what = f"a {t.dtype} tensor" if isinstance(t, torch.Tensor) else describe(t)
            raise CheckError(
                "get-batch",
                f"{name} should be a tensor of token ids (torch.long, like ids); got {what}",
            )
    return x, y


def _check_batch_shape(x: torch.Tensor, y: torch.Tensor, batch_size: int, block_size: int) -> None:
    expected = [batch_size, block_size]
    for name, t in (("x", x), ("y", y)):
        if list(t.shape) != expected:
            raise CheckError(
                "get-batch",
                f"{name} has shape {list(t.shape)}; a batch is [batch_size, block_size] = "
                f"{expected}: one window of block_size tokens per row",
            )


def windows_of_the_text(out: tuple, *_: object) -> str | None:
    if out[0] != WINDOWS[0]:
        return (
            "a row of x is not a stretch of consecutive tokens of ids: each row must be one "
            "window, ids[s], ids[s + 1], …, in the text's order"
        )
    return None


def targets_one_later(out: tuple, *_: object) -> str | None:
    if out[0] == WINDOWS[0] and out[1] != TARGETS[0]:
        return (
            "a row of y is not its row of x one token later: y[b, t] must be the token that "
            "follows x[b, t] in the text"
        )
    return None


register(
    Exercise(
        name="get-batch",
        notebook="08_train_and_sample",
        reference=_get_batch,
        forbidden=(
            Route(
                "gptlib.data.batches:BatchSampler",
                "gptlib's `BatchSampler`",
                "it draws the batches this exercise asks you to draw.",
            ),
        ),
        make_inputs=_batch_inputs,
        adapt=summarise_batches,
        returns=BATCH_SUMMARY,
        properties=(
            Property("windows of the text", windows_of_the_text),
            Property("targets one token later", targets_one_later),
        ),
        mistakes=(
            Mistake(
                "targets-not-shifted",
                "y is a copy of x: the model would learn to repeat the character it reads. "
                "The target at a position is the character that comes next, so y's window "
                "starts one token later than x's.",
                _targets_not_shifted,
                fix="y = the window ids[s + 1 : s + block_size + 1] for the same start s.",
            ),
            Mistake(
                "last-window-never-drawn",
                "the last window of the text is never drawn: you allowed one start too few. "
                "A window needs block_size + 1 tokens (its inputs and the one after them), so "
                "a text of N tokens has N − block_size possible starts, the last at "
                "N − block_size − 1. The chapter's loop has the same slip; on a million "
                "characters it costs one window, on a short text much more.",
                _last_window_never_drawn,
                fix="draw starts with torch.randint(len(ids) - block_size, (batch_size,), "
                "generator=generator).",
            ),
            Mistake(
                "window-past-the-end",
                "a start near the end left its target window short: you allowed one start too "
                "many. A window needs block_size + 1 tokens (its inputs and the one after "
                "them), so the last valid start is N − block_size − 1.",
                _window_past_the_end,
                fix="draw starts with torch.randint(len(ids) - block_size, (batch_size,), "
                "generator=generator).",
            ),
            Mistake(
                "generator-ignored",
                "your batches do not come from the generator you were given: the same "
                "generator state drew different batches. Draw with it, so that a run can be "
                "repeated exactly and two runs can share their batches.",
                _generator_ignored,
                fix="pass generator=generator to torch.randint.",
            ),
        ),
        hints=(
            "A training example is a window of block_size tokens and, as targets, the same "
            "window moved one token later. It needs block_size + 1 tokens of the text: count "
            "how many places such a window can start, and draw starts uniformly among them "
            "with the generator you are given.",
            "Draw batch_size random starts in one call, from 0 up to and including "
            "N − block_size − 1; cut each input window at its start and each target window "
            "one token later; stack the rows into [batch_size, block_size] tensors.",
        ),
    )
)

# --- 2. the training loop and its held-out estimate -------------------------------------------


def _train(
    model: nn.Module,
    get_batch: Callable[[], tuple[torch.Tensor, torch.Tensor]],
    eval_batches: dict[str, list[tuple[torch.Tensor, torch.Tensor]]],
    steps: int,
    lr: float,
    eval_every: int,
) -> tuple[list[float], list[int], list[float], list[float]]:
    """Train `model` with AdamW for `steps` steps of get_batch() batches; at step 0 and every
    `eval_every` steps, estimate the mean loss on each split's fixed batches.

    Returns (losses, eval_steps, train_estimates, val_estimates): the loss of each step's
    batch, and the estimates at steps 0, eval_every, …, steps, made without dropout and
    without gradients.
    """
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)

    @torch.no_grad()
    def estimate(batches):
        model.eval()
        mean = sum(model(x, y)[1].item() for x, y in batches) / len(batches)
        model.train()
        return mean

    losses, eval_steps, train_estimates, val_estimates = [], [], [], []
    for step in range(steps + 1):
        if step % eval_every == 0:
            eval_steps.append(step)
            train_estimates.append(estimate(eval_batches["train"]))
            val_estimates.append(estimate(eval_batches["val"]))
        if step == steps:
            break
        x, y = get_batch()
        _, loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, eval_steps, train_estimates, val_estimates


FLAWS = (
    "zero_grad forgotten",
    "update without gradients",
    "step before backward",
    "optimizer made every step",
    "lr ignored",
    "dropout on in estimates",
    "training mode not restored",
    "gradients on in estimates",
    "held-out on training batches",
    "estimates on new training batches",
    "estimates summed",
    "running total not reset",
    "last batch only",
    "no estimate at step 0",
    "no estimate at the end",
    "last estimate twice",
    "loss tensors kept",
)


def _flawed_train(model, get_batch, eval_batches, steps, lr, eval_every, *, flaw: str):
    """The training loop with one of `FLAWS`: what the catalogue's mistakes compute."""
    if flaw not in FLAWS:
        raise ValueError(f"flaw must be one of {FLAWS}, got {flaw!r}")
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3 if flaw == "lr ignored" else lr)
    running = [0.0, 0.0]  # "running total not reset": one total per split for the whole run

    def estimate(split):
        batches = eval_batches["train" if flaw == "held-out on training batches" else split]
        if flaw == "estimates on new training batches":
            batches = [get_batch() for _ in batches]
        if flaw != "dropout on in estimates":
            model.eval()
        with torch.set_grad_enabled(flaw == "gradients on in estimates"):
            values = [model(x, y)[1].item() for x, y in batches]
        if flaw != "training mode not restored":
            model.train()
        if flaw == "estimates summed":
            return sum(values)
        if flaw == "last batch only":
            return values[-1]
        if flaw == "running total not reset":
            i = ("train", "val").index(split)
            running[i] += sum(values)
            return running[i] / len(values)
        return sum(values) / len(values)

    losses, eval_steps, train_estimates, val_estimates = [], [], [], []
    for step in range(steps + 1):
        due = step % eval_every == 0
        due &= not (step == 0 and flaw == "no estimate at step 0")
        due &= not (step == steps and flaw == "no estimate at the end")
        if due:
            eval_steps.append(step)
            train_estimates.append(estimate("train"))
            val_estimates.append(estimate("val"))
        if step == steps:
            if flaw == "last estimate twice":  # "after the last" read as one estimate more
                eval_steps.append(step)
                train_estimates.append(estimate("train"))
                val_estimates.append(estimate("val"))
            break
        if flaw == "optimizer made every step":
            optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
        x, y = get_batch()
        _, loss = model(x, y)
        if flaw == "update without gradients":
            optimizer.zero_grad()
            optimizer.step()
            loss.backward()
        elif flaw == "step before backward":
            optimizer.step()
            optimizer.zero_grad()
            loss.backward()
        else:
            if flaw != "zero_grad forgotten":
                optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        losses.append(loss if flaw == "loss tensors kept" else loss.item())
    return losses, eval_steps, train_estimates, val_estimates


@dataclass(frozen=True)
class LoopCase:
    """One input of the `train` check: which small model, and the loop's settings."""

    model: str  # "gpt": a one-layer GPT with dropout 0.2; "bigram": a table of logits
    steps: int
    lr: float
    eval_every: int


def _loop_inputs(g: torch.Generator) -> list[tuple[LoopCase]]:
    """A GPT with dropout (so that estimates in training mode differ) at two settings, and a
    table-of-logits model (no dropout, no `config`): a loop must not assume a GPT."""
    return [
        (LoopCase("gpt", steps=6, lr=1e-2, eval_every=2),),
        (LoopCase("bigram", steps=4, lr=3e-2, eval_every=4),),
        (LoopCase("gpt", steps=3, lr=3e-3, eval_every=1),),
    ]


def _flaw(name: str) -> Callable[..., Any]:
    return functools.partial(_flawed_train, flaw=name)


LOOP_RETURNS = (
    "the loss of each step's batch",
    "the steps of the estimates",
    "the training estimates",
    "the held-out estimates",
    "how the model ran",
)


TRAINING = "training batches"


FIXED = "fixed batches"


GRAPHS_KEPT = "returned tensors that keep their graphs"


class _Bigram(nn.Module):
    """The smallest language model: a table of next-token logits. idx [B, T] → (logits
    [B, T, V], mean cross-entropy or None)."""

    def __init__(self, vocab_size: int) -> None:
        super().__init__()
        self.table = nn.Embedding(vocab_size, vocab_size)

    def forward(self, idx, targets=None):
        logits = self.table(idx)
        loss = None if targets is None else F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        return logits, loss


def loop_model(kind: str, vocab_size: int) -> nn.Module:
    if kind == "bigram":
        return _Bigram(vocab_size)
    config = GPTConfig(
        vocab_size=vocab_size, d_model=16, n_heads=2, n_layers=1, max_len=8, dropout=0.2
    )
    return GPT(config, init="pytorch")


def run_loop(train: Callable[..., Any]) -> Callable[[LoopCase], tuple]:
    """`adapt`: build the case's model (seeded), a batch source and fixed batches of two token
    streams, run `train` with the dropout seeded, and return its curves as numbers with how the
    model ran on each kind of batch (gradients, training or evaluation mode)."""

    def run(case: LoopCase) -> tuple:
        V, B, T = 11, 4, 8
        data = torch.Generator().manual_seed(1)
        text = (torch.arange(500) * 3 + torch.randint(2, (500,), generator=data)) % V  # learnable
        train_ids, val_ids = text[:350], text[350:]
        eval_batches = {
            split: [tuple(t.contiguous() for t in sampler.sample()) for _ in range(3)]
            for split, sampler in (
                ("train", BatchSampler(train_ids, B, T, seed=2)),
                ("val", BatchSampler(val_ids, B, T, seed=3)),
            )
        }
        fixed = {x.data_ptr() for batches in eval_batches.values() for x, _ in batches}
        handed: set[int] = set()
        sampler = BatchSampler(train_ids, B, T, seed=4)

        def get_batch() -> tuple[torch.Tensor, torch.Tensor]:
            x, y = (t.contiguous() for t in sampler.sample())
            handed.add(x.data_ptr())
            return x, y

        ran: set[str] = set()

        def note(module: nn.Module, args: tuple) -> None:
            ptr = args[0].data_ptr() if args and isinstance(args[0], torch.Tensor) else None
            kind = FIXED if ptr in fixed else TRAINING if ptr in handed else "other inputs"
            grad = "on" if torch.is_grad_enabled() else "off"
            mode = "training" if module.training else "evaluation"
            ran.add(f"{kind}: gradients {grad}, {mode} mode")

        with torch.random.fork_rng(devices=[]):  # the notebook's own draws stay as they were
            torch.manual_seed(0)
            model = loop_model(case.model, V)
            handle = model.register_forward_pre_hook(note)
            torch.manual_seed(5)  # dropout's draws
            try:
                out = train(model, get_batch, eval_batches, case.steps, case.lr, case.eval_every)
            finally:
                handle.remove()
        curves = _four_curves(out)
        kept = any(isinstance(v, torch.Tensor) and v.requires_grad for c in curves for v in c)
        how = tuple(sorted(ran)) + ((GRAPHS_KEPT,) if kept else ())
        losses, steps, train_est, val_est = (
            _numbers(name, c) for name, c in zip(LOOP_RETURNS, curves, strict=False)
        )
        return losses, [int(s) for s in steps], train_est, val_est, how

    return run


def _four_curves(out: object) -> tuple[Sequence, Sequence, Sequence, Sequence]:
    if not (isinstance(out, tuple | list) and len(out) == 4):
        raise CheckError(
            "train",
            "train should return four lists, (losses, eval_steps, train_estimates, "
            f"val_estimates); it returned {describe(out)}",
        )
    for name, curve in zip(LOOP_RETURNS, out, strict=False):
        if not isinstance(curve, Sequence) or isinstance(curve, str):
            raise CheckError("train", f"{name} should be a list of numbers; got {describe(curve)}")
    return tuple(out)


def _numbers(name: str, curve: Sequence) -> list[float]:
    try:
        return [float(v.detach() if isinstance(v, torch.Tensor) else v) for v in curve]
    except (TypeError, ValueError, RuntimeError):
        kinds = sorted({describe(v) for v in curve})[:2]
        raise CheckError(
            "train",
            f"{name} should be a list of numbers, one per step or estimate; it holds {kinds}",
        ) from None


RAN_WELL = {
    TRAINING: f"{TRAINING}: gradients on, training mode",
    FIXED: f"{FIXED}: gradients off, evaluation mode",
}


def estimates_without_dropout_or_gradients(out: tuple, *_: object) -> str | None:
    wrong = [line for line in out[4] if line.startswith(FIXED) and line != RAN_WELL[FIXED]]
    if wrong:
        return (
            f"the estimates ran with {wrong[0].split(': ')[1]}: they measure the model as it "
            "will be used, without dropout, and nothing is learned from them, so no gradients"
        )
    return None


def training_with_gradients(out: tuple, *_: object) -> str | None:
    wrong = [line for line in out[4] if line.startswith(TRAINING) and line != RAN_WELL[TRAINING]]
    if wrong:
        return (
            f"the training batches ran with {wrong[0].split(': ')[1]}: a training step runs in "
            "training mode (dropout on) with gradients on"
        )
    return None


def plain_numbers(out: tuple, *_: object) -> str | None:
    if GRAPHS_KEPT in out[4]:
        return (
            "your lists hold the loss tensors themselves; each keeps its whole computation "
            "graph alive, so memory grows with every step. Keep plain Python numbers"
        )
    return None


register(
    Exercise(
        name="train",
        notebook="08_train_and_sample",
        reference=_train,
        forbidden=(
            Route(
                "gptlib.train:Trainer",
                "gptlib's `Trainer`",
                "it is the training loop this exercise asks you to write.",
            ),
            Route(
                "gptlib.lessons.shared.experiments.toy:train_losses",
                "the course's `train_losses`",
                "it is a training loop like the one this exercise asks you to write.",
            ),
        ),
        make_inputs=_loop_inputs,
        adapt=run_loop,
        returns=LOOP_RETURNS,
        properties=(
            Property(
                "estimates without dropout or gradients", estimates_without_dropout_or_gradients
            ),
            Property("training steps with gradients", training_with_gradients),
            Property("numbers, not graphs", plain_numbers),
        ),
        mistakes=(
            Mistake(
                "zero-grad-forgotten",
                "the gradients were never cleared: backward adds each batch's gradients to "
                "those already stored, so every step followed the sum of all the batches so far, "
                "not the current one.",
                _flaw("zero_grad forgotten"),
                fix="call optimizer.zero_grad() in every step, before loss.backward().",
            ),
            Mistake(
                "update-without-gradients",
                "the weights never changed: every update ran when the gradients were empty, "
                "either cleared after backward had filled them or not yet computed. Within a "
                "step the order is: clear the old gradients, backpropagate this batch's loss, "
                "then update.",
                _flaw("update without gradients"),
                fix="optimizer.zero_grad(); loss.backward(); optimizer.step(), in that order.",
            ),
            Mistake(
                "step-before-backward",
                "the update ran before backward: it changed the weights in place while the "
                "graph of this batch's loss still needed their old values, so backward failed "
                "(torch says a variable was modified by an inplace operation). Backpropagate "
                "first, then update.",
                _flaw("step before backward"),
                fix="optimizer.zero_grad(); loss.backward(); optimizer.step(), in that order.",
            ),
            Mistake(
                "optimizer-made-every-step",
                "the optimizer was made anew in every step, so its running averages of the "
                "gradients started from zero each time: every update was AdamW's first, a "
                "step of about the learning rate on every weight. Make it once, before the "
                "loop.",
                _flaw("optimizer made every step"),
                fix="optimizer = torch.optim.AdamW(model.parameters(), lr=lr) above the loop.",
            ),
            Mistake(
                "lr-ignored",
                "your loop trained at a learning rate of 3·10⁻³ whatever lr it was given (the "
                "chapter's value): use the argument.",
                _flaw("lr ignored"),
                fix="torch.optim.AdamW(model.parameters(), lr=lr).",
            ),
            Mistake(
                "dropout-on-in-estimates",
                "the estimates were made in training mode, so dropout zeroed random activations "
                "while they were measured: they are noisier and higher than what the model "
                "scores when it is used.",
                _flaw("dropout on in estimates"),
                fix="call model.eval() before measuring and model.train() after.",
            ),
            Mistake(
                "training-mode-not-restored",
                "after the first estimate the model stayed in evaluation mode, so it trained "
                "without dropout: switch it back to training mode once an estimate is done.",
                _flaw("training mode not restored"),
                fix="call model.train() at the end of the estimate.",
            ),
            Mistake(
                "gradients-on-in-estimates",
                "the estimates ran with gradients on: torch recorded a graph of every "
                "evaluation forward pass, which costs memory and time and is never used, since "
                "nothing is learned from held-out text.",
                _flaw("gradients on in estimates"),
                fix="run the estimate inside with torch.no_grad(): (or decorate it with "
                "@torch.no_grad()).",
            ),
            Mistake(
                "held-out-on-training-batches",
                "your held-out estimate was measured on the training batches, so the two "
                "curves are the same curve and cannot show memorisation. The held-out estimate "
                "uses the held-out split's batches.",
                _flaw("held-out on training batches"),
                fix='use eval_batches["val"] for the held-out estimate.',
            ),
            Mistake(
                "estimates-on-new-training-batches",
                "your estimates were made on fresh training batches drawn for the occasion: "
                "neither was held out, and each point had other batches, so the points "
                "differ by luck as well as by learning. Use the fixed batches you were given, "
                "the same at every estimate.",
                _flaw("estimates on new training batches"),
                fix='average over eval_batches["train"] and eval_batches["val"].',
            ),
            Mistake(
                "estimates-summed",
                "your estimates are sums over the batches, not means: they grow with the "
                "number of batches and no longer compare with a batch's loss.",
                _flaw("estimates summed"),
                fix="divide each sum by len(batches).",
            ),
            Mistake(
                "running-total-not-reset",
                "each estimate added to the total left over from the previous one: start every "
                "estimate from zero.",
                _flaw("running total not reset"),
                fix="set the total to 0 inside the estimate, before its loop over batches.",
            ),
            Mistake(
                "last-batch-only",
                "each estimate is the loss of the last fixed batch only: the loop over batches "
                "overwrote the value instead of adding to it.",
                _flaw("last batch only"),
                fix="add every batch's loss to a total (or collect them in a list), then take "
                "the mean.",
            ),
            Mistake(
                "no-estimate-at-step-0",
                "there is no estimate before training: step 0 shows where the model started "
                "(about ln V for an untrained one), the point every curve falls from.",
                _flaw("no estimate at step 0"),
                fix="estimate when step % eval_every == 0, which includes step 0.",
            ),
            Mistake(
                "no-estimate-at-the-end",
                "there is no estimate after the last step: the model you return was never "
                "measured. Estimate once more when the loop is done.",
                _flaw("no estimate at the end"),
                fix="loop over range(steps + 1) and stop before training at step == steps, or "
                "estimate again after the loop.",
            ),
            Mistake(
                "last-estimate-twice",
                "your loop measures the end twice: steps is a multiple of eval_every, so the "
                "estimate after every eval_every steps already falls after the last step, and "
                "that one estimate is the one after the last.",
                _flaw("last estimate twice"),
                fix="one estimate at each step where step % eval_every == 0, for step in "
                "range(steps + 1); none added after the loop",
            ),
            Mistake(
                "loss-tensors-kept",
                "your list of losses holds the loss tensors themselves; each keeps the whole "
                "graph of its step alive, so memory grows with every step. Keep plain numbers.",
                _flaw("loss tensors kept"),
                fix="append loss.item().",
            ),
        ),
        atol=1e-4,
        rtol=1e-4,
        hints=(
            "Each step takes a fresh batch, computes its loss, and moves the optimizer in "
            "three moves whose order matters: clear the old gradients, backpropagate, update. "
            "An estimate is the mean loss over a split's fixed batches with the model in "
            "evaluation mode and gradient tracking off; one comes before any training and one "
            "after every eval_every steps.",
            "Make AdamW once, above the loop, over all the parameters at the rate lr. Write a "
            "small helper that switches the model to evaluation mode, averages the loss of "
            "each batch of a list as plain numbers inside a no-gradient block, and switches "
            "back to training mode; call it for both splits when the step count is a multiple "
            "of eval_every, the last step included.",
        ),
    )
)

# --- 3. how many characters a temperature leaves to choose from --------------------------------


def _choices(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """logits [B, V] → [B]: e^H of the distribution softmax(logits / T), H its entropy in
    nats; 1 for a certain choice, V for a uniform one."""
    log_probs = (logits / temperature).log_softmax(dim=-1)
    entropy = -(log_probs.exp() * log_probs).sum(dim=-1)
    return entropy.exp()


def _choices_inputs(g: torch.Generator) -> list[tuple[torch.Tensor, float]]:
    """Logits of several spreads at plain, low and high temperatures. The fourth case's divided
    logits lie between 90 and 100: an exp of them overflows, though no probability is below
    e⁻¹⁰. The fifth's spread over thousands: some probabilities underflow to exactly 0."""
    return [
        (3 * torch.randn(4, 9, generator=g), 1.0),
        (3 * torch.randn(3, 12, generator=g), 0.5),
        (torch.randn(2, 7, generator=g), 2.5),
        (9.0 + torch.rand(3, 8, generator=g), 0.1),
        (40 * torch.randn(2, 10, generator=g), 0.05),
    ]


def _zero_times_log_zero(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    probs = torch.softmax(logits / temperature, dim=-1)
    return torch.exp(-(probs * probs.log()).sum(dim=-1))


def _unshifted_exp(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    e = torch.exp(logits / temperature)
    probs = e / e.sum(dim=-1, keepdim=True)
    return torch.exp(-(probs * probs.log()).sum(dim=-1))


def _temperature_after_softmax(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    probs = torch.softmax(logits, dim=-1) / temperature
    return torch.exp(-(probs * probs.log()).sum(dim=-1))


def _temperature_on_log_probs(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    log_probs = logits.log_softmax(dim=-1) / temperature
    return torch.exp(-(log_probs.exp() * log_probs).sum(dim=-1))


def between_one_and_v(out: object, logits: torch.Tensor, temperature: float) -> str | None:
    if not isinstance(out, torch.Tensor) or out.shape != logits.shape[:1]:
        shape = list(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        return f"expected one number per row, [B] = {list(logits.shape[:1])}, got {shape}"
    V = logits.shape[-1]
    if (out < 1 - 1e-4).any() or (out > V + 1e-3).any():
        return f"the count of choices lies between 1 (a certain choice) and V = {V} (uniform)"
    return None


register(
    Exercise(
        name="effective-choices",
        notebook="08_train_and_sample",
        reference=_choices,
        forbidden=(
            Route(
                "torch.distributions.categorical:Categorical",
                "torch's `Categorical` distribution (its `entropy`)",
                "it computes the entropy this exercise asks you to compute from the logits.",
            ),
        ),
        make_inputs=_choices_inputs,
        properties=(Property("between 1 and V", between_one_and_v),),
        mistakes=(
            Mistake(
                "temperature-ignored",
                "your count does not change with the temperature: sampling divides the logits "
                "by it before the softmax, and so must you.",
                lambda lo, t: _choices(lo, 1.0),
                fix="take the softmax (or log_softmax) of logits / temperature.",
            ),
            Mistake(
                "temperature-multiplied",
                "you multiplied the logits by the temperature; sampling divides them by it, so "
                "a low temperature leaves fewer choices, not more.",
                lambda lo, t: _choices(lo, 1 / t),
                fix="use logits / temperature.",
            ),
            Mistake(
                "entropy-not-exponentiated",
                "that is the entropy H itself, in nats. The number of equally likely choices "
                "with the same uncertainty is e to the H: a uniform choice among n has "
                "H = ln n.",
                lambda lo, t: _choices(lo, t).log(),
                fix="return entropy.exp().",
            ),
            Mistake(
                "entropy-sign",
                "the entropy's sign is flipped: H = −Σ p ln p is positive, so yours is one "
                "over the number of choices.",
                lambda lo, t: 1 / _choices(lo, t),
                fix="entropy = -(p * log_p).sum(dim=-1).",
            ),
            Mistake(
                "mixed-bases",
                "you took the entropy in nats and raised 2 to it. Use one base throughout: "
                "e to H in nats, or 2 to H in bits, which is the same number.",
                lambda lo, t: 2 ** _choices(lo, t).log(),
                fix="return torch.exp(entropy) with the entropy in nats.",
            ),
            Mistake(
                "zero-times-log-zero",
                "right at ordinary temperatures, but NaN at a low one. There some "
                "probabilities are so small that they round to exactly 0 in float32, and the "
                "term p · ln p becomes 0 · (−∞), which is NaN, though its limit is 0. Compute "
                "ln p directly from the logits, where it stays finite, and p from it.",
                _zero_times_log_zero,
                fix="log_p = (logits / temperature).log_softmax(dim=-1); p = log_p.exp() (or "
                "torch.special.entr(p), which counts 0 · ln 0 as 0).",
            ),
            Mistake(
                "exp-overflows",
                "right at ordinary temperatures, but at a low one the divided logits are large "
                "and their exponentials overflow to inf (inf / inf is NaN). Subtract each row's "
                "largest logit first, which changes no probability.",
                _unshifted_exp,
                fix="use (logits / temperature).log_softmax(dim=-1), which subtracts the "
                "maximum for you.",
            ),
            Mistake(
                "temperature-after-softmax",
                "you divided the probabilities by the temperature, after the softmax. What "
                "comes out no longer sums to 1, so it is not a distribution and its count of "
                "choices can leave the range from 1 to V. Sampling divides the logits by the "
                "temperature before the softmax, which then makes a distribution of them.",
                _temperature_after_softmax,
                fix="take the softmax (or log_softmax) of logits / temperature.",
            ),
            Mistake(
                "temperature-on-log-probabilities",
                "you divided the log-probabilities by the temperature, after the softmax. "
                "Their exponentials no longer sum to 1, so they are not a distribution. "
                "Sampling divides the logits by the temperature before the softmax, which "
                "then makes a distribution of them.",
                _temperature_on_log_probs,
                fix="log_probs = (logits / temperature).log_softmax(dim=-1), not "
                "logits.log_softmax(dim=-1) / temperature.",
            ),
        ),
        atol=1e-4,
        rtol=1e-4,
        hints=(
            "A distribution's entropy measures its uncertainty; a uniform choice among n "
            "options has entropy ln n, so inverting that turns any entropy into a number of "
            "equally likely options. Sampling's distribution is the softmax of the logits over "
            "the temperature.",
            "Take log-probabilities of the logits divided by the temperature (they stay "
            "finite where a probability rounds to 0), form H = −Σ p · ln p over the "
            "vocabulary, and return e to the H for each row.",
        ),
    )
)

# --- 4. nucleus (top-p) sampling -----------------------------------------------------------------


def _top_p_probs(logits: torch.Tensor, p: float) -> torch.Tensor:
    """logits [B, V] → probabilities [B, V] that keep, in each row, the fewest most likely
    tokens whose probabilities sum to at least p, renormalised; every other token gets 0."""
    probs = logits.softmax(dim=-1)
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs  # of the more likely tokens
    keep = torch.zeros_like(probs, dtype=torch.bool).scatter(-1, order, mass_before < p)
    return logits.masked_fill(~keep, float("-inf")).softmax(dim=-1)


def _top_p_inputs(g: torch.Generator) -> list[tuple[torch.Tensor, float]]:
    """Rows peaked and flat, with p from small (a single token often suffices) to 0.95."""
    return [
        (2 * torch.randn(4, 10, generator=g), 0.9),
        (torch.randn(3, 8, generator=g), 0.5),
        (5 * torch.randn(3, 12, generator=g), 0.3),
        (0.5 * torch.randn(2, 16, generator=g), 0.95),
    ]


def _kept_wrongly(logits: torch.Tensor, p: float, order: str, crossing: bool) -> torch.Tensor:
    """A top-p mask made one of the catalogue's ways: `order` "ascending" starts from the least
    likely token; `crossing=False` drops the token that carries the running total past p."""
    probs = logits.softmax(-1)
    sorted_probs, index = probs.sort(-1, descending=order == "descending")
    total = sorted_probs.cumsum(-1)
    kept = (total - sorted_probs < p) if crossing else (total <= p)
    kept[:, 0] = True  # never an empty row
    return torch.zeros_like(kept).scatter(-1, index, kept)


def _below_p_only(logits, p):
    keep = _kept_wrongly(logits, p, "descending", crossing=False)
    return logits.masked_fill(~keep, float("-inf")).softmax(-1)


def _not_renormalised(logits, p):
    return logits.softmax(-1) * (_top_p_probs(logits, p) > 0)


def _unsorted_running_total(logits, p):
    probs = logits.softmax(-1)
    keep = probs.cumsum(-1) - probs < p  # in vocabulary order
    return logits.masked_fill(~keep, float("-inf")).softmax(-1)


def _flags_in_sorted_order(logits, p):
    probs = logits.softmax(-1)
    sorted_probs, _ = probs.sort(-1, descending=True)
    keep = sorted_probs.cumsum(-1) - sorted_probs < p  # positions of the sorted row
    return logits.masked_fill(~keep, float("-inf")).softmax(-1)


def _left_sorted(logits, p):
    sorted_logits, _ = logits.sort(-1, descending=True)
    sorted_probs = sorted_logits.softmax(-1)
    keep = sorted_probs.cumsum(-1) - sorted_probs < p
    return sorted_logits.masked_fill(~keep, float("-inf")).softmax(-1)


def _least_likely(logits, p):
    keep = _kept_wrongly(logits, p, "ascending", crossing=True)
    return logits.masked_fill(~keep, float("-inf")).softmax(-1)


def a_kept_distribution(out: object, logits: torch.Tensor, p: float) -> str | None:
    if not isinstance(out, torch.Tensor) or out.shape != logits.shape:
        shape = list(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        return f"expected probabilities of the logits' shape {list(logits.shape)}, got {shape}"
    if (out.gt(0).sum(dim=-1) == 0).any():
        return "a row keeps no token at all: the most likely token always stays in the nucleus"
    return None


register(
    Exercise(
        name="top-p-probabilities",
        notebook="08_train_and_sample",
        reference=_top_p_probs,
        make_inputs=_top_p_inputs,
        properties=(Property("a distribution over kept tokens", a_kept_distribution),),
        mistakes=(
            Mistake(
                "crossing-token-dropped",
                "you kept only the tokens whose running total stays within p, so the nucleus "
                "falls short of p: keep the token that carries the sum to p or past it too.",
                _below_p_only,
                fix="keep a token when the tokens more likely than it hold less than p: "
                "cumsum − its own probability < p.",
            ),
            Mistake(
                "not-renormalised",
                "the kept probabilities do not sum to 1: after zeroing the others, share the "
                "whole mass among the kept tokens again.",
                _not_renormalised,
                fix="set the other logits to float('-inf') and take the softmax over the row.",
            ),
            Mistake(
                "running-total-unsorted",
                "your running total follows the vocabulary's order, not the probabilities'. The "
                "nucleus is the most likely tokens: order each row from the most likely down "
                "before summing, then put the decision back in vocabulary order.",
                _unsorted_running_total,
                fix="probs.sort(dim=-1, descending=True), cumsum over the sorted row, then "
                "scatter the kept flags back with the sort's indices.",
            ),
            Mistake(
                "decision-not-mapped-back",
                "you decided which tokens to keep in the sorted row, then applied that decision to "
                "the row in the vocabulary's order: position k of the sorted row is the k-th most "
                "likely token, not token k. Each decision belongs to the token the sort moved "
                "there.",
                _flags_in_sorted_order,
                fix="keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted), with "
                "order the indices the sort returned.",
            ),
            Mistake(
                "left-in-sorted-order",
                "your probabilities are right but in the sorted order: entry k is the k-th most "
                "likely token's, where the sampler reads entry k as token k's. Put each one back "
                "at its token's place in the vocabulary.",
                _left_sorted,
                fix="scatter the sorted result back: torch.zeros_like(probs).scatter(-1, order, "
                "sorted_result), with order the indices the sort returned.",
            ),
            Mistake(
                "least-likely-kept",
                "you kept the least likely tokens: the nucleus starts from the most likely one "
                "and adds tokens in order of falling probability.",
                _least_likely,
                fix="sort with descending=True.",
            ),
        ),
        atol=1e-6,
        rtol=1e-5,
        hints=(
            "Top-p keeps a number of tokens that depends on the row: the most likely ones, "
            "just enough of them for their probabilities to add up to p; the rest get nothing "
            "and the kept ones share the whole mass.",
            "Sort each row's probabilities from high to low and keep a token when the tokens "
            "before it in that order hold less than p in total; map the decision back to the "
            "vocabulary's order, set the other logits to −∞ and take the softmax.",
        ),
    )
)
