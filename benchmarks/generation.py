"""Generation with the KV cache vs recomputing the whole window, at 256, 512 and 1024 tokens.

    PYTHONPATH=. python benchmarks/generation.py [--rounds 3] [--threads N] [--cpu-time]

The chapter's model (d=128, h=4, L=4) with room for 1,024 positions, briefly trained on Tiny
Shakespeare so that greedy decoding has clear winners. For each context length C it takes the
first C − 64 held-out characters as the prompt and decodes 64 more greedily, so every step
reads close to C tokens of context: once through the KV caches (one pass over the prompt, then
one token per step through the same blocks), once recomputing the window at every step. The
two run in alternation; the script prints their medians, the ratio, and checks that both
paths wrote the same tokens.
"""

from __future__ import annotations

import argparse
import time

import torch
from _common import machine_line  # the script's folder

from gptlib import GPT, GPTConfig, seed_everything
from gptlib.data import CharTokenizer, tiny_shakespeare, train_val_split
from gptlib.lessons.shared.experiments.kv_cache import compare_cache
from gptlib.train import TrainConfig, Trainer

CONTEXTS, N_NEW, MAX_LEN = (256, 512, 1024), 64, 1024


def briefly_trained_model(steps: int) -> tuple[GPT, torch.Tensor]:
    """The chapter's GPT with max_len 1,024, trained for `steps` steps; and the held-out ids."""
    seed_everything(0)
    text = tiny_shakespeare()
    tokenizer = CharTokenizer.from_text(text)
    train_ids, val_ids = train_val_split(tokenizer.encode(text))
    model = GPT(GPTConfig(vocab_size=tokenizer.vocab_size, max_len=MAX_LEN))
    config = TrainConfig(steps=steps, batch_size=8, block_size=128, eval_interval=0)
    Trainer(model, train_ids, val_ids, config).run(progress=False)
    return model.eval(), val_ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    parser.add_argument("--train-steps", type=int, default=150)
    parser.add_argument("--cpu-time", action="store_true", help="time in CPU seconds")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    model, val_ids = briefly_trained_model(args.train_steps)
    clock = time.process_time if args.cpu_time else time.perf_counter
    print(machine_line())
    print(
        f"model: d=128 h=4 L=4 max_len={MAX_LEN}, {model.num_parameters():,} parameters, "
        f"{args.train_steps} training steps on Tiny Shakespeare; {N_NEW} new tokens after a "
        f"prompt of C - {N_NEW}; median of {args.rounds} alternating rounds"
    )
    print(f"{'context C':>9} {'KV cache':>10} {'recompute':>10} {'speed-up':>9}  identical")
    failed = []
    for context in CONTEXTS:
        prompt = val_ids[: context - N_NEW][None]
        model.generate(prompt, 4, temperature=0)  # warm-up at this length
        result = compare_cache(model, prompt, N_NEW, rounds=args.rounds, clock=clock)
        print(
            f"{context:>9} {result.cached_s * 1e3:>z7.1f} ms {result.recomputed_s * 1e3:>z7.1f} ms "
            f"{result.speedup:>z8.1f}x  {result.identical}"
        )
        if not result.identical:
            failed.append(context)
    if failed:
        raise SystemExit(f"cached and recomputed greedy outputs differ at contexts {failed}")


if __name__ == "__main__":
    main()
