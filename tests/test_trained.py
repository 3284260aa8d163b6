"""The model that ships with gptlib: the file is what its manifest says, a damaged copy is
refused before torch reads it, and its held-out loss is the one the notebooks quote."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gptlib.trained import (
    MANIFEST,
    WEIGHTS,
    load_shakespeare_gpt,
    sha256_of,
    shakespeare_gpt_manifest,
)

ROOT = Path(__file__).resolve().parent.parent


def test_the_manifest_describes_the_file():
    manifest = shakespeare_gpt_manifest()
    assert manifest["sha256"] == sha256_of(WEIGHTS)
    assert manifest["bytes"] == WEIGHTS.stat().st_size < 8_000_000  # a few MB
    assert manifest["command"].startswith("python -m gptlib train --corpus tinyshakespeare")


def test_it_is_the_chapters_model_with_weights_only():
    checkpoint = load_shakespeare_gpt()
    c = checkpoint.model_config
    assert (c.d_model, c.n_heads, c.n_layers, c.vocab_size, c.max_len) == (128, 4, 4, 65, 128)
    assert checkpoint.trainer_state is None  # no optimizer state shipped
    assert checkpoint.meta["made_by"] == "scripts/train_shipped_model.py"


def test_a_damaged_copy_is_refused_with_what_to_do(tmp_path):
    copy = tmp_path / "shakespeare_gpt.pt"
    shutil.copy(WEIGHTS, copy)
    data = bytearray(copy.read_bytes())
    data[len(data) // 2] ^= 0xFF
    copy.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"damaged or was replaced: its SHA-256 is .*Reinstall"):
        load_shakespeare_gpt(copy, MANIFEST)


def test_a_manifest_for_another_file_is_refused(tmp_path):
    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps({**shakespeare_gpt_manifest(), "sha256": "0" * 64}))
    with pytest.raises(ValueError, match="expects 0000"):
        load_shakespeare_gpt(WEIGHTS, manifest)


@pytest.mark.slow
def test_its_held_out_loss_is_the_manifests(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "scripts"))
    from train_shipped_model import whole_split_loss

    loss, positions = whole_split_loss(WEIGHTS)
    manifest = shakespeare_gpt_manifest()
    assert positions == manifest["val_positions"]
    assert abs(loss - manifest["val_loss"]) < 1e-3
