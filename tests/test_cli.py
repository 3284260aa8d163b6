"""`python -m gptlib train|sample`: help, a tiny end-to-end run, resume, the offline
default, and one `error:` line (never a traceback) for files that are not checkpoints."""

import contextlib
import dataclasses
import json
import os
import random
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import gptlib.cli as cli
from gptlib.checkpoint import load_checkpoint
from gptlib.device import fast_precision

ROOT = Path(__file__).resolve().parent.parent
TINY = [
    "--corpus", "sonnets", "--d-model", "32", "--n-heads", "2", "--n-layers", "1",
    "--batch-size", "4", "--block-size", "16", "--eval-interval", "3", "--eval-batches", "2",
    "--no-progress",
]  # fmt: skip
SUMMARY_KEYS = {"steps", "tokens", "seconds", "train_loss", "val_loss", "tokens_per_s"}


@pytest.fixture
def offline(monkeypatch):
    """No data dir and no network."""
    monkeypatch.delenv("GPTLIB_DATA_DIR", raising=False)

    def no_network(*args, **kwargs):
        raise OSError("network is unreachable")

    monkeypatch.setattr(socket, "socket", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)


def last_json_line(text: str) -> dict:
    return json.loads(text.strip().splitlines()[-1])


def test_train_then_sample_then_resume(tmp_path, capsys):
    out = tmp_path / "tiny.pt"
    assert cli.main(["train", *TINY, "--steps", "5", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    summary = last_json_line(captured.out)
    assert SUMMARY_KEYS <= set(summary)
    assert summary["steps"] == 5 and summary["tokens"] == 5 * 4 * 16
    assert "corpus sonnets" in captured.err and "checkpoint saved" in captured.err
    saved = load_checkpoint(out)
    assert saved.meta == {"corpus": "sonnets"} and saved.trainer_state["step"] == 5
    assert saved.model_config.max_len == 16  # defaults to the block size

    assert cli.main(["sample", "--checkpoint", str(out), "--prompt", "Shall", "--n", "20"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("Shall") and len(text.rstrip("\n")) >= 20

    assert cli.main(["train", "--resume", str(out), "--steps", "8", "--no-progress"]) == 0
    assert last_json_line(capsys.readouterr().out)["steps"] == 8
    resumed = load_checkpoint(out)
    assert resumed.trainer_state["step"] == 8
    assert resumed.trainer_state["config"]["batch_size"] == 4  # kept from the saved run


def test_sampling_is_repeatable_with_a_seed(tmp_path, capsys):
    out = tmp_path / "tiny.pt"
    cli.main(["train", *TINY, "--steps", "2", "--out", str(out)])
    capsys.readouterr()
    args = ["sample", "--checkpoint", str(out), "--n", "30", "--seed", "7", "--top-k", "5"]
    cli.main(args)
    first = capsys.readouterr().out
    cli.main(args)
    assert capsys.readouterr().out == first


def test_no_arguments_trains_the_chapter_architecture_offline(
    offline, tmp_path, monkeypatch, capsys
):
    # the real defaults train for minutes; shrink only the step count for the test
    monkeypatch.setattr(cli, "DEFAULTS", dataclasses.replace(cli.DEFAULTS, steps=2, eval_batches=1))
    monkeypatch.chdir(tmp_path)
    assert cli.main(["train", "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert "corpus tinyshakespeare: 1,115,394 characters, vocabulary 65" in captured.err
    assert last_json_line(captured.out)["steps"] == 2
    saved = load_checkpoint(tmp_path / "gptlib_model.pt")
    # the 60-s winner: one of the chapter's blocks (docs/maintainers.md)
    assert (saved.model_config.d_model, saved.model_config.n_layers) == (128, 1)
    assert saved.model_config.n_heads == 4
    assert saved.trainer_state["config"]["batch_size"] == 24
    assert saved.trainer_state["config"]["lr"] == 1e-2


def test_a_time_budget_alone_ends_the_run(offline, tmp_path, capsys):
    args = ["train", *TINY, "--time-budget", "0.5", "--no-progress", "--out", "b.pt"]
    with contextlib.chdir(tmp_path):
        assert cli.main(args) == 0
    saved = load_checkpoint(tmp_path / "b.pt")
    assert saved.trainer_state["config"]["steps"] == 10**9  # not the default 2000
    assert saved.trainer_state["train_seconds"] >= 0.5


def test_errors_exit_with_one_line_and_status_1(offline, tmp_path, capsys):
    assert cli.main(["train", "--corpus", "shakespear", "--no-progress"]) == 1
    assert "error: unknown corpus 'shakespear'" in capsys.readouterr().err
    assert cli.main(["sample", "--checkpoint", str(tmp_path / "none.pt")]) == 1
    assert "error: no checkpoint at" in capsys.readouterr().err
    assert cli.main(["train", *TINY, "--lr", "2.0"]) == 1
    assert "need 0 < lr < 1" in capsys.readouterr().err


@pytest.mark.slow
def test_module_entry_point_help_and_a_real_process(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TQDM_DISABLE": "1"}
    for command in ("train", "sample"):
        help_text = subprocess.run(
            [sys.executable, "-m", "gptlib", command, "--help"],
            capture_output=True, text=True, env=env, check=True,
        ).stdout  # fmt: skip
        assert f"usage: python -m gptlib {command}" in help_text
    assert "--time-budget" in help_text or "--temperature" in help_text
    done = subprocess.run(
        [sys.executable, "-m", "gptlib", "train", *TINY, "--steps", "2", "--no-save"],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    assert SUMMARY_KEYS <= set(last_json_line(done.stdout))
    assert len(done.stdout.strip().splitlines()) == 1  # stdout holds the summary only


def test_files_that_are_not_checkpoints_end_in_one_error_line(tmp_path, capsys):
    notes = tmp_path / "notes.txt"
    notes.write_text("ROMEO: hello\n", encoding="utf-8")
    noise = tmp_path / "noise.pt"
    noise.write_bytes(b"\x00\xff" + random.Random(1).randbytes(998))
    empty = tmp_path / "empty.pt"
    empty.touch()
    tensor = tmp_path / "tensor.pt"
    torch.save(torch.zeros(3), tensor)
    expected = {
        notes: "a text file of 13 bytes starting with 'ROMEO: hello\\n'",
        noise: "not a complete torch file",
        empty: "an empty file",
        tmp_path: "a directory",
        tensor: "a torch file holding a tensor of shape [3]",
    }
    for path, what in expected.items():
        for command in (["sample", "--checkpoint", str(path)], ["train", "--resume", str(path)]):
            assert cli.main(command) == 1
            err = capsys.readouterr().err
            start = f"error: {path} is not a gptlib checkpoint that can be loaded: it is {what}"
            assert err.startswith(start), err
            assert len(err.strip().splitlines()) == 1
    assert cli.main(["sample", "--checkpoint", str(tmp_path / "missing.pt")]) == 1
    assert capsys.readouterr().err.startswith(f"error: no checkpoint at {tmp_path / 'missing.pt'}")


def test_a_text_file_as_checkpoint_in_a_real_process(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("First Citizen:\nBefore we proceed any further, hear me speak.\n")
    done = subprocess.run(
        [sys.executable, "-m", "gptlib", "sample", "--checkpoint", str(notes)],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr == (
        f"error: {notes} is not a gptlib checkpoint that can be loaded: it is a text file of 61 "
        "bytes starting with 'First Citizen:\\nBefore we proceed any fur'. Checkpoints are "
        "written by `python -m gptlib train` or gptlib.checkpoint.save_checkpoint; use another "
        "copy, or train again\n"
    )


def test_precision_auto_is_the_hardwares_and_a_resumed_run_keeps_its_own(tmp_path, capsys):
    out = tmp_path / "p.pt"
    assert cli.main(["train", *TINY, "--steps", "2", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    auto = fast_precision(torch.device("cpu"))
    assert last_json_line(captured.out)["precision"] == auto
    assert f"{auto} matrix products" in captured.err
    assert load_checkpoint(out).trainer_state["config"]["precision"] == auto
    assert (
        cli.main(["train", *TINY, "--steps", "2", "--precision", "float32", "--out", str(out)]) == 0
    )
    capsys.readouterr()
    assert cli.main(["train", "--resume", str(out), "--steps", "3", "--no-progress"]) == 0
    assert last_json_line(capsys.readouterr().out)["precision"] == "float32"  # the saved run's
    with pytest.raises(SystemExit):  # argparse's usage error lists the choices
        cli.main(["train", *TINY, "--precision", "fp16"])
    assert "invalid choice: 'fp16'" in capsys.readouterr().err


def test_init_chooses_the_starting_weights(tmp_path, capsys):
    stds = {}
    for init in ("pytorch", "gpt2"):
        out = tmp_path / f"{init}.pt"
        args = [
            "train",
            *TINY,
            "--steps",
            "1",
            "--lr",
            "1e-9",
            "--min-lr",
            "0",
            "--init",
            init,
            "--out",
            str(out),
        ]
        assert cli.main(args) == 0
        stds[init] = load_checkpoint(out).build_model().tok_emb.weight.std().item()
    capsys.readouterr()
    assert 0.9 < stds["pytorch"] < 1.1 and stds["gpt2"] < 0.03  # N(0, 1) and GPT-2's 0.02


def test_compile_is_asked_for_and_saved_with_the_run(tmp_path, capsys, monkeypatch):
    """--compile sets TrainConfig.compile (saved in the checkpoint); where compiling fails (a
    stand-in compiler that raises) the run warns once and trains without it."""

    def broken_compile(module, **options):
        def fails(*args):
            raise RuntimeError("no working C++ compiler found")

        return fails

    monkeypatch.setattr(torch, "compile", broken_compile)
    out = tmp_path / "c.pt"
    with pytest.warns(RuntimeWarning, match="torch.compile failed"):
        assert cli.main(["train", *TINY, "--steps", "2", "--compile", "--out", str(out)]) == 0
    assert last_json_line(capsys.readouterr().out)["steps"] == 2
    assert load_checkpoint(out).trainer_state["config"]["compile"] is True
    assert cli.main(["train", *TINY, "--steps", "1", "--out", str(out)]) == 0
    assert load_checkpoint(out).trainer_state["config"]["compile"] is False
