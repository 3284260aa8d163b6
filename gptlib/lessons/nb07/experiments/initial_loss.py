"""Why an untrained model's loss is not exactly ln V: the cross-entropy taken apart.

Notebook 07 (question 1). At one position with logits z [V] and target t, the loss is
logsumexp(z) - z_t. Subtracting the row's mean m changes neither term's difference, so with
u = z - m (the logits relative to their row mean, which sum to 0):

    loss = logsumexp(u) - u_t          exactly,

and logsumexp(u) >= ln V (Jensen: the mean of exp(u) is at least exp of the mean of u, 0), with
logsumexp(u) ≈ ln V + var(u)/2 when the spread of u is small. So the mean loss over positions is
ln V + `spread_cost` - `target_lead`: the spread costs about half the within-row variance, and
`target_lead`, the mean of u_t, is what the targets' logits happen to stand above their rows'
means. At initialisation nothing links the two, so it is a matter of luck, of either sign.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class InitialLoss:
    """The parts of a mean cross-entropy, in nats (see the module docstring)."""

    loss: float  # the mean cross-entropy
    ln_v: float  # the loss of a uniform guess
    row_sigma: float  # √ of the mean within-row variance of the logits
    overall_sigma: float  # std of all logits together (row means included)
    spread_cost: float  # mean logsumexp(u) - ln V, exactly; >= 0
    target_lead: float  # mean u_t: the targets' logits above their row means

    @property
    def half_variance(self) -> float:
        """The small-spread estimate of `spread_cost`: row_sigma² / 2."""
        return self.row_sigma**2 / 2


def initial_loss(logits: torch.Tensor, targets: torch.Tensor) -> InitialLoss:
    """Take apart the mean cross-entropy of logits [..., V] against targets [...]."""
    if logits.shape[:-1] != targets.shape:
        raise ValueError(
            f"logits {list(logits.shape)} need targets of shape {list(logits.shape[:-1])}, "
            f"got {list(targets.shape)}"
        )
    z = logits.detach().double().reshape(-1, logits.shape[-1])
    t = targets.reshape(-1)
    V = z.shape[-1]
    u = z - z.mean(dim=-1, keepdim=True)
    loss = torch.nn.functional.cross_entropy(z, t).item()
    return InitialLoss(
        loss=loss,
        ln_v=math.log(V),
        row_sigma=u.pow(2).mean().sqrt().item(),
        overall_sigma=z.std().item(),
        spread_cost=(torch.logsumexp(u, dim=-1) - math.log(V)).mean().item(),
        target_lead=u.gather(1, t[:, None]).mean().item(),
    )
