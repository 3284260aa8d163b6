"""The model's edges: the checks that turn bad input into our ValueError.

`gptlib.model` calls them where a number or a tensor comes in from outside (a config, `forward`,
`generate`), and the rest of gptlib calls them on its own arguments. Each message says what was
wrong and what to do about it; the tests match their phrases, so a student's error reads the same
from every caller.
"""

from __future__ import annotations

import torch

_NOT_IDS = (torch.bool, torch.complex64, torch.complex128)  # not ids, besides the floats


def check_positive_int(name: str, value: object, minimum: int = 1) -> None:
    """ValueError unless `value` is an int (not a bool) of at least `minimum`."""
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        kind = {0: "a non-negative int", 1: "a positive int"}.get(minimum, f"an int >= {minimum}")
        raise ValueError(f"{name} must be {kind}, got {value!r}")


def check_heads(d_model: int, n_heads: int) -> None:
    """ValueError unless both are positive ints and n_heads divides d_model."""
    check_positive_int("d_model", d_model)
    check_positive_int("n_heads", n_heads)
    if d_model % n_heads:
        divisors = [h for h in range(1, d_model + 1) if d_model % h == 0]
        raise ValueError(
            f"d_model={d_model} is not divisible by n_heads={n_heads}; pick n_heads from {divisors}"
        )


def check_dropout(p: object) -> None:
    """ValueError unless `p` is a probability of dropping, in [0, 1)."""
    if not isinstance(p, int | float) or isinstance(p, bool) or not 0.0 <= p < 1.0:
        raise ValueError(f"dropout must be a number in [0, 1), got {p!r}")


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    """ValueError unless `value` is one of `choices`, naming the value and the choices."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")


def check_sampling(temperature: float, top_k: int | None) -> None:
    """ValueError for a temperature that is negative or not finite, or a top_k below 1."""
    if not 0 <= temperature < float("inf"):  # also catches NaN
        raise ValueError(
            f"temperature must be a finite number >= 0, got {temperature}; use 0 for greedy "
            "decoding, values below 1 for safer text and above 1 for more varied text"
        )
    if top_k is not None:  # None: no cut-off
        check_positive_int("top_k", top_k)


def check_token_ids(
    idx: torch.Tensor,
    vocab_size: int,
    *,
    max_len: int | None = None,
    targets: torch.Tensor | None = None,
    read_values: bool = False,
) -> None:
    """ValueError unless `idx` is an integer tensor [B, T] (B, T ≥ 1) of ids in [0, vocab_size),
    at most max_len long when given, and `targets`, when given, an integer tensor of its shape
    holding ids or -1, not all -1. Values are read on the CPU only, or with `read_values`
    (`generate`), and never under torch.compile: on an accelerator, reading them would stall
    every training step."""
    for name, ids in (("token ids", idx), ("targets", targets)):
        if ids is not None and not isinstance(ids, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor [B, T], got {type(ids).__name__}")
        if ids is not None and (ids.dtype.is_floating_point or ids.dtype in _NOT_IDS):
            raise ValueError(
                f"{name} must hold integer token ids, got dtype {ids.dtype}; convert with .long()"
            )
    if idx.dim() != 2 or 0 in idx.shape:
        raise ValueError(
            f"token ids must have shape [B, T] with B >= 1 and T >= 1, got {list(idx.shape)}"
            + ("; add a batch dimension with idx.unsqueeze(0)" if idx.dim() == 1 else "")
        )
    if max_len is not None and idx.shape[1] > max_len:
        raise ValueError(
            f"sequence length T={idx.shape[1]} exceeds the model's max_len={max_len}; crop to the "
            f"last {max_len} tokens (idx[:, -{max_len}:]) or build the model with a larger max_len"
        )
    if targets is not None and targets.shape != idx.shape:
        raise ValueError(
            f"targets must have the same shape as idx {list(idx.shape)}, got "
            f"{list(targets.shape)}; targets are idx shifted left by one position"
        )
    if not (read_values or idx.device.type == "cpu") or torch.compiler.is_compiling():
        return  # reading values would break a compiled graph (torch.compile) in two
    different_tokenizer = "was the text encoded with a different tokenizer?"
    _check_id_range("token id", idx, 0, vocab_size, different_tokenizer)
    if targets is None:
        return
    minus_one = "a target is the next token's id, or -1 to leave its position out of the loss"
    _check_id_range("target", targets, -1, vocab_size, minus_one)
    if bool((targets == -1).all()):
        raise ValueError("every target is -1 (left out of the loss): nothing to average")


def _check_id_range(name: str, ids: torch.Tensor, lowest: int, vocab_size: int, hint: str) -> None:
    """ValueError naming an id of `ids` outside [lowest, vocab_size) (the lowest, else the
    highest), with `hint`."""
    low, high = int(ids.min()), int(ids.max())
    if low < lowest or high >= vocab_size:
        raise ValueError(
            f"{name} {low if low < lowest else high} is out of range for vocab_size={vocab_size} "
            f"(valid ids are 0..{vocab_size - 1}); {hint}"
        )
