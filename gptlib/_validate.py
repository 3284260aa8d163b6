"""Input checks shared by gptlib's modules: clear errors instead of tracebacks from inside torch.

Each message is written once, here; modules call these helpers where input enters them.
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
    if n_heads < 1 or d_model % n_heads:
        divisors = [h for h in range(1, d_model + 1) if d_model % h == 0]
        raise ValueError(
            f"d_model={d_model} is not divisible by n_heads={n_heads}: each head gets "
            f"d_model / n_heads features. Choose n_heads from {divisors}"
        )


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    """Raise ValueError unless `value` is one of `choices`."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")


def check_token_ids(
    idx: torch.Tensor,
    vocab_size: int,
    max_len: int | None = None,
    targets: torch.Tensor | None = None,
) -> None:
    """Raise ValueError unless `idx` is an integer tensor [B, T] of ids in [0, vocab_size)
    (at most max_len long, when given) and `targets`, when given, has the same shape."""
    if not isinstance(idx, torch.Tensor):
        raise ValueError(
            f"token ids must be a torch.Tensor of shape [B, T], got {type(idx).__name__}; "
            "wrap them with torch.tensor([...])"
        )
    if idx.dtype.is_floating_point or idx.dtype.is_complex or idx.dtype == torch.bool:
        raise ValueError(
            f"token ids must be an integer tensor (torch.long), got dtype {idx.dtype}; "
            "pass ids from the tokenizer, or convert with idx.long()"
        )
    if idx.dim() != 2:
        hint = " add a batch dimension with idx.unsqueeze(0)" if idx.dim() == 1 else ""
        raise ValueError(
            f"token ids must have shape [B, T] (2 dimensions), got shape {list(idx.shape)};{hint}"
        )
    T = idx.shape[1]
    if T == 0:
        raise ValueError("token ids have length T=0: give at least one token per sequence")
    if max_len is not None and T > max_len:
        raise ValueError(
            f"sequence length T={T} exceeds the model's max_len={max_len}; crop the input to "
            f"its last {max_len} tokens (idx[:, -{max_len}:]) or build the model with a larger "
            "max_len"
        )
    low, high = int(idx.min()), int(idx.max())
    if low < 0 or high >= vocab_size:
        bad = low if low < 0 else high
        raise ValueError(
            f"token id {bad} is out of range for vocab_size={vocab_size} (valid ids are "
            f"0..{vocab_size - 1}); was the text encoded with a different tokenizer?"
        )
    if targets is not None and targets.shape != idx.shape:
        raise ValueError(
            f"targets must have the same shape as idx {list(idx.shape)}, got "
            f"{list(targets.shape)}; targets are idx shifted left by one position"
        )


def check_features(x: torch.Tensor, d: int, name: str = "x") -> None:
    """Raise ValueError unless `x` is a floating tensor [B, T, d] with the given last size."""
    if not isinstance(x, torch.Tensor) or not x.dtype.is_floating_point:
        got = x.dtype if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"{name} must be a floating-point tensor [B, T, {d}], got {got}")
    if x.dim() != 3 or x.shape[-1] != d:
        raise ValueError(f"{name} must have shape [B, T, {d}], got {list(x.shape)}")


def check_attention_inputs(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None
) -> None:
    """Raise ValueError unless q [..., T_q, d_k], k [..., T_k, d_k], v [..., T_k, d_v] fit
    together and the mask, if any, is boolean."""
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"need q [..., T_q, d_k], k [..., T_k, d_k] and v [..., T_k, d_v], got q "
            f"{list(q.shape)}, k {list(k.shape)}, v {list(v.shape)}"
        )
    if mask is not None and mask.dtype != torch.bool:
        raise ValueError(
            f"mask must be boolean (True = may attend), got dtype {mask.dtype}; "
            "build it with gptlib.causal_mask(T)"
        )


def check_window(start: int, T: int, max_len: int) -> None:
    """Raise ValueError unless positions start..start+T-1 fit in a window of max_len."""
    if start + T > max_len:
        raise ValueError(
            f"positions {start}..{start + T - 1} exceed max_len={max_len}; crop the input to "
            f"at most {max_len} tokens"
        )


def check_sinusoid(T: int, d: int, base: float) -> None:
    """Raise ValueError unless T >= 1, d is even and >= 2, and base > 1."""
    if T < 1 or d < 2 or d % 2:
        raise ValueError(f"sinusoidal_positions needs T >= 1 and an even d >= 2, got T={T}, d={d}")
    if base <= 1:
        raise ValueError(f"base must be greater than 1, got {base}")
