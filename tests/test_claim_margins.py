"""scripts/claim_margins.py: which assertions its table shows, from the runs' logs."""

import json

import nbformat

from tests.scripts import load_script

margins = load_script("claim_margins")


def notebook(tmp_path):
    """A lesson trained (output ignored) with its guard, and a seeded lesson with two guards."""
    cells = [
        ("run = train()", ["nbval-ignore-output"]),
        ("assert run.loss < 0.5", ["guard"]),
        ("grads = at_init(seed=0)", []),
        ("assert grads.ratio > 1.05", ["guard"]),
        ("assert n_params == 4224\nassert shape == (2, 3)", ["guard"]),
    ]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src, metadata={"tags": tags}) for src, tags in cells]
    folder = tmp_path / "notebooks"
    folder.mkdir()
    nbformat.write(nb, folder / "02_lesson.ipynb")
    return folder


def compare(cell, text, left, right):
    margin = right - left
    return {"cell": cell, "text": text, "pair": 0, "op": "<", "left": left, "right": right,
            "margin": margin, "holds": margin > 0}  # fmt: skip


def write_log(folder, name, entries):
    (folder / name).write_text("".join(json.dumps(e) + "\n" for e in entries))


def test_recorded_cells_splits_training_cells_from_other_guards(tmp_path):
    training, others = margins.recorded_cells(notebook(tmp_path) / "02_lesson.ipynb")
    assert training == {0, 1} and others == {3, 4}


def test_table_shows_training_clauses_and_guards_that_vary_or_break(tmp_path):
    notebooks, logs = notebook(tmp_path), tmp_path / "logs"
    logs.mkdir()
    for offset, (loss, ratio) in enumerate([(0.2, 1.3), (0.2, 1.1)]):
        write_log(
            logs,
            f"02_lesson-native-{offset}.jsonl",
            [
                compare(1, "run.loss < 0.5", loss, 0.5),
                compare(3, "1.05 < grads.ratio", 1.05, ratio),
                {"cell": 4, "text": "n_params == 4224", "holds": True},
                compare(4, "shape_count < 7", 6, 7),
            ],
        )
    records, hidden = margins.tabulated_records(logs, notebooks)
    assert {(cell, text) for _, cell, text, _ in records} == {
        (1, "run.loss < 0.5"),  # a training clause: shown even when it never changes
        (3, "1.05 < grads.ratio"),  # varies with the seed
    }
    assert hidden == 2  # the same in every run, held
    rows = margins.table(records)
    assert any("| 02 | 3 |" in row and "1.05 < 1.1 | 0.05 | 0 of 2 |" in row for row in rows)


def test_a_guard_that_breaks_in_one_run_is_shown(tmp_path):
    notebooks, logs = notebook(tmp_path), tmp_path / "logs"
    logs.mkdir()
    for offset, holds in enumerate([True, False]):
        entry = {"cell": 4, "text": "n_params == 4224", "holds": holds}
        write_log(logs, f"02_lesson-default-{offset}.jsonl", [entry])
    records, hidden = margins.tabulated_records(logs, notebooks)
    assert list(records) == [("02", 4, "n_params == 4224", -1)] and hidden == 0
