"""Which outputs depend on which inputs: testing a model for leaks from the future (notebook 03).

A causal language model's logits at position t may depend on tokens 0..t only. These probes
check that by computation: run every prefix on its own, or change one token and see which
positions' logits move.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from gptlib.lessons.experiments.variants import Variant, build_gpt
from gptlib.model import GPT, check_token_ids

LogitsFn = Callable[[torch.Tensor], tuple[torch.Tensor, object]]


@torch.no_grad()
def prefix_logits(model: LogitsFn, idx: torch.Tensor) -> torch.Tensor:
    """Logits [B, T, V] whose row t comes from a separate forward pass over idx[:, :t+1] alone.

    `model(idx)` must return (logits [B, T, V], anything), as `gptlib.GPT` does. For a causal
    model this equals one forward pass over the whole of idx [B, T]; it is the setting that
    generation faces, where the tokens after t do not exist yet.
    """
    if idx.dim() != 2 or idx.shape[1] < 1:
        raise ValueError(f"idx must have shape [B, T] with T >= 1, got {list(idx.shape)}")
    return torch.stack([model(idx[:, : t + 1])[0][:, -1] for t in range(idx.shape[1])], dim=1)


def replace_token(idx: torch.Tensor, position: int, token: int) -> torch.Tensor:
    """A copy of idx [B, T] with the token at `position` set to `token` in every sequence."""
    T = idx.shape[-1]
    if not 0 <= position < T:
        raise ValueError(
            f"position must be in 0..{T - 1} for a sequence of length {T}, got {position}"
        )
    changed = idx.clone()
    changed[..., position] = token
    return changed


@torch.no_grad()
def output_change(
    model: LogitsFn, idx: torch.Tensor, position: int, token: int | None = None
) -> torch.Tensor:
    """How far each position's logits move when the token at `position` changes, [T].

    Entry t is max |logits'[:, t] − logits[:, t]| over the batch and the vocabulary, where the
    primed logits come from idx [B, T] with `position` replaced by `token` (default: the next
    id, wrapping around the vocabulary, so the token really changes).
    """
    logits, _ = model(idx)
    if token is None:
        token = (int(idx[0, position]) + 1) % logits.shape[-1]
    check_token_ids(torch.tensor([[token]]), logits.shape[-1])
    changed_logits, _ = model(replace_token(idx, position, token))
    return (changed_logits - logits).abs().amax(dim=(0, 2))


def changed_positions(change: torch.Tensor, atol: float = 1e-5) -> list[int]:
    """Positions whose change [T] (from `output_change`) exceeds `atol`, as a sorted list."""
    return [int(t) for t in torch.nonzero(change > atol).flatten()]


def with_causal(model: GPT, causal: bool) -> GPT:
    """A copy of `model` (a `gptlib.GPT`) with the same weights, with or without the causal mask
    (the unmasked lesson variant). The mask has no parameters, so the state dict fits either way.
    """
    twin = build_gpt(model.config, Variant(attention="fused" if causal else "unmasked"))
    twin.load_state_dict(model.state_dict())
    return twin.to(next(model.parameters()).device).train(model.training)


def mask_twins(model: GPT) -> dict[bool, GPT]:
    """{True: the model with its mask, False: the same weights without it}, in eval mode."""
    return {causal: with_causal(model, causal).eval() for causal in (True, False)}


@dataclass(frozen=True)
class Perturbation:
    """What changing one token did: each position's logit change [T], and who moved."""

    causal: bool
    position: int
    change: torch.Tensor
    changed: list[int]
    unchanged: list[int]

    def lines(self) -> list[str]:
        """The numbers as `name = value` lines, printed by the explorer, read by browser tests."""
        return [
            f"causal mask = {'on' if self.causal else 'off'}",
            f"perturbed position = {self.position}",
            f"changed positions = {self.changed}",
            f"number changed = {len(self.changed)}",
            f"earliest changed position = {min(self.changed)}",
            f"earlier positions unchanged = {self.unchanged == list(range(self.position))}",
        ]


def perturb(
    twins: dict[bool, GPT], idx: torch.Tensor, position: int, causal: bool, atol: float = 1e-5
) -> Perturbation:
    """Change token `position` of idx [B, T] and measure every position's logits.

    `twins` comes from `mask_twins`; `causal` picks the model with or without the mask.
    """
    change = output_change(twins[causal], idx, position)
    changed = changed_positions(change, atol)
    unchanged = [t for t in range(idx.shape[1]) if t not in changed]
    return Perturbation(causal, position, change, changed, unchanged)
