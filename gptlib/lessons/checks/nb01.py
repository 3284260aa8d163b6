"""Exercise checks of notebook 01 (embeddings and positions).

- `embed`: x = E[idx] + P[:T], token vectors plus position vectors: the first line of the
  GPT's forward in notebook 07, so the result must keep the gradient path to both tables.
- `sinusoidal-positions`: the original Transformer's fixed position table.
"""

from __future__ import annotations

import torch

from gptlib.lessons.checks.core import Exercise, Mistake, Property, register
from gptlib.model import sinusoidal_positions


def _embed(idx: torch.Tensor, E: torch.Tensor, P: torch.Tensor) -> torch.Tensor:
    return E[idx] + P[: idx.shape[1]]


def _embed_inputs(g: torch.Generator) -> list[tuple]:
    # V=10 token ids and T_max=12 positions, so a mix-up of the two tables still runs (and is
    # caught by its values); the second case has more tokens than positions in the table and
    # T = T_max. The tables require gradients, as a model's do.
    return [
        (
            torch.randint(0, 10, (2, 5), generator=g),
            torch.randn(10, 6, generator=g).requires_grad_(),
            torch.randn(12, 6, generator=g).requires_grad_(),
        ),
        (
            torch.randint(0, 50, (3, 8), generator=g),
            torch.randn(50, 4, generator=g).requires_grad_(),
            torch.randn(8, 4, generator=g).requires_grad_(),
        ),
    ]


def _keeps_the_gradient(x: torch.Tensor, idx: torch.Tensor, E: torch.Tensor, P: torch.Tensor):
    if (E.requires_grad or P.requires_grad) and not x.requires_grad:
        return (
            "the result carries no gradient back to E and P (a .detach(), .data, "
            "torch.no_grad() or a new torch.tensor(...) cuts it), so a model using it could "
            "never train its tables"
        )
    return None


register(
    Exercise(
        name="embed",
        notebook="01_embeddings_and_positions",
        reference=_embed,
        make_inputs=_embed_inputs,
        mistakes=(
            Mistake(
                "positions-by-token-id",
                "you looked the positions up with the token ids (P[idx]). Position t gets row t "
                "of P whatever token sits there: add P[:T], T = idx.shape[1].",
                lambda idx, E, P: E[idx] + P[idx],
            ),
            Mistake(
                "no-positions",
                "you returned the token vectors E[idx] only. Add the position vectors P[:T], or "
                "attention cannot tell the order of the tokens.",
                lambda idx, E, P: E[idx],
            ),
            Mistake(
                "positions-from-one",
                "positions start at 0: the first token gets P[0]. You added P[1:T+1]; use P[:T].",
                lambda idx, E, P: E[idx] + P[1 : idx.shape[1] + 1],
            ),
            Mistake(
                "concatenated",
                "position vectors are added to the token vectors, not concatenated: the result "
                "keeps width d ([B, T, d]), not 2d.",
                lambda idx, E, P: torch.cat(
                    [E[idx], P[: idx.shape[1]].expand(idx.shape[0], -1, -1)], dim=-1
                ),
            ),
            Mistake(
                "detached",
                "the values are right, but the result carries no gradient back to E and P "
                "(.detach(), .data, torch.no_grad() or a new torch.tensor(...) cuts the path). "
                "In notebook 07 the model trains both tables through exactly this sum: keep it "
                "an ordinary tensor expression, E[idx] + P[:T].",
                lambda idx, E, P: (E[idx] + P[: idx.shape[1]]).detach(),
            ),
        ),
        properties=(Property("gradient path", _keeps_the_gradient),),
        hints=(
            "Two lookups and a sum: each token id picks a row of the token table, each position "
            "index picks a row of the position table, and the position rows are the same for "
            "every sequence of the batch.",
            "Indexing a [V, d] table with [B, T] ids gives [B, T, d]; the first T rows of the "
            "position table are [T, d], and adding [T, d] to [B, T, d] broadcasts it over the "
            "batch.",
        ),
    )
)


def _sin_cos(pos: torch.Tensor, inv_freq_sin: torch.Tensor, inv_freq_cos: torch.Tensor):
    table = torch.empty(pos.shape[0], 2 * inv_freq_sin.shape[0])
    table[:, 0::2] = torch.sin(pos[:, None] * inv_freq_sin)
    table[:, 1::2] = torch.cos(pos[:, None] * inv_freq_cos)
    return table


