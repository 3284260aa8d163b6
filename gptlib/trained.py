"""The trained model that ships with gptlib: the chapter's GPT after about 20 minutes on Tiny
Shakespeare (notebooks 01, 04, 05 and 08 look inside it).

    from gptlib.trained import load_shakespeare_gpt
    checkpoint = load_shakespeare_gpt()          # weights, tokenizer and how they were made
    model = checkpoint.build_model()

The weights lie in `gptlib/data/shakespeare_gpt.pt`, beside a manifest (`.json`) with their
SHA-256, held-out loss and the command that trained them (`scripts/train_shipped_model.py`).
Loading checks the checksum first, so a damaged or swapped file is refused before torch reads it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from gptlib.checkpoint import Checkpoint, load_checkpoint

WEIGHTS = Path(__file__).resolve().parent / "data" / "shakespeare_gpt.pt"
MANIFEST = WEIGHTS.with_suffix(".json")


def sha256_of(path: Path) -> str:
    """The SHA-256 of a file, as hex."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def shakespeare_gpt_manifest() -> dict:
    """How the shipped model was made: sha256, bytes, command, steps, seconds, held-out loss."""
    return json.loads(MANIFEST.read_text())


def load_shakespeare_gpt(weights: Path = WEIGHTS, manifest: Path = MANIFEST) -> Checkpoint:
    """The shipped checkpoint (weights only, no optimizer state), checksum verified."""
    expected = json.loads(Path(manifest).read_text())["sha256"]
    found = sha256_of(Path(weights))
    if found != expected:
        raise ValueError(
            f"{weights} is damaged or was replaced: its SHA-256 is {found}, the manifest "
            f"{manifest} expects {expected}. Reinstall gptlib (pip install --force-reinstall) "
            "or retrain it with scripts/train_shipped_model.py"
        )
    return load_checkpoint(weights)
