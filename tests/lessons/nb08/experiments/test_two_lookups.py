"""The two-lookups task: answers against a plain loop, the attention bookkeeping against
hand-made maps, and a short training run that learns the task."""

import pytest
import torch

from gptlib.lessons.engine.checks import REGISTRY
from gptlib.lessons.engine.explorer import check_lines
from gptlib.lessons.nb08.experiments.two_lookups import (
    IGNORE,
    HeadsRun,
    TwoLookups,
    _weight_on,
    evaluate_heads,
    stored_heads_runs,
    train_heads,
)


def _answers_by_loop(task: TwoLookups, text: str) -> list[str | None]:
    """Scan the characters; at each position, the latest letter and digit so far (or None)."""
    letter = digit = None
    answers = []
    for c in text:
        if c.isalpha():
            letter = c
        elif c.isdigit():
            digit = c
        answers.append(letter + digit if letter and digit else None)
    return answers


LOOP = REGISTRY["train"].reference  # notebook 08's training loop


def test_answers_are_the_latest_letter_and_digit_so_far():
    task = TwoLookups(n_symbols=3, length=30, p_each=0.2)
    batch = task.sample(16, torch.Generator().manual_seed(3))
    assert batch.x.shape == batch.y.shape == (16, 30)
    for x, y in zip(batch.x, batch.y, strict=True):
        text = "".join(task.chars[i] for i in x)
        assert text[0] in "abc" and text[1] in "012"
        expected = _answers_by_loop(task, text)
        got = [None if a == IGNORE else task.answer_text(int(a)) for a in y]
        assert got == expected, text


def test_positions_point_at_the_latest_letter_and_digit():
    task = TwoLookups()
    batch = task.sample(8, torch.Generator().manual_seed(0))
    for b in range(8):
        text = "".join(task.chars[i] for i in batch.x[b])
        for t in range(1, task.length):
            letter_at, digit_at = int(batch.letter_at[b, t]), int(batch.digit_at[b, t])
            assert letter_at == max(j for j in range(t + 1) if text[j].isalpha())
            assert digit_at == max(j for j in range(t + 1) if text[j].isdigit())


def test_letters_and_digits_appear_about_as_often_as_asked():
    task = TwoLookups(p_each=0.15, length=24)
    x = task.sample(2000, torch.Generator().manual_seed(1)).x[:, 2:]  # after the fixed start
    letters = (x < task.n_symbols).float().mean().item()
    digits = ((x >= task.n_symbols) & (x < 2 * task.n_symbols)).float().mean().item()
    assert letters == pytest.approx(0.15, abs=0.01) and digits == pytest.approx(0.15, abs=0.01)


def test_alphabet_answers_and_vocabulary():
    task = TwoLookups(n_symbols=4)
    assert task.chars == "abcd0123."
    assert task.vocab_size == 16  # 4 × 4 answers, more than the 9 input characters
    assert task.answer_text(4 * 2 + 1) == "c1"
    assert TwoLookups(n_symbols=2).vocab_size == 5  # 2 × 2 answers, 5 input characters


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"n_symbols": 0}, "n_symbols"), ({"length": 2}, "length"), ({"p_each": 0.6}, "p_each")],
)
def test_bad_settings_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TwoLookups(**kwargs)


def test_weight_on_picks_each_query_s_weight_on_its_key():
    maps = torch.rand(2, 3, 4, 4)  # [B, h, T, T]
    at = torch.tensor([[0, 0, 1, 2], [0, 1, 1, 3]])  # [B, T]
    got = _weight_on(maps, at)  # [B, T, h]
    for b in range(2):
        for t in range(4):
            for h in range(3):
                assert got[b, t, h] == maps[b, h, t, at[b, t]]


def test_run_lines():
    run = HeadsRun(n_heads=2, positions="none", loss=0.5, accuracy=0.75, letter_weight=0.9,
                   digit_weight=0.8)  # fmt: skip
    assert run.name == "2 heads, no positions"
    assert HeadsRun(1, "learned", 0.1, 0.9, 0.3, 0.3).name == "1 head"
    assert check_lines(run.lines())[0] == "2 heads, no positions: accuracy = 0.750"


def test_a_short_run_learns_the_task_and_one_head_shares_one_softmax():
    task = TwoLookups(n_symbols=3, length=12, p_each=0.2)
    held_out = task.sample(256, torch.Generator().manual_seed(99))
    untrained = evaluate_heads(train_heads(LOOP, 1, task, steps=0), task, held_out)
    trained = evaluate_heads(train_heads(LOOP, 1, task, steps=100, lr=1e-2), task, held_out)
    assert untrained.accuracy < 0.3 < 0.6 < trained.accuracy  # 9 answers: chance is 1/9
    assert trained.loss < untrained.loss - 1
    # One head: its weights on the two latest items come from one softmax row.
    assert trained.letter_weight + trained.digit_weight <= 1 + 1e-6
    logits, _ = train_heads(LOOP, 1, task, steps=0)(held_out.x)
    keep = held_out.y != IGNORE
    by_hand = (logits.argmax(-1)[keep] == held_out.y[keep]).float().mean().item()
    assert untrained.accuracy == pytest.approx(by_hand)


def test_the_stored_runs_hold_every_model_on_three_seeds_and_seed_0_reruns():
    """The stored seed 0 of one head is what the notebook's settings give here."""
    stored = stored_heads_runs()
    assert sorted(stored) == [0, 1, 2]
    assert all([r.name for r in runs] == ["1 head", "2 heads", "4 heads", "4 heads, no positions"]
               for runs in stored.values())  # fmt: skip
    task = TwoLookups()
    held_out = task.sample(512, torch.Generator().manual_seed(12345))
    again = evaluate_heads(train_heads(LOOP, 1, task, lr=1e-2, steps=500), task, held_out)
    assert again.accuracy == pytest.approx(stored[0][0].accuracy, abs=2e-3)
