"""Checkpoints: a trained model with its tokenizer, and optionally the state to resume training.

Introduced in notebook 08. A checkpoint file is one plain dict,

    {"model_config": {...}, "tokenizer": {...}, "model": state dict, "trainer": state or None,
     "meta": {...}}

of tensors, numbers, strings, lists and dicts, written atomically (a crash mid-save leaves the
previous file intact) and read with `torch.load(weights_only=True)`, which rebuilds plain data
only and refuses a file that asks to run code. That refusal is only as good as the torch that
does it: CVE-2025-32434 let a file bypass it up to torch 2.5.1, and CVE-2026-24747 let one
corrupt memory before 2.10.0, so gptlib needs torch 2.10 or newer. Anything that is not a
readable checkpoint raises one ValueError naming the file and what was found.
"""

from __future__ import annotations

import os
import re
import reprlib
import textwrap
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch

from gptlib._atomic import atomic_path
from gptlib.data.tokenizer import CharTokenizer
from gptlib.distributed import World
from gptlib.model import GPT, GPTConfig
from gptlib.train import TrainConfig, Trainer

KEYS = ("model_config", "tokenizer", "model", "trainer", "meta")
# What torch's weights-only unpickler refused, in any torch's words ("unsupported GLOBAL posix...")
_UNSAFE_OBJECT = re.compile(r"unsupported (?:global|class)\W+(?:global )?([\w.]+)", re.IGNORECASE)


@dataclass
class Checkpoint:
    """The contents of a checkpoint file (notebook 08).

    `trainer_state` is None for a checkpoint saved without a trainer (weights for sampling only);
    `meta` holds plain facts about the run, such as the corpus name.
    """

    model_config: GPTConfig
    tokenizer: CharTokenizer
    model_state: dict[str, torch.Tensor]
    trainer_state: dict | None
    meta: dict

    def build_model(self, device: torch.device | str | None = None) -> GPT:
        """A new GPT with the saved weights, in eval mode."""
        model = GPT(self.model_config)
        self.load_into(model)
        return model.to(device).eval() if device is not None else model.eval()

    def load_into(self, model: GPT) -> None:
        """Copy the saved weights into `model` (a `gptlib.GPT`, or a lesson variant that keeps
        every parameter, such as written-out attention), whose config must match the saved one.
        """
        saved, own = self.model_config.to_dict(), model.config.to_dict()
        if differ := [k for k in saved if saved[k] != own[k]]:
            details = ", ".join(f"{k}: checkpoint {saved[k]!r} vs model {own[k]!r}" for k in differ)
            raise ValueError(
                f"the checkpoint does not fit this model ({details}); build the model from the "
                "checkpoint with checkpoint.build_model(), or use GPTConfig(**saved) with the "
                "checkpoint's settings"
            )
        try:
            model.load_state_dict(self.model_state)
        except RuntimeError as exc:  # names missing, unexpected or wrongly shaped weights
            details = " ".join(str(exc).split())
            raise ValueError(
                f"the checkpoint's weights do not fit the model: {details}. The file is corrupt "
                "or was edited; use another copy or retrain"
            ) from exc

    def resume(self, model: GPT, train_ids: torch.Tensor, val_ids: torch.Tensor,
               config: TrainConfig | None = None,
               world: World | None = None) -> Trainer:  # fmt: skip
        """A Trainer that continues exactly where the saved run stopped.

        `config` defaults to the saved training config; pass one with a larger `steps` to train
        further (the learning-rate schedule then stretches to the new length). `world`: the
        processes of a data-parallel run (`gptlib.distributed`); a checkpoint written by one
        process resumes under several and the other way round.
        """
        if self.trainer_state is None:
            raise ValueError(
                "this checkpoint holds weights only (it was saved without a trainer), so there "
                "is no optimizer state to resume from; start a new run from its weights instead"
            )
        self.load_into(model)
        config = config or TrainConfig.from_dict(self.trainer_state["config"])
        trainer = Trainer(model, train_ids, val_ids, config, world)
        trainer.load_state_dict(self.trainer_state)
        return trainer


