"""Training throughput at the reference config: gptlib vs the chapter's code written plainly.

    PYTHONPATH=. python benchmarks/train_throughput.py [--rounds 15] [--threads N]

Config: L=4, h=4, d=128, block 64, batch 12, V=65 (the widely used reference measures about
19.7k tokens/s, 39 ms per step, on the 2-core machine this project targets). Both loops run
in alternation in one process, so load on a shared machine hits them alike; the script prints
median milliseconds per step, tokens per second, their ratio, and the achieved FLOP/s as a
share of this CPU's measured fp32 matmul peak.
"""

from __future__ import annotations

import argparse
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from _common import interleaved_medians, machine_line  # the script's folder
from torch.utils.flop_counter import FlopCounterMode

from gptlib import GPTConfig
from gptlib.lessons.experiments.costs import measure_matmul_peak
from gptlib.lessons.experiments.variants import Variant, build_gpt
from gptlib.train import TrainConfig, Trainer

B, T, V = 12, 64, 65


# --- the chapter's model, as a reader would type it in (explicit attention) -----------------
class ChapterAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.h, self.dh = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (t.view(B, T, self.h, self.dh).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.dh)
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), 1)
        scores = scores.masked_fill(mask, float("-inf"))
        out = F.softmax(scores, dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(B, T, d))


class ChapterBlock(nn.Module):
    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = ChapterAttention(d_model, n_heads)
        self.up, self.down = nn.Linear(d_model, 4 * d_model), nn.Linear(4 * d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.down(F.gelu(self.up(self.ln2(x))))


class ChapterGPT(nn.Module):
    def __init__(self, vocab_size: int, d_model=128, n_heads=4, n_layers=4, max_len=64) -> None:
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(ChapterBlock(d_model, n_heads) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(idx.shape[1]))
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def chapter_step_fn(data: torch.Tensor):
    model = ChapterGPT(V)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)

    def step() -> None:  # the chapter's loop body
        ix = torch.randint(len(data) - T - 1, (B,))
        x = torch.stack([data[i : i + T] for i in ix])
        y = torch.stack([data[i + 1 : i + T + 1] for i in ix])
        loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return model, step


def gptlib_step_fn(data: torch.Tensor, attention: str):
    model = build_gpt(GPTConfig(vocab_size=V, max_len=T), Variant(attention=attention))
    trainer = Trainer(
        model, data, data[:1000], TrainConfig(steps=10**9, batch_size=B, block_size=T)
    )
    return model, trainer.train_step


def flops_per_step(model: ChapterGPT, data: torch.Tensor) -> int:
    """Matmul FLOPs of one forward + backward pass, counted by torch."""
    x, y = data[:T].repeat(B, 1), data[1 : T + 1].repeat(B, 1)
    with FlopCounterMode(display=False) as counter:
        model(x, y).backward()
    model.zero_grad()
    return counter.get_total_flops()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="alternations of 4 steps each")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    parser.add_argument(
        "--cpu-time",
        action="store_true",
        help="time in CPU seconds of this process (use with --threads 1 on a busy machine)",
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    data = torch.randint(V, (200_000,))
    chapter_model, chapter_step = chapter_step_fn(data)
    candidates = {
        "chapter code (explicit attention, AdamW)": chapter_step,
        "gptlib (SDPA, fused AdamW, clipping)": gptlib_step_fn(data, "fused")[1],
        "gptlib, written-out attention": gptlib_step_fn(data, "written-out")[1],
    }
    for step in candidates.values():
        for _ in range(3):
            step()
    print(machine_line())
    flops = flops_per_step(chapter_model, data)
    peak = measure_matmul_peak(size=1024, repeats=20)
    clock = time.process_time if args.cpu_time else time.perf_counter
    medians = interleaved_medians(candidates, rounds=args.rounds, per_round=4, clock=clock)
    base = medians["chapter code (explicit attention, AdamW)"]
    print(f"config: L=4 h=4 d=128 block {T} batch {B} V={V}; {flops / 1e9:z.2f} GFLOP per step")
    kind = "CPU" if args.cpu_time else "wall"
    print(f"timing: median of {args.rounds} rounds of 4 steps, {kind} seconds")
    print(f"fp32 matmul peak (1024², best of 20): {peak / 1e9:z.1f} GFLOP/s")
    for name, seconds in medians.items():
        print(
            f"{name:42s} {seconds * 1e3:z7.1f} ms/step  {B * T / seconds:z8.0f} tokens/s  "
            f"speed-up {base / seconds:z4.2f}x  {flops / seconds / 1e9:z6.1f} GFLOP/s "
            f"= {flops / seconds / peak:z.0%} of peak"
        )


if __name__ == "__main__":
    main()
