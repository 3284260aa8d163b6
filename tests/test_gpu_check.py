"""make gpu-check (scripts/gpu_check.py): without a GPU it says so and runs nothing; its notebook
comparison names the cells that print other text or raise."""

import nbformat
import torch

from tests.scripts import load_script

gpu_check = load_script("gpu_check")


def test_without_a_gpu_it_says_so_and_runs_nothing(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert gpu_check.main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("No CUDA GPU here: torch ") and "nothing to run" in out


def test_a_notebook_run_reports_changed_prints_and_errors(tmp_path):
    cells = [
        nbformat.v4.new_code_cell(
            "print(1 + 1)", outputs=[nbformat.v4.new_output("stream", text="3\n")]
        ),
        nbformat.v4.new_code_cell(
            "print('same')", outputs=[nbformat.v4.new_output("stream", text="same\n")]
        ),
        nbformat.v4.new_code_cell("1 / 0"),
    ]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    path = tmp_path / "05_t.ipynb"
    nbformat.write(nb, path)
    assert gpu_check.run_notebook(path, "solved") == [
        "cell 0 prints other text: CPU '3', GPU '2'",
        "cell 2 raises ZeroDivisionError: division by zero",
    ]
    assert gpu_check.run_notebook(path, "workbook") == [
        "cell 2 raises ZeroDivisionError: division by zero"
    ]
