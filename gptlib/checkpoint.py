"""Checkpoints: a trained model with its tokenizer, and optionally the state to resume training.

Introduced in notebook 07. A checkpoint file holds plain data only (tensors, numbers, strings,
lists and dicts), so it loads with `torch.load(weights_only=True)`, which cannot run code hidden
in a file. It is written atomically: a crash mid-save leaves the previous file intact.
"""

from __future__ import annotations

import os
import pickle
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from gptlib._atomic import atomic_path
from gptlib.data.tokenizer import CharTokenizer
from gptlib.model import GPT, GPTConfig
from gptlib.train import TrainConfig, Trainer

FORMAT = "gptlib-checkpoint"
VERSION = 1


@dataclass
class Checkpoint:
    """The contents of a checkpoint file (notebook 07).

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
        """Copy the saved weights into `model`, whose config must match the saved one.

        Only `attn_impl` may differ: the explicit and fused attention paths share their weights.
        """
        saved = self.model_config.to_dict()
        have = model.config.to_dict()
        differ = {k: (saved[k], have[k]) for k in saved if saved[k] != have[k] and k != "attn_impl"}
        if differ:
            details = ", ".join(
                f"{k}: checkpoint {s!r} vs model {h!r}" for k, (s, h) in differ.items()
            )
            raise ValueError(
                f"the checkpoint does not fit this model ({details}); build the model from the "
                "checkpoint with checkpoint.build_model(), or use GPTConfig(**saved) with the "
                "checkpoint's settings"
            )
        model.load_state_dict(self.model_state)

    def resume(
        self,
        model: GPT,
        train_ids: torch.Tensor,
        val_ids: torch.Tensor,
        config: TrainConfig | None = None,
    ) -> Trainer:
        """A Trainer that continues exactly where the saved run stopped.

        `config` defaults to the saved training config; pass one with a larger `steps` to train
        further (the learning-rate schedule then stretches to the new length).
        """
        if self.trainer_state is None:
            raise ValueError(
                "this checkpoint holds weights only (it was saved without a trainer), so there "
                "is no optimizer state to resume from; start a new run from its weights instead"
            )
        self.load_into(model)
        config = config or TrainConfig.from_dict(self.trainer_state["config"])
        trainer = Trainer(model, train_ids, val_ids, config)
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
    """Read a checkpoint with `torch.load(weights_only=True)`; clear errors for bad files."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}; train one with `python -m gptlib train`")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        raise ValueError(
            f"{path} contains Python objects other than tensors and plain data, so it was not "
            "loaded: unpickling such objects can run arbitrary code. gptlib checkpoints never "
            "contain them; only load this file with weights_only=False if you trust its source"
        ) from exc
    except (PermissionError, FileNotFoundError):
        raise
    except (RuntimeError, EOFError, KeyError, OSError) as exc:
        raise ValueError(
            f"{path} is truncated or corrupt ({type(exc).__name__}: {str(exc)[:80]}); it may "
            "have been cut off by a full disk or an interrupted copy. Use an earlier checkpoint "
            "or train again"
        ) from exc
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(
            f"{path} is not a gptlib checkpoint (no '{FORMAT}' marker); write checkpoints with "
            "gptlib.checkpoint.save_checkpoint"
        )
    if payload.get("version") != VERSION:
        raise ValueError(
            f"{path} has checkpoint format version {payload.get('version')}, this gptlib reads "
            f"version {VERSION}; load it with the gptlib version that wrote it"
        )
    return Checkpoint(
        model_config=GPTConfig(**payload["model_config"]),
        tokenizer=CharTokenizer.from_dict(payload["tokenizer"]),
        model_state=payload["model"],
        trainer_state=payload["trainer"],
        meta=payload.get("meta", {}),
    )
