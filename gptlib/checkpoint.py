"""Checkpoints: a trained model with its tokenizer, and optionally the state to resume training.

Introduced in notebook 08. A checkpoint file holds plain data only (tensors, numbers, strings,
lists and dicts), so it loads with `torch.load(weights_only=True)`, which builds nothing else: a
safeguard against code hidden in a file, though not a proof (torch before 2.10.0 has known
bypasses; docs/under_the_hood.ipynb lists them). It is written atomically: a crash mid-save
leaves the previous file intact. A file that is not a checkpoint is refused with a ValueError
that says what it is instead. Files of format version 2 (the position table at
`pos_emb.table.weight`) are converted when loaded; files of version 1 (before the unembedding
was renamed `lm_head`), and version 2 ones for good, convert with `upgrade_checkpoint`, or
`python -m gptlib upgrade OLD NEW`.
"""

from __future__ import annotations

import codecs
import os
import pickle
import re
import shlex
import zipfile
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from gptlib._atomic import atomic_path
from gptlib.data.tokenizer import CharTokenizer
from gptlib.distributed import World
from gptlib.model import GPT, GPTConfig
from gptlib.train import TrainConfig, Trainer

FORMAT = "gptlib-checkpoint"
# 2: the unembedding GPT.head became GPT.lm_head. 3: the position table became pos_emb.weight
# (the chapter's name), and the config lost the lesson switches, now lesson variants.
VERSION = 3
PAYLOAD_KEYS = ("format", "version", "model_config", "tokenizer", "model", "trainer", "meta")
_RENAMED = {
    2: {"head.weight": "lm_head.weight"},
    3: {"pos_emb.table.weight": "pos_emb.weight"},
}
# The config fields of versions 1 and 2 that version 3 dropped, with the value gptlib.GPT has;
# attn_impl (fused or written-out attention) changed no weights, so any value converts (None).
_DROPPED_IN_V3 = {"norm": "pre", "positions": "learned", "causal": True, "attn_impl": None}
# How files begin: torch.save's zip archive; its legacy format (a pickled magic number); any
# pickle of protocol 2 or later.
_ZIP_MAGIC = b"PK\x03\x04"
_LEGACY_TORCH_MAGIC = b"\x80\x02\x8a\nl\xfc\x9cF\xf9 j\xa8P\x19."
_PICKLE_PROTOCOLS = (b"\x02", b"\x03", b"\x04", b"\x05")
_UNSAFE_OBJECT = re.compile(r"Unsupported (?:global|class)\W+(?:GLOBAL )?([\w.]+)")


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
        saved = self.model_config.to_dict()
        have = model.config.to_dict()
        differ = {k: (saved[k], have[k]) for k in saved if saved[k] != have[k]}
        if differ:
            details = ", ".join(
                f"{k}: checkpoint {s!r} vs model {h!r}" for k, (s, h) in differ.items()
            )
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

    def resume(
        self,
        model: GPT,
        train_ids: torch.Tensor,
        val_ids: torch.Tensor,
        config: TrainConfig | None = None,
        world: World | None = None,
    ) -> Trainer:
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


def save_checkpoint(
    path: str | os.PathLike,
    model: GPT,
    tokenizer: CharTokenizer,
    trainer: Trainer | None = None,
    meta: dict | None = None,
) -> Path:
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
        "format": FORMAT,
        "version": VERSION,
        "model_config": model.config.to_dict(),
        "tokenizer": tokenizer.to_dict(),
        "model": _cpu_state(model),
        "trainer": None if trainer is None else trainer.state_dict(),
        "meta": dict(meta or {}),
    }
    with atomic_path(path) as tmp:
        torch.save(payload, tmp)
    return Path(path)


def _cpu_state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().cpu() for k, v in model.state_dict().items()}


