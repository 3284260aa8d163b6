"""Input checks at the model's edges (`GPTConfig`, `GPT.forward`, `GPT.generate`), each message
written once, here, saying what was wrong and what to do; data, training and lessons reuse them.
"""

from __future__ import annotations

import torch


def check_positive_int(name: str, value: object, minimum: int = 1) -> None:
    """Raise ValueError unless `value` is an int (not a bool) of at least `minimum`."""
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        kind = {0: "a non-negative int", 1: "a positive int"}.get(minimum, f"an int >= {minimum}")
        raise ValueError(f"{name} must be {kind}, got {value!r}")


def check_heads(d_model: int, n_heads: int) -> None:
    """Raise ValueError unless n_heads divides d_model (each head gets d_model / n_heads)."""
    if d_model % n_heads:
        divisors = [h for h in range(1, d_model + 1) if d_model % h == 0]
        raise ValueError(
            f"d_model={d_model} is not divisible by n_heads={n_heads}: each head gets "
            f"d_model / n_heads features. Choose n_heads from {divisors}"
        )


def _integer_ids(name: str, ids: object) -> torch.Tensor:
    """`ids` as a tensor of integers, or ValueError saying what it is instead."""
    if not isinstance(ids, torch.Tensor):
        raise ValueError(
            f"{name} must be a torch.Tensor of shape [B, T], got {type(ids).__name__}; "
            "wrap them with torch.tensor([...])"
        )
    if ids.dtype.is_floating_point or ids.dtype.is_complex or ids.dtype == torch.bool:
        raise ValueError(
            f"{name} must hold integer token ids, got dtype {ids.dtype}; pass ids from the "
            "tokenizer, or convert with .long()"
        )
    return ids


def check_token_ids(
    idx: torch.Tensor,
    vocab_size: int,
    *,
    max_len: int | None = None,
    targets: torch.Tensor | None = None,
    read_values: bool = False,
) -> None:
    """Raise ValueError unless `idx` is an integer tensor [B, T] (any integer dtype) of ids in
    [0, vocab_size), at most max_len long when given, and `targets`, when given, an integer
    tensor of the same shape whose entries are ids or -1, nanoGPT's mark for a position to leave
    out of the loss.

    The ids' range needs their values on the host: on the CPU that is free, on an accelerator
    it would stall the device at every training step, so there it is read only when
    `read_values` (`generate`, once per call).
    """
    _integer_ids("token ids", idx)
    if idx.dim() != 2:
        hint = " add a batch dimension with idx.unsqueeze(0)" if idx.dim() == 1 else ""
        raise ValueError(
            f"token ids must have shape [B, T] (2 dimensions), got shape {list(idx.shape)};{hint}"
        )
    if (T := idx.shape[1]) == 0:
        raise ValueError("token ids have length T=0: give at least one token per sequence")
    if max_len is not None and T > max_len:
        raise ValueError(
            f"sequence length T={T} exceeds the model's max_len={max_len}; crop the input to "
            f"its last {max_len} tokens (idx[:, -{max_len}:]) or build the model with a larger "
            "max_len"
        )
    if targets is not None:
        _integer_ids("targets", targets)
        if targets.shape != idx.shape:
            raise ValueError(
                f"targets must have the same shape as idx {list(idx.shape)}, got "
                f"{list(targets.shape)}; targets are idx shifted left by one position"
            )
    if not (read_values or idx.device.type == "cpu"):
        return
    low, high = int(idx.min()), int(idx.max())
    if low < 0 or high >= vocab_size:
        raise ValueError(
            f"token id {low if low < 0 else high} is out of range for vocab_size={vocab_size} "
            f"(valid ids are 0..{vocab_size - 1}); was the text encoded with a different tokenizer?"
        )
    if targets is not None:
        low, high = int(targets.min()), int(targets.max())
        if low < -1 or high >= vocab_size:
            raise ValueError(
                f"target {low if low < -1 else high} is out of range for vocab_size={vocab_size}: "
                f"a target is the id of the next token (0..{vocab_size - 1}), or -1 to leave "
                "that position out of the loss"
            )
        if high == -1:
            raise ValueError("every target is -1 (left out of the loss): nothing to average")


def check_sampling(temperature: float, top_k: int | None) -> None:
    """Raise ValueError for a temperature that is negative or not finite, or a top_k below 1."""
    if not 0 <= temperature < float("inf"):  # also catches NaN
        raise ValueError(
            f"temperature must be a finite number >= 0, got {temperature}; use 0 for greedy "
            "decoding, values below 1 for safer text and above 1 for more varied text"
        )
    if top_k is not None:  # None: no cut-off
        check_positive_int("top_k", top_k)


def check_dropout(p: object) -> None:
    """Raise ValueError unless `p` is a probability of dropping, in [0, 1)."""
    if not isinstance(p, int | float) or isinstance(p, bool) or not 0.0 <= p < 1.0:
        raise ValueError(f"dropout must be a number in [0, 1), got {p!r}")


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    """Raise ValueError unless `value` is one of `choices`, naming the value and the choices."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
