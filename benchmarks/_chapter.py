"""The chapter's model, the reference the benchmarks measure gptlib's training against.

It is gptlib's own GPT, so the course keeps one copy of the chapter's model: built as the
chapter's code builds it (PyTorch's default initialisation, untied unembedding, learned
positions, Pre-LN) and computing attention as the chapter writes it (the softmax written out,
`fused=False`). What the benchmarks set against gptlib is the chapter's plain loop around it.

Shared by train_throughput.py (speed per step) and train_quality.py (held-out loss in 60 s).
"""

from __future__ import annotations

from gptlib import GPT, GPTConfig


def chapter_gpt(
    vocab_size: int, d_model: int = 128, n_heads: int = 4, n_layers: int = 4, max_len: int = 64
) -> GPT:
    """The chapter's model at these sizes: ids [B, T] → (logits [B, T, V], loss or None)."""
    config = GPTConfig(vocab_size, d_model, n_heads, n_layers, max_len)
    model = GPT(config, init="pytorch")
    for block in model.blocks:
        block.attn.fused = False
    return model