def load_checkpoint(path: str | os.PathLike) -> Checkpoint:
    """Read a checkpoint with `torch.load(weights_only=True)`.

    A missing file raises FileNotFoundError; anything else that is not a readable checkpoint of
    this format version (a text file, random bytes, a directory, a plain tensor, a cut-off or
    unsafe file, an older or newer format) raises ValueError naming the path and what it holds.
    """
    path = Path(path)
    payload = _read_payload(path)
    version = payload.get("version")
    if version not in (2, VERSION):
        raise ValueError(_version_message(path, version))
    missing = [key for key in PAYLOAD_KEYS if key not in payload]
    if missing:
        raise _not_a_checkpoint(
            path, f"a torch file with gptlib's '{FORMAT}' marker but without {', '.join(missing)}"
        )
    payload = _upgraded(path, payload)
    try:
        model_config = GPTConfig(**payload["model_config"])
        tokenizer = CharTokenizer.from_dict(payload["tokenizer"])
    except (TypeError, KeyError, AttributeError) as exc:
        raise ValueError(
            f"{path} has gptlib's '{FORMAT}' marker, but its model config or tokenizer cannot be "
            f"read ({type(exc).__name__}: {_first_line(exc)}); it is corrupt: use another copy or "
            "retrain"
        ) from exc
    return Checkpoint(
        model_config=model_config,
        tokenizer=tokenizer,
        model_state=payload["model"],
        trainer_state=payload["trainer"],
        meta=payload["meta"],
    )


def upgrade_checkpoint(old: str | os.PathLike, new: str | os.PathLike) -> Path:
    """Rewrite the format-1 or format-2 checkpoint `old` as format 3 at `new`, atomically;
    return `new`. `new` may be `old` itself.

    Format 2 renamed the unembedding `GPT.head` to `GPT.lm_head` (state-dict key `head.weight`
    → `lm_head.weight`); format 3 renamed the position table `pos_emb.table.weight` →
    `pos_emb.weight` and dropped the config's lesson switches (norm, positions, attn_impl,
    causal). The weights, tokenizer, trainer state and meta are kept as they are.
    """
    old = Path(old)
    payload = _read_payload(old)
    version = payload.get("version")
    if version not in (1, 2):
        already = "; it loads as it is" if version == VERSION else ""
        raise ValueError(
            f"{old} has checkpoint format version {version!r}, and only versions 1 and 2 can be "
            f"upgraded (to version {VERSION}){already}"
        )
    with atomic_path(new) as tmp:
        torch.save(_upgraded(old, payload), tmp)
    return Path(new)


def _upgraded(path: Path, payload: dict) -> dict:
    """`payload` of format version 1, 2 or 3, in format 3."""
    state, config, version = payload.get("model"), payload.get("model_config"), payload["version"]
    renamed = {
        old: new for v, names in _RENAMED.items() if v > version for old, new in names.items()
    }
    if (
        not isinstance(state, dict)
        or not isinstance(config, dict)
        or not set(_RENAMED.get(version + 1, {})) <= set(state)
    ):
        raise ValueError(
            f"{path} says it is a version-{version} checkpoint but its model weights or config "
            "do not have that format's names; it is corrupt: use another copy or retrain"
        )
    variant = {
        key: config[key]
        for key, core in _DROPPED_IN_V3.items()
        if key in config and core is not None and config[key] != core
    }
    if variant:
        raise ValueError(
            f"{path} holds a lesson variant of the model ({variant}), which gptlib.GPT no longer "
            "builds: build it with gptlib.lessons.experiments.variants.build_gpt and load the "
            "file's 'model' weights into it, or retrain"
        )
    return {
        **payload,
        "version": VERSION,
        "model_config": {k: v for k, v in config.items() if k not in _DROPPED_IN_V3},
        "model": {renamed.get(key, key): value for key, value in state.items()},
    }


def _read_payload(path: Path) -> dict:
    """The dict inside a file that carries gptlib's format marker, of any format version."""
    if path.is_dir():
        found = sorted(p.name for p in path.glob("*.pt"))
        inside = f" holding {', '.join(found)}: pass one of them" if found else ""
        raise _not_a_checkpoint(path, f"a directory{inside}")
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}; train one with `python -m gptlib train`")
    with open(path, "rb") as f:
        head = f.read(4096)
    foreign = _foreign_content(head, path.stat().st_size)
    if foreign:
        raise _not_a_checkpoint(path, foreign)
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    # Whatever torch raises here comes from parsing bytes that are not what it expects; none of
    # it should reach the user as a traceback from inside torch's unpickler.
    except Exception as exc:
        raise _unreadable(path, head, exc) from exc
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise _not_a_checkpoint(
            path,
            f"a torch file holding {_describe(payload)}, without gptlib's '{FORMAT}' marker",
        )
    return payload


