"""Generation with the KV cache vs recomputing the whole window for every new token.

    PYTHONPATH=. python benchmarks/generation.py [--rounds 5] [--threads N]

Notebook 07's model (d=128, h=4, L=4, max_len=256), briefly trained on Tiny Shakespeare (or
the embedded sonnets) so that greedy decoding has clear winners, fills its 256-token context
from a 16-token prompt. Both paths run in alternation; the script prints their medians, the
ratio, and checks that the greedy outputs are identical.
"""

from __future__ import annotations

import argparse
import time

import torch
from _common import machine_line

from gptlib import GPT, GPTConfig, seed_everything
from gptlib.data import CharTokenizer, default_corpus, train_val_split
from gptlib.lessons.experiments.kv_cache import compare_cache
from gptlib.train import TrainConfig, Trainer

PROMPT, CONTEXT = 16, 256


def briefly_trained_model(steps: int) -> tuple[GPT, torch.Tensor, str]:
    seed_everything(0)
    name, text = default_corpus()
    tokenizer = CharTokenizer.from_text(text)
    train_ids, val_ids = train_val_split(tokenizer.encode(text))
    model = GPT(GPTConfig(vocab_size=tokenizer.vocab_size, max_len=CONTEXT))
    config = TrainConfig(steps=steps, batch_size=4, block_size=CONTEXT, eval_interval=0)
    Trainer(model, train_ids, val_ids, config).run(progress=False)
    return model.eval(), val_ids[:PROMPT][None], name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    parser.add_argument("--train-steps", type=int, default=100)
    parser.add_argument("--cpu-time", action="store_true", help="time in CPU seconds")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    model, prompt, corpus = briefly_trained_model(args.train_steps)
    clock = time.process_time if args.cpu_time else time.perf_counter
    model.generate(prompt, CONTEXT - PROMPT, temperature=0)  # warm-up
    result = compare_cache(model, prompt, CONTEXT - PROMPT, rounds=args.rounds, clock=clock)
    print(machine_line())
    print(
        f"model: d=128 h=4 L=4 max_len={CONTEXT}, {model.num_parameters():,} parameters, "
        f"{args.train_steps} training steps on {corpus}; prompt {PROMPT} -> {CONTEXT} tokens; "
        f"median of {args.rounds} alternating rounds"
    )
    for name, seconds in (("KV cache", result.cached_s), ("recompute", result.recomputed_s)):
        print(f"{name:10s} {seconds * 1e3:8.1f} ms  {result.n_new / seconds:8.0f} tokens/s")
    print(
        f"speed-up of the KV cache: {result.speedup:.1f}x; greedy outputs identical: "
        f"{result.identical}"
    )
    if not result.identical:
        raise SystemExit("the cached and recomputed greedy outputs differ")


if __name__ == "__main__":
    main()
