"""gptlib.lessons.nb01.experiments against closed forms of the sinusoidal encoding."""

import math

import pytest
import torch
import torch.nn.functional as F

from gptlib.lessons.nb01.experiments import (
    cosine_similarity_matrix,
    mean_abs_cosine,
    position_summary,
    sinusoidal_wavelengths,
)
from gptlib.lessons.shared.references import sinusoidal_positions


def test_cosine_similarity_matrix_matches_torch_pairwise():
    table = torch.randn(7, 5, generator=torch.Generator().manual_seed(0))
    expected = F.cosine_similarity(table[:, None, :], table[None, :, :], dim=-1)
    torch.testing.assert_close(cosine_similarity_matrix(table), expected)


def test_wavelengths_are_the_periods_of_the_table_columns():
    d, base = 8, 100.0
    wavelengths = sinusoidal_wavelengths(d, base)
    t = torch.arange(50, dtype=torch.float64)[:, None]
    expected = torch.sin(2 * math.pi * t / wavelengths)  # column 2i is sin(2π t / λ_i)
    table = sinusoidal_positions(50, d, base)[:, 0::2].double()
    torch.testing.assert_close(table, expected, atol=1e-5, rtol=0)
    assert wavelengths[0].item() == pytest.approx(2 * math.pi)
    assert wavelengths[-1].item() == pytest.approx(2 * math.pi * 100 ** (6 / 8))


def test_similarity_depends_only_on_the_offset():
    summary = position_summary(40, 16)
    i, j = torch.meshgrid(torch.arange(40), torch.arange(40), indexing="ij")
    torch.testing.assert_close(summary.similarity, summary.similarity[0][(i - j).abs()])


def test_neighbour_similarity_is_the_mean_cosine_of_the_frequencies():
    d, base = 32, 10000.0
    omegas = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    expected = torch.cos(omegas).mean().item()
    assert position_summary(10, d, base).neighbour_similarity == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(
    ("T", "d", "base", "rival"),
    [
        (64, 2, 10000.0, 6),  # cos t >= cos 1 first again at t = 6 (cos 6 = 0.960)
        (64, 4, 10000.0, 6),  # (cos t + cos 0.01t) / 2: 0.979 at t = 6, 0.641 at t = 5
        (128, 64, 10000.0, None),  # the default: no far position rivals a neighbour
        (5, 2, 10000.0, None),  # t = 6 lies beyond the 5 positions
    ],
)
def test_first_rival_offset_by_hand(T, d, base, rival):
    assert position_summary(T, d, base).first_rival == rival


def test_lines_name_the_numbers():
    lines = position_summary(128, 64).lines()
    assert lines == [
        "shortest wavelength = 6.283",
        "longest wavelength = 47117.2",
        "neighbour similarity = 0.966",
        "first rival offset = none",
    ]


def test_mean_abs_cosine_weighs_each_pair_once():
    # four positions: pairs at offset >= 2 are (0, 2), (1, 3) and (0, 3), each counted once
    table = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [1.0, 1.0]])
    pairs = [
        F.cosine_similarity(table[i], table[j], dim=0).abs() for i, j in ((0, 2), (1, 3), (0, 3))
    ]
    assert mean_abs_cosine(table, min_offset=2) == pytest.approx(sum(pairs).item() / 3)
    # |cos| 1 and 0.707 at offset 2, 0.707 at offset 3: each pair once gives (1 + 2 x 0.707) / 3,
    # where a mean over the two offsets would give ((1 + 0.707) / 2 + 0.707) / 2
    assert mean_abs_cosine(table, min_offset=2) == pytest.approx((1 + 2 / math.sqrt(2)) / 3)


def test_mean_abs_cosine_of_random_rows_is_about_sqrt_2_over_pi_d():
    table = torch.randn(200, 128, generator=torch.Generator().manual_seed(0))
    assert mean_abs_cosine(table, min_offset=8) == pytest.approx(
        math.sqrt(2 / (math.pi * 128)), rel=0.03
    )


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: position_summary(1, 8), "at least T=2"),
        (lambda: position_summary(8, 7), "d must be even"),
        (lambda: sinusoidal_wavelengths(3), "d must be even"),
        (lambda: cosine_similarity_matrix(torch.ones(2, 3, 4)), r"\[T, d\]"),
        (lambda: mean_abs_cosine(torch.ones(4, 2), min_offset=4), "between 1 and T - 1"),
        (lambda: mean_abs_cosine(torch.ones(4), min_offset=1), "between 1 and T - 1"),
    ],
)
def test_bad_input_is_a_clear_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()
