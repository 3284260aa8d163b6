"""Which outputs a change of one token reaches (notebook 03).

The student measures it (`output_changes` in the notebook): change[p, t] is how far position t's
logits move when token p changes. A causal model's change matrix is zero below its diagonal
(t < p); without the mask every entry moves. `perturbation` reads one row of it for the explorer,
and `with_causal` gives the same weights with or without the mask.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from functools import partial

import torch
import torch.nn.functional as F

from gptlib.lessons.shared.experiments.attention_maps import attention_weights
from gptlib.lessons.shared.experiments.variants import Variant, build_gpt
from gptlib.model import GPT, CausalSelfAttention, attention_with_weights


def with_causal(model: GPT, causal: bool) -> GPT:
    """A copy of `model` (a `gptlib.GPT`) with the same weights, with or without the causal mask
    (the unmasked lesson variant). The mask has no parameters, so the state dict fits either way.
    """
    twin = build_gpt(model.config, Variant(attention="fused" if causal else "unmasked"))
    twin.load_state_dict(model.state_dict())
    return twin.to(next(model.parameters()).device).train(model.training)


def with_diagonal_blocked(model: GPT, fused: bool = True) -> GPT:
    """A copy of `model` with the same weights whose every attention reads only the keys j < i
    (the diagonal blocked too), so that query 0 has no key left. `fused` picks the path: torch's
    `F.scaled_dot_product_attention`, the call gptlib's attention makes, or the softmax written
    out (`attention_with_weights`)."""
    twin = copy.deepcopy(model)
    for block in twin.blocks:
        block.attn.attend = partial(_attend_strictly_before, block.attn, fused)
    return twin


def _attend_strictly_before(
    attn: CausalSelfAttention, fused: bool, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor
) -> torch.Tensor:
    """q, k, v [B, h, T, d_h] → [B, h, T, d_h], query i mixing the values of keys j < i."""
    T = q.shape[-2]
    before = torch.ones(T, T, dtype=torch.bool, device=q.device).tril(diagonal=-1)  # [T, T]
    if fused:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=before)
    return attention_with_weights(q, k, v, mask=before)[0]


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
            f"earliest changed position = {min(self.changed, default=None)}",
            f"earlier positions unchanged = {set(range(self.position)) <= set(self.unchanged)}",
        ]


def perturbation(
    changes: torch.Tensor, position: int, causal: bool, atol: float = 1e-5
) -> Perturbation:
    """Row `position` of a change matrix [T, T] (change[p, t]: how far position t's logits moved
    when token p changed): the positions that moved by more than `atol`, and those that did not.
    `causal` says which model the matrix was measured on."""
    if changes.dim() != 2 or changes.shape[0] != changes.shape[1]:
        raise ValueError(f"changes must be a square matrix [T, T], got {list(changes.shape)}")
    T = changes.shape[0]
    if not 0 <= position < T:
        raise ValueError(f"position must be in 0..{T - 1}, got {position}")
    change = changes[position].detach().float()
    moved = change > atol
    changed = [t for t in range(T) if moved[t]]
    unchanged = [t for t in range(T) if not moved[t]]
    return Perturbation(causal, position, change, changed, unchanged)


@dataclass(frozen=True)
class ChangePath:
    """How a changed token p reaches its own position and the next one, p + 1, in a Pre-LN GPT,
    measured with the two inputs (the token at p old and new). Norms are over the feature axis.

    Position p receives the change directly: its row of the token embedding (`own`). Position
    p + 1 receives it only through the attention of block 0: its weight on key p (`weight`, the
    heads' mean) times the change of key p's value pushed through W_V and then W_O (`value`,
    after ln1). The logit ratio of the two positions splits exactly into four factors: 1/weight,
    own/value, `rest` (what the MLPs and the later blocks add, the stream ratio over the first
    two factors) and `readout` (ln_f and the unembedding, the logit ratio over the stream ratio).
    """

    position: int
    own: float  # ||Δ embedding at p||
    weight: float  # block 0's attention weight of query p + 1 on key p, mean over heads
    value: float  # ||W_O (W_V Δ ln1(x_p))||: the change key p's value carries, projected
    stream_ratio: float  # ||Δ stream at p|| / ||Δ stream at p + 1||, after the last block
    logit_ratio: float  # max |Δ logit| at p / max |Δ logit| at p + 1

    def factors(self) -> dict[str, float]:
        """The four factors whose product is `logit_ratio`."""
        by_weight, by_value = 1 / self.weight, self.own / self.value
        return {
            "1 / attention weight on key p": by_weight,
            "value path W_V, W_O (GPT-2 init)": by_value,
            "MLPs and later blocks": self.stream_ratio / (by_weight * by_value),
            "ln_f and unembedding": self.logit_ratio / self.stream_ratio,
        }


@torch.no_grad()
def change_path(model: GPT, idx: torch.Tensor, other: torch.Tensor, position: int) -> ChangePath:
    """Measure `ChangePath` for one sequence: idx and other [1, T], token `position` of idx
    replaced by other's (position < T - 1, so that position + 1 exists)."""
    if idx.dim() != 2 or idx.shape[0] != 1 or idx.shape != other.shape:
        raise ValueError(
            f"idx and other must both be [1, T], got {list(idx.shape)}, {list(other.shape)}"
        )
    if not 0 <= position < idx.shape[1] - 1:
        raise ValueError(f"position must be in 0..{idx.shape[1] - 2}, got {position}")
    p = position
    edited = idx.clone()
    edited[:, p] = other[:, p]
    block, d = model.blocks[0], model.config.d_model
    streams, logits, values, embedded = [], [], [], []
    for ids in (idx, edited):
        x = model.tok_emb(ids) + model.pos_emb(torch.arange(ids.shape[1], device=ids.device))
        embedded.append(x)  # [1, T, d]
        values.append(block.attn.qkv(block.ln1(x))[0, p, 2 * d :])  # v of key p, [d]
        for b in model.blocks:
            x = b(x)
        streams.append(x[0])  # [T, d]
        logits.append(model.lm_head(model.ln_f(x))[0])  # [T, V]
    weights = attention_weights(block.attn, block.ln1(embedded[0]))  # [1, h, T, T]
    stream_change = (streams[1] - streams[0]).norm(dim=-1)  # [T]
    logit_change = (logits[1] - logits[0]).abs().amax(dim=-1)  # [T]
    return ChangePath(
        position=p,
        own=(embedded[1][0, p] - embedded[0][0, p]).norm().item(),
        weight=weights[0, :, p + 1, p].mean().item(),
        value=(block.attn.proj.weight @ (values[1] - values[0])).norm().item(),
        stream_ratio=(stream_change[p] / stream_change[p + 1]).item(),
        logit_ratio=(logit_change[p] / logit_change[p + 1]).item(),
    )
