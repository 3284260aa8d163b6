"""The command line: `python -m gptlib train|sample` (notebook 08).

    python -m gptlib train                       # the chapter's GPT on Tiny Shakespeare
    python -m gptlib train --corpus tinyshakespeare --time-budget 60 --out shakespeare.pt
    python -m gptlib train --resume shakespeare.pt --steps 3000
    torchrun --standalone --nproc_per_node=2 -m gptlib train   # data-parallel, 2 processes
    python -m gptlib sample --checkpoint shakespeare.pt --prompt "ROMEO:" --temperature 0.8

`train` shows a progress bar on stderr, saves a checkpoint at every held-out estimate, and ends
by printing one line of JSON on stdout: steps, tokens, seconds, train_loss, val_loss,
tokens_per_s. Every command reports a bad input (a file that is not a checkpoint, an unknown
corpus, a diverging run) as one `error: ...` line on stderr and exit status 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Sequence

import torch

from gptlib.checkpoint import load_checkpoint, save_checkpoint
from gptlib.data.batches import train_val_split
from gptlib.data.corpora import default_corpus, load_corpus
from gptlib.data.tokenizer import CharTokenizer
from gptlib.device import fast_precision, pick_device, seed_everything
from gptlib.distributed import World, join_from_environment, leave
from gptlib.model import GPT, INITS, GPTConfig
from gptlib.train import PRECISIONS, NonFiniteLossError, TrainConfig, Trainer
from gptlib.validation import check_positive_int

# The command's defaults: the chapter's architecture at the shape and schedule that reach the
# lowest held-out loss in 60 s on a 2-core laptop (benchmarks/train_quality.py; the search is in
# docs/maintainers.md). The chapter's own shape is --n-layers 4. TrainConfig's defaults, which
# the notebooks train with, stay the chapter's.
MODEL_DEFAULTS = {"d_model": 128, "n_heads": 4, "n_layers": 1}
DEFAULTS = TrainConfig(batch_size=24, lr=1e-2)
MODEL_INIT = "pytorch"
TRAIN_FLAGS = (  # flag, TrainConfig field, type, help
    ("--steps", "steps", int, "optimiser steps"),
    ("--time-budget", "time_budget_s", float, "stop after this many seconds of training steps"),
    ("--batch-size", "batch_size", int, "sequences per batch B"),
    ("--block-size", "block_size", int, "context length T of training windows"),
    ("--lr", "lr", float, "peak learning rate"),
    ("--min-lr", "min_lr", float, "learning rate at the end of the cosine decay"),
    ("--warmup", "warmup_steps", int, "warmup steps"),
    ("--weight-decay", "weight_decay", float, "AdamW weight decay"),
    ("--grad-clip", "grad_clip", float, "max gradient norm, 0: off"),
    ("--eval-interval", "eval_interval", int, "steps between held-out estimates"),
    ("--eval-batches", "eval_batches", int, "batches per held-out estimate"),
    ("--seed", "seed", int, "seed of batch sampling and initialisation"),
)


def _train_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train",
        help="train a character-level GPT",
        description="Train a character-level GPT and save a checkpoint. With no arguments: the "
        "chapter's model on Tiny Shakespeare, which ships with gptlib (no download).",
    )
    data = p.add_argument_group("data")
    data.add_argument(
        "--corpus",
        help="tinyshakespeare (the default; packaged), sonnets (embedded), the name of a .txt "
        "file in $GPTLIB_DATA_DIR, or the path of a text file",
    )
    data.add_argument("--val-fraction", type=float, default=0.1, help="held-out tail (0.1)")
    run = p.add_argument_group("training (with --resume: the saved run's values unless given)")
    for flag, field_name, kind, what in TRAIN_FLAGS:
        default = getattr(DEFAULTS, field_name)
        run.add_argument(
            flag,
            dest=field_name,
            type=kind,
            metavar="SECONDS" if flag == "--time-budget" else None,
            help=f"{what} (default: {default})",
        )
    run.add_argument(
        "--precision",
        choices=("auto", *PRECISIONS),
        help="of the matrix products: auto picks bfloat16 where the hardware multiplies it "
        "natively, else float32 (default: auto)",
    )
    run.add_argument(
        "--compile",
        action="store_true",
        default=None,
        help="torch.compile the training step: faster steps after a compilation that counts in "
        "--time-budget (12-46 s on a 2-core CPU, so it pays in runs of minutes, not of one); "
        "falls back to eager where no compiler works",
    )
    run.add_argument(
        "--pause-after",
        type=int,
        metavar="STEPS",
        help="stop after this many steps and save; --resume continues the same schedule",
    )
    model = p.add_argument_group("model (ignored with --resume)")
    for name, value in MODEL_DEFAULTS.items():
        model.add_argument(f"--{name.replace('_', '-')}", type=int, default=value)
    model.add_argument(
        "--max-len", type=int, help="positions the model can read (default: --block-size)"
    )
    model.add_argument("--dropout", type=float, default=0.0)
    model.add_argument(
        "--init",
        choices=INITS,
        default=MODEL_INIT,
        help="starting weights: pytorch (each module's own default, as the chapter's code "
        f"gets them) or gpt2 (std 0.02, the library's default) (default: {MODEL_INIT})",
    )
    out = p.add_argument_group("output and machine")
    out.add_argument(
        "--out", help="checkpoint path (default: the --resume file, else gptlib_model.pt)"
    )
    out.add_argument("--no-save", action="store_true", help="do not write a checkpoint")
    out.add_argument("--resume", metavar="CHECKPOINT", help="continue a saved run")
    out.add_argument("--device", help="cpu, cuda or mps (default: the best available)")
    out.add_argument("--threads", type=int, help="CPU threads for torch")
    out.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def _sample_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sample",
        help="generate text from a checkpoint",
        description="Generate text from a trained checkpoint (uses the KV cache).",
    )
    p.add_argument("--checkpoint", default="gptlib_model.pt", help="checkpoint path")
    p.add_argument("--prompt", default="\n", help="text to continue (default: a newline)")
    p.add_argument("--n", type=int, default=300, help="characters to generate")
    p.add_argument("--temperature", type=float, default=0.8, help="0: greedy")
    p.add_argument("--top-k", type=int, help="keep only the k likeliest characters")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", help="cpu, cuda or mps (default: the best available)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gptlib",
        description="Train and sample a character-level GPT (the chapter's model).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="{train,sample}")
    _train_parser(sub)
    _sample_parser(sub)
    return parser


def _load_text(corpus: str | None) -> tuple[str, str]:
    if corpus is None:
        return default_corpus()
    return corpus, load_corpus(corpus)


def train(args: argparse.Namespace) -> dict | None:
    """Run the `train` command; returns the summary to print (None on ranks other than 0)."""
    if args.pause_after is not None:
        check_positive_int("--pause-after", args.pause_after)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = pick_device(args.device)
    world = join_from_environment(device)
    try:
        return _train(args, device, world)
    finally:
        leave(world)


def _train(args: argparse.Namespace, device: torch.device, world: World) -> dict | None:
    checkpoint = load_checkpoint(args.resume) if args.resume else None
    if checkpoint and checkpoint.trainer_state is None:
        raise ValueError(f"{args.resume} holds weights only; it cannot be resumed")
    base = TrainConfig.from_dict(checkpoint.trainer_state["config"]) if checkpoint else DEFAULTS
    given = {f: getattr(args, f) for _, f, _, _ in TRAIN_FLAGS if getattr(args, f) is not None}
    if not checkpoint and "time_budget_s" in given and "steps" not in given:
        given["steps"] = 10**9  # the time budget alone ends the run and its schedule
    if args.precision is not None or not checkpoint:
        choice = args.precision or "auto"
        given["precision"] = fast_precision(device) if choice == "auto" else choice
    if args.compile:
        given["compile"] = True
    config = dataclasses.replace(base, **given)
    corpus = args.corpus or (checkpoint.meta.get("corpus") if checkpoint else None)
    name, text = _load_text(corpus)
    tokenizer = checkpoint.tokenizer if checkpoint else CharTokenizer.from_text(text)
    train_ids, val_ids = train_val_split(tokenizer.encode(text), args.val_fraction)
    seed_everything(config.seed)
    if checkpoint:
        model = GPT(checkpoint.model_config).to(device)
        trainer = checkpoint.resume(model, train_ids, val_ids, config, world)
    else:
        model_config = GPTConfig(
            vocab_size=tokenizer.vocab_size,
            d_model=args.d_model,
            n_heads=args.n_heads,
            n_layers=args.n_layers,
            max_len=args.max_len or config.block_size,
            dropout=args.dropout,
        )
        model = GPT(model_config, init=args.init).to(device)
        trainer = Trainer(model, train_ids, val_ids, config, world)
    if not world.is_main:
        trainer.run(max_steps=args.pause_after, progress=False)
        return None
    processes = f" x {world.size} processes" if world.size > 1 else ""
    print(
        f"corpus {name}: {len(text):,} characters, vocabulary {tokenizer.vocab_size}; model "
        f"{model.num_parameters():,} parameters on {device}{processes}, {config.precision} "
        "matrix products",
        file=sys.stderr,
    )

    out = args.out or args.resume or "gptlib_model.pt"

    def save(t: Trainer) -> None:
        if not args.no_save:
            save_checkpoint(out, model, tokenizer, t, meta={"corpus": name})

    start = time.perf_counter()
    trainer.run(max_steps=args.pause_after, progress=not args.no_progress, on_evaluate=save)
    summary = trainer.summary()
    summary["wall_seconds"] = round(time.perf_counter() - start, 3)
    summary["precision"] = config.precision
    if not args.no_save:
        print(f"checkpoint saved to {out}", file=sys.stderr)
    return summary


def sample(args: argparse.Namespace) -> str:
    """Run the `sample` command; returns the prompt and its continuation."""
    device = pick_device(args.device)
    checkpoint = load_checkpoint(args.checkpoint)
    model = checkpoint.build_model(device)
    prompt = checkpoint.tokenizer.encode(args.prompt)[None].to(device)  # [1, T]
    generator = torch.Generator(device=device).manual_seed(args.seed)
    out = model.generate(
        prompt, args.n, temperature=args.temperature, top_k=args.top_k, generator=generator
    )
    return checkpoint.tokenizer.decode(out[0])


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "train":
            summary = train(args)
            if summary is not None:
                print(json.dumps(summary), flush=True)
        else:
            print(sample(args), flush=True)
    except (ValueError, OSError, NonFiniteLossError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0
