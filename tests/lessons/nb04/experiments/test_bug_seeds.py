"""The stored seeds' table of the reshape bug: one row per seed, read from a trained run."""

import pytest

from gptlib.lessons.nb04.experiments import bug_seeds
from gptlib.lessons.nb04.experiments.bug_seeds import STORED, BugSeedRow, bug_seed_row
from gptlib.lessons.nb04.experiments.reshape_bug import ReshapeBugRun
from gptlib.lessons.shared.experiments.mask_ablation import AblationRun


def test_a_row_reads_the_run_it_is_given():
    losses = [1.0] * 50 + [0.5] * 50
    run = AblationRun(True, None, losses, 0.2, 4.0, [], "", 0.0)
    floors = [1.4, 0.7, 0.45, 0.4, 0.36]
    bug = ReshapeBugRun(run, [], [], [0.6, 0.1, 0.5, 0.3, 0.37], floors, 4.8)
    row = bug_seed_row(bug, 7)
    assert row == BugSeedRow(7, 0.5, 0.2, 4.0, 4.8, 0.6, 2)  # positions 2 and 4 above their floor
    assert row.cells() == ["7", "0.500", "0.200", "4.000", "4.800", "0.600", "2"]


def test_stored_rows_are_the_three_seeds_in_order():
    assert [row.seed for row in STORED] == [0, 1, 2]
    assert bug_seeds.COLUMNS[0] == "seed" and len(bug_seeds.COLUMNS) == len(STORED[0].cells())


@pytest.mark.slow
def test_the_stored_seed_0_row_is_what_training_gives():
    (row,) = bug_seeds.measure_seeds((0,))
    for measured, stored in zip(row.cells(), STORED[0].cells(), strict=True):
        assert float(measured) == pytest.approx(float(stored), rel=0.02, abs=0.02)
