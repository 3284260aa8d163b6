"""`python -m gptlib train|sample`: help, a tiny end-to-end run, resume, the offline default."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import gptlib.cli as cli
import gptlib.data.corpora as corpora
from gptlib.checkpoint import load_checkpoint
from gptlib.train import TrainConfig

ROOT = Path(__file__).resolve().parent.parent
TINY = [
    "--corpus", "sonnets", "--d-model", "32", "--n-heads", "2", "--n-layers", "1",
    "--batch-size", "4", "--block-size", "16", "--eval-interval", "3", "--eval-batches", "2",
    "--no-progress",
]  # fmt: skip
SUMMARY_KEYS = {"steps", "tokens", "seconds", "train_loss", "val_loss", "tokens_per_s"}


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """No data dir, an empty cache, no network."""
    monkeypatch.delenv("GPTLIB_DATA_DIR", raising=False)
    monkeypatch.setenv("GPTLIB_CACHE", str(tmp_path / "cache"))

    def no_network(url, timeout=30.0):
        raise OSError("network is unreachable")

    monkeypatch.setattr(corpora, "_fetch", no_network)


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


def test_no_arguments_trains_the_chapter_model_offline(offline, tmp_path, monkeypatch, capsys):
    # the real defaults train for minutes; shrink only the step count for the test
    monkeypatch.setattr(cli, "DEFAULTS", TrainConfig(steps=2, eval_batches=1))
    monkeypatch.chdir(tmp_path)
    assert cli.main(["train", "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert "corpus sonnets" in captured.err  # nothing cached, no network: the embedded corpus
    assert last_json_line(captured.out)["steps"] == 2
    saved = load_checkpoint(tmp_path / "gptlib_model.pt")
    assert (saved.model_config.d_model, saved.model_config.n_layers) == (128, 4)


def test_errors_exit_with_one_line_and_status_1(offline, tmp_path, capsys):
    assert cli.main(["train", "--corpus", "shakespear", "--no-progress"]) == 1
    assert "error: unknown corpus 'shakespear'" in capsys.readouterr().err
    assert cli.main(["train", "--corpus", "tinyshakespeare", "--no-progress"]) == 1
    assert "could not download Tiny Shakespeare" in capsys.readouterr().err
    assert cli.main(["sample", "--checkpoint", str(tmp_path / "none.pt")]) == 1
    assert "error: no checkpoint at" in capsys.readouterr().err
    assert cli.main(["train", *TINY, "--lr", "2.0"]) == 1
    assert "need 0 < lr < 1" in capsys.readouterr().err


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
