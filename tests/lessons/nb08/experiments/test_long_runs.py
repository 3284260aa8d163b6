"""The stored long runs: curves read from what a training loop returns and written to the file,
the fixed batches every run is estimated on, and the chapter's run as the file holds it."""

import math

import pytest
import torch

from gptlib.lessons.engine.checks import REGISTRY
from gptlib.lessons.nb08.experiments.long_runs import Curves, chapter_run, fixed_batches


def test_curves_from_a_loop_s_return_and_back_from_the_file():
    out = ([3.0, torch.tensor(2.5)], [0, 2], [4.123456, 2.0], [torch.tensor(4.2), 2.25])
    curves = Curves.of(out)
    assert curves == Curves((0, 2), (4.123456, 2.0), (4.199999809265137, 2.25), (3.0, 2.5))
    stored = Curves.from_dict(curves.to_dict(digits=4))
    assert stored.train == (4.1235, 2.0) and stored.val_at(2) == 2.25
    assert stored.gap() == pytest.approx(0.25)
    with pytest.raises(ValueError, match=r"no estimate at step 1; estimates at \(0, 2\)"):
        stored.val_at(1)


def test_fixed_batches_are_the_same_for_every_run_and_come_from_each_split():
    train_ids, val_ids = torch.arange(100, 300), torch.arange(1000, 1100)
    get_batch = REGISTRY["get-batch"].reference
    first = fixed_batches(get_batch, train_ids, val_ids, 3, 2, 5)
    again = fixed_batches(get_batch, train_ids, val_ids, 3, 2, 5)
    assert [len(first[s]) for s in ("train", "val")] == [3, 3]
    assert all(
        torch.equal(a[0], b[0]) for s in first for a, b in zip(first[s], again[s], strict=True)
    )
    assert all(x.min() >= 1000 for x, _ in first["val"]) and all(
        x.max() < 300 for x, _ in first["train"]
    )


def test_the_stored_chapter_run_starts_at_ln_v_and_falls():
    settings, curves = chapter_run()
    assert curves.eval_steps[-1] == settings["steps"] and len(curves.losses) == settings["steps"]
    assert curves.eval_steps[1] == settings["eval_every"]
    assert abs(curves.val[0] - math.log(65)) < 0.3 and curves.val[-1] < curves.val[0] - 2
