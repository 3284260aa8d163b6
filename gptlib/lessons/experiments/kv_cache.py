"""Generation with the KV cache against recomputing the window for every new token.

Used by notebook 08 and `benchmarks/generation.py`: both paths decode greedily from
the same prompt, the outputs must be identical, and the two are timed in alternation so that
load on a shared machine slows both alike.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from gptlib._validate import check_positive_int
from gptlib.model import GPT


@dataclass(frozen=True)
class CacheComparison:
    """Greedy generation of `n_new` tokens after a prompt, with and without the KV cache.

    cached_s and recomputed_s are median seconds (of the clock given to `compare_cache`) over
    `rounds` alternating runs; identical says whether the two token sequences [B, T + n_new]
    were equal.
    """

    max_len: int
    n_new: int
    rounds: int
    identical: bool
    cached_s: float
    recomputed_s: float

    @property
    def speedup(self) -> float:
        return self.recomputed_s / self.cached_s

    def lines(self) -> list[str]:
        """The comparison as `name = value` lines."""
        return [
            f"window = {self.max_len}",
            f"with the cache = {self.cached_s * 1e3:z.0f} ms",
            f"recomputing = {self.recomputed_s * 1e3:z.0f} ms",
            f"speedup = {self.speedup:z.1f}x",
            f"identical = {self.identical}",
        ]


def compare_cache(
    model: GPT,
    prompt: torch.Tensor,
    n_new: int,
    rounds: int = 1,
    clock: Callable[[], float] = time.perf_counter,
) -> CacheComparison:
    """Decode `n_new` tokens greedily after `prompt` [B, T] both ways; time and compare them.

    `clock=time.process_time` counts CPU seconds instead of wall seconds (for a shared machine).
    """
    check_positive_int("rounds", rounds)
    runs: dict[bool, list[float]] = {True: [], False: []}
    outputs: dict[bool, torch.Tensor] = {}
    for _ in range(rounds):
        for use_cache in (True, False):
            start = clock()
            outputs[use_cache] = model.generate(prompt, n_new, temperature=0, use_cache=use_cache)
            runs[use_cache].append(clock() - start)
    return CacheComparison(
        max_len=model.config.max_len,
        n_new=n_new,
        rounds=rounds,
        identical=torch.equal(outputs[True], outputs[False]),
        cached_s=statistics.median(runs[True]),
        recomputed_s=statistics.median(runs[False]),
    )