def _not_a_checkpoint(path: Path, what: str) -> ValueError:
    return ValueError(
        f"{path} is not a gptlib checkpoint: it is {what}. Checkpoints are written by "
        "`python -m gptlib train` or gptlib.checkpoint.save_checkpoint"
    )


def _foreign_content(head: bytes, size: int) -> str | None:
    """What a file is when its first bytes `head` rule out both formats torch.save writes."""
    if size == 0:
        return "an empty file (0 bytes), perhaps cut off by a full disk or an interrupted copy"
    if head.startswith((_ZIP_MAGIC, _LEGACY_TORCH_MAGIC)):
        return None
    if head[:1] == b"\x80" and head[1:2] in _PICKLE_PROTOCOLS:
        return f"a Python pickle of {size:,} bytes (protocol {head[1]}), not one torch.save wrote"
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(head).removeprefix("\ufeff")
    except UnicodeDecodeError:
        text = None
    if text and all(c.isprintable() or c in "\t\n\r\f\v" for c in text):
        return f"a text file of {size:,} bytes starting with {text[:40]!r}"
    return (
        f"{size:,} bytes of binary data, neither a zip archive nor a pickle (the two formats "
        f"torch.save writes); random-looking or another format, starting {head[:8].hex(' ')}"
    )


def _unreadable(path: Path, head: bytes, exc: Exception) -> ValueError:
    """The error for a file in one of torch's formats that torch.load refused."""
    unsafe = _UNSAFE_OBJECT.search(str(exc)) if isinstance(exc, pickle.UnpicklingError) else None
    if unsafe:
        return ValueError(
            f"{path} contains Python objects other than tensors and plain data "
            f"(it names {unsafe.group(1)}), so it was not loaded: unpickling such objects can run "
            "arbitrary code. gptlib checkpoints never contain them; only load this file with "
            "weights_only=False if you trust its source"
        )
    if head.startswith(_ZIP_MAGIC) and _is_foreign_zip(path):
        return _not_a_checkpoint(path, "a zip archive that torch.save did not write")
    return ValueError(
        f"{path} is truncated or corrupt ({type(exc).__name__}: {_first_line(exc)}); it may have "
        "been cut off by a full disk or an interrupted copy, or not be a torch file at all. Use "
        "an earlier checkpoint or train again"
    )


def _is_foreign_zip(path: Path) -> bool:
    """Whether `path` is an intact zip archive without torch's layout (…/data.pkl inside)."""
    try:
        with zipfile.ZipFile(path) as archive:
            return not any(name.endswith("/data.pkl") for name in archive.namelist())
    except zipfile.BadZipFile:  # e.g. a torch file cut off before its zip directory
        return False


def _describe(obj: object) -> str:
    if isinstance(obj, torch.Tensor):
        return f"a tensor of shape {list(obj.shape)}"
    if isinstance(obj, dict):
        if not obj:
            return "an empty dict"
        keys = ", ".join(repr(k) for k in list(obj)[:4])
        return f"a dict with keys {keys}{', ...' if len(obj) > 4 else ''}"
    return f"a {type(obj).__name__}"


def _first_line(exc: BaseException) -> str:
    """The informative line of an error (for torch's weights-only unpickler: its own reason)."""
    text = str(exc)
    _, marker, reason = text.partition("WeightsUnpickler error:")
    lines = [line.strip() for line in (reason if marker else text).splitlines() if line.strip()]
    return lines[0][:100] if lines else "no details"


def _version_message(path: Path, version: object) -> str:
    if version == 1:
        new = path.with_name(f"{path.stem}_v{VERSION}{path.suffix}")
        return (
            f"{path} is a gptlib checkpoint of format version 1; this gptlib reads versions 2 "
            f"and {VERSION}, in which the unembedding GPT.head is called GPT.lm_head. Convert it "
            f"with `python -m gptlib upgrade {shlex.quote(str(path))} "
            f"{shlex.quote(str(new))}`, or retrain"
        )
    if isinstance(version, int) and version > VERSION:
        return (
            f"{path} is a gptlib checkpoint of format version {version}, newer than this gptlib "
            f"reads (version {VERSION}); update gptlib to load it"
        )
    return f"{path} has an unknown checkpoint format version {version!r}; gptlib reads {VERSION}"