def _pairs(d: int) -> torch.Tensor:
    return torch.arange(0, d, 2, dtype=torch.float32)  # 2i for i = 0..d/2-1


def _cos_sin_swapped(T: int, d: int, base: float) -> torch.Tensor:
    table = sinusoidal_positions(T, d, base)
    return torch.stack([table[:, 1::2], table[:, 0::2]], dim=-1).reshape(T, d)


def _exponent_i_over_d(T: int, d: int, base: float) -> torch.Tensor:
    inv_freq = base ** (-(_pairs(d) / 2) / d)
    return _sin_cos(torch.arange(T, dtype=torch.float32), inv_freq, inv_freq)


def _own_exponent_per_column(T: int, d: int, base: float) -> torch.Tensor:
    exponents = torch.arange(d, dtype=torch.float32) / d
    inv_freq = base**-exponents
    return _sin_cos(torch.arange(T, dtype=torch.float32), inv_freq[0::2], inv_freq[1::2])


def _frequencies_growing(T: int, d: int, base: float) -> torch.Tensor:
    inv_freq = base ** (_pairs(d) / d)
    return _sin_cos(torch.arange(T, dtype=torch.float32), inv_freq, inv_freq)


def _halves(T: int, d: int, base: float) -> torch.Tensor:
    table = sinusoidal_positions(T, d, base)
    return torch.cat([table[:, 0::2], table[:, 1::2]], dim=-1)


def _positions_from_one(T: int, d: int, base: float) -> torch.Tensor:
    return sinusoidal_positions(T + 1, d, base)[1:]


def _row_zero_is_sin0_cos0(table: torch.Tensor, T: int, d: int, base: float) -> str | None:
    expected = torch.tensor([0.0, 1.0]).repeat(d // 2)
    if not torch.allclose(table[0].float(), expected, atol=1e-5):
        return f"position 0 should be (sin 0, cos 0, ...) = (0, 1, 0, 1, ...), got {table[0][:4]}"
    return None


register(
    Exercise(
        name="sinusoidal-positions",
        notebook="01_embeddings_and_positions",
        reference=sinusoidal_positions,
        make_inputs=lambda g: [(12, 8, 10000.0), (7, 6, 100.0)],
        mistakes=(
            Mistake(
                "sin-cos-swapped",
                "sin and cos are swapped: even columns (0, 2, ...) hold sin, odd columns hold cos.",
                _cos_sin_swapped,
            ),
            Mistake(
                "exponent-i-over-d",
                "the exponent is 2i/d, where i counts sin/cos *pairs*; you used i/d, so the "
                "wavelengths stop at base^(1/2) instead of nearly reaching base.",
                _exponent_i_over_d,
            ),
            Mistake(
                "own-exponent-per-column",
                "each sin/cos pair shares one frequency, base^(-2i/d); you gave the cos column "
                "its own exponent (2i+1)/d. Compute the exponents for the even columns only.",
                _own_exponent_per_column,
            ),
            Mistake(
                "frequencies-growing",
                "you multiplied the position by base^(2i/d); divide by it (multiply by "
                "base^(-2i/d)), so the frequencies fall from 1 to about 1/base across the columns.",
                _frequencies_growing,
            ),
            Mistake(
                "halves-not-interleaved",
                "you put all sines in the first d/2 columns and all cosines in the last d/2; our "
                "convention interleaves them: column 2i holds sin, column 2i+1 holds cos.",
                _halves,
            ),
            Mistake(
                "positions-from-one",
                "positions count from 0, so row 0 is (0, 1, 0, 1, ...); you started at 1.",
                _positions_from_one,
            ),
            Mistake(
                "base-ignored",
                "you ignored the `base` argument and always used 10000.",
                lambda T, d, base: sinusoidal_positions(T, d, 10000.0),
            ),
        ),
        properties=(Property("position 0", _row_zero_is_sin0_cos0),),
        hints=(
            "Each pair of columns is one frequency: a position times that frequency is an "
            "angle, and the pair holds the sine and the cosine of the angle. The frequencies "
            "fall geometrically, from 1 for the first pair toward 1/base for the last.",
            "Pair i (columns 2i and 2i + 1) has frequency base to the power −2i/d; an outer "
            "product of the positions and the d/2 frequencies gives every angle at once. Even "
            "columns take the sine, odd columns the cosine.",
        ),
    )
)