def save_checkpoint(path: str | os.PathLike, model: GPT, tokenizer: CharTokenizer,
                    trainer: Trainer | None = None, meta: dict | None = None) -> Path:  # fmt: skip
    """Write model, tokenizer and (optionally) trainer state to `path` atomically; return path.

    `meta`: plain data (str, numbers, lists, dicts) to keep with the run, e.g. {"corpus": name}.
    """
    if not isinstance(model, GPT):
        raise ValueError(f"save_checkpoint expects a gptlib GPT, got {type(model).__name__}")
    if tokenizer.vocab_size != model.config.vocab_size:
        raise ValueError(
            f"the tokenizer has {tokenizer.vocab_size} characters but the model expects "
            f"vocab_size={model.config.vocab_size}; save the tokenizer the model was trained with"
        )
    payload = {
        "model_config": model.config.to_dict(),
        "tokenizer": tokenizer.to_dict(),
        "model": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "trainer": None if trainer is None else trainer.state_dict(),
        "meta": dict(meta or {}),
    }
    with atomic_path(path) as tmp:
        torch.save(payload, tmp)
    return Path(path)


def load_checkpoint(path: str | os.PathLike) -> Checkpoint:
    """Read a checkpoint written by `save_checkpoint` (or `python -m gptlib train`).

    A missing path raises FileNotFoundError; anything else that is not such a checkpoint (a
    directory, a text file, a cut-off file, a file holding objects other than plain data, a
    torch file of something else, a part of the wrong type) raises ValueError naming the path and
    what it holds.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no checkpoint at {path}; train one with `python -m gptlib train`")
    try:
        with warnings.catch_warnings(action="ignore"):  # torch warns, then refuses a foreign pickle
            payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch's unpickler, parsing bytes it does not expect
        raise _not_a_checkpoint(path, _unreadable(path, exc)) from exc
    if not isinstance(payload, dict) or set(payload) != set(KEYS):
        raise _not_a_checkpoint(path, f"a torch file holding {_describe(payload)}")
    try:
        model_config = GPTConfig(**payload["model_config"])
        tokenizer = CharTokenizer.from_dict(payload["tokenizer"])
    except (TypeError, KeyError, AttributeError, ValueError) as exc:
        raise _not_a_checkpoint(
            path, f"a checkpoint whose model config or tokenizer cannot be read ({exc})"
        ) from exc
    model, trainer, meta = payload["model"], payload["trainer"], payload["meta"]
    tensors = isinstance(model, dict) and all(map(torch.is_tensor, model.values()))
    for key, fits, wanted in (
        ("model", tensors, "a dict of tensors"),
        ("trainer", trainer is None or isinstance(trainer, dict), "a dict or None"),
        ("meta", isinstance(meta, dict), "a dict"),
    ):
        if not fits:
            found = _describe(payload[key])
            raise _not_a_checkpoint(path, f"a checkpoint whose {key!r} is {found}, not {wanted}")
    return Checkpoint(model_config, tokenizer, model, trainer, meta)


def _not_a_checkpoint(path: Path, what: str) -> ValueError:
    return ValueError(
        f"{path} is not a gptlib checkpoint that can be loaded: it is {what}. Checkpoints are "
        "written by `python -m gptlib train` or gptlib.checkpoint.save_checkpoint; use another "
        "copy, or train again"
    )


def _unreadable(path: Path, exc: Exception) -> str:
    """What a file that torch.load(weights_only=True) refused is, in a few words."""
    if path.is_dir():
        return "a directory"
    size = path.stat().st_size
    if size == 0:
        return "an empty file (perhaps cut off by a full disk or an interrupted copy)"
    if unsafe := _UNSAFE_OBJECT.search(str(exc)):  # first: a protocol-0 pickle reads as text
        return f"a file holding code that a safe load refuses to run (it names {unsafe[1]})"
    with open(path, "rb") as f:  # binary, or a cut multi-byte character: U+FFFD
        text = f.read(4096).decode("utf-8", errors="replace")
    if "\ufffd" not in text and all(c.isprintable() or c in "\t\n\r\f\v" for c in text):
        return f"a text file of {size:,} bytes starting with {text[:40]!r}"
    first = textwrap.shorten(str(exc), 100, placeholder=" ...") or "no details"
    return f"not a complete torch file ({type(exc).__name__}: {first})"


def _describe(obj: object) -> str:
    if isinstance(obj, torch.Tensor):
        return f"a tensor of shape {list(obj.shape)}"
    if isinstance(obj, dict):
        keys = ", ".join(repr(k) for k in list(obj)[:5]) + (", ..." if len(obj) > 5 else "")
        return f"a dict with keys {keys}" if obj else "an empty dict"
    return f"{reprlib.repr(obj)} (type {type(obj).__name__})"
