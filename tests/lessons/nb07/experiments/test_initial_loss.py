import math

import pytest
import torch
import torch.nn.functional as F

from gptlib.lessons.nb07.experiments.initial_loss import initial_loss


def test_the_parts_add_up_to_the_cross_entropy():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(4, 8, 11, generator=g) * 0.7 + torch.randn(4, 8, 1, generator=g) * 3
    targets = torch.randint(11, (4, 8), generator=g)
    parts = initial_loss(logits, targets)
    assert parts.loss == pytest.approx(
        F.cross_entropy(logits.reshape(-1, 11), targets.reshape(-1)).item()
    )
    assert parts.loss == pytest.approx(parts.ln_v + parts.spread_cost - parts.target_lead, abs=1e-9)
    assert parts.ln_v == math.log(11) and parts.spread_cost >= 0


def test_row_means_inflate_the_overall_spread_but_cost_nothing():
    g = torch.Generator().manual_seed(1)
    within = torch.randn(2000, 50, generator=g) * 0.3
    shifted = within + torch.randn(2000, 1, generator=g) * 2  # a common shift per row
    targets = torch.randint(50, (2000,), generator=g)
    a, b = initial_loss(within, targets), initial_loss(shifted, targets)
    assert b.overall_sigma > 5 * a.overall_sigma
    assert b.row_sigma == pytest.approx(a.row_sigma, rel=1e-6)
    assert b.loss == pytest.approx(a.loss, rel=1e-6)


def test_half_the_within_row_variance_estimates_the_spread_cost():
    g = torch.Generator().manual_seed(2)
    logits = torch.randn(4000, 65, generator=g) * 0.4
    parts = initial_loss(logits, torch.randint(65, (4000,), generator=g))
    assert parts.spread_cost == pytest.approx(parts.half_variance, rel=0.05)
    assert abs(parts.target_lead) < 0.02  # targets drawn independently of the logits


def test_uniform_logits_cost_exactly_ln_v():
    parts = initial_loss(torch.zeros(3, 5), torch.tensor([0, 2, 4]))
    assert parts.loss == pytest.approx(math.log(5))
    assert parts.spread_cost == pytest.approx(0, abs=1e-12) and parts.target_lead == 0


def test_mismatched_shapes_are_named():
    with pytest.raises(ValueError, match=r"targets of shape \[2, 3\]"):
        initial_loss(torch.zeros(2, 3, 5), torch.zeros(2, 4, dtype=torch.long))
