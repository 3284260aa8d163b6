"""Exercise checks of notebook 01 (embeddings and positions), in the notebook's order.

- `permutation-test`: what a sequence map sees of the order of its input: does each output move
  with its token when the input is shuffled (the gap), and does the output at position t change
  when the tokens before it are rearranged (the prefix change)? The lesson's table of attention
  layers, with and without the causal mask and positions, is this function's output.
- `embed`: x = E[idx] + P[:T], token vectors plus position vectors: the first line of the
  GPT's forward in notebook 07, so the result must keep the gradient path to both tables.
- `sinusoidal-positions`: the original Transformer's fixed position table.
- `similarity-by-offset`: the mean cosine of two position vectors k apart, and the share of the
  variance of all pairs' cosines that the offset explains: the lesson's comparison of a learned
  and a sinusoidal table.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from gptlib.lessons.engine.checks.core import Exercise, Mistake, Property, register
from gptlib.lessons.shared.references import sinusoidal_positions
from gptlib.model import attention_with_weights, causal_mask

# --- Exercise 1: the permutation test --------------------------------------------------------


Layer = Callable[[torch.Tensor], torch.Tensor]


def _permutation_test(f: Layer, x: torch.Tensor, perm: torch.Tensor):
    """f: [T, d] → [T, d_out]; x: [T, d]; perm: [T] → (gap [T], prefix [T])."""
    T = x.shape[0]
    original = f(x)  # [T, d_out]
    shuffled = f(x[perm])  # position i holds the token that stood at perm[i]
    gap = (shuffled - original[perm]).abs().amax(dim=-1)
    prefix = torch.zeros(T)
    for t in range(2, T):  # with fewer than two tokens before t there is one order only
        for order in itertools.permutations(range(t)):
            reordered = torch.tensor([*order, *range(t, T)])
            output_t = f(x[reordered])[t]
            change = (output_t - original[t]).abs().max()
            prefix[t] = max(prefix[t], change)
    return gap, prefix


@dataclass(frozen=True)
class AttentionLayer:
    """One attention layer without positions, like the notebook's: [..., T, d] → [..., T, d_out]."""

    W_Q: torch.Tensor
    W_K: torch.Tensor
    W_V: torch.Tensor
    causal: bool

    @classmethod
    def drawn(cls, g: torch.Generator, d: int, d_out: int, causal: bool) -> AttentionLayer:
        W_Q, W_K, W_V = (torch.randn(d, d_out, generator=g) / math.sqrt(d) for _ in range(3))
        return cls(W_Q, W_K, W_V, causal)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        mask = causal_mask(x.shape[-2]) if self.causal else None
        return attention_with_weights(x @ self.W_Q, x @ self.W_K, x @ self.W_V, mask=mask)[0]


@dataclass(frozen=True)
class Stacked:
    """`second(first(x))`: two layers one after the other."""

    first: AttentionLayer
    second: AttentionLayer

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.second(self.first(x))


@dataclass(frozen=True)
class Positioned:
    """A layer that adds position vectors [T, d] to its input first."""

    layer: AttentionLayer
    positions: torch.Tensor

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x + self.positions)


def _permutation_inputs(g: torch.Generator) -> list[tuple]:
    # The notebook's shapes (six tokens of width 8) and its kinds of layer: one layer without a
    # mask (every answer's gap and prefix are 0 there, so a wrong comparison shows first), two
    # causal layers, and one layer that adds position vectors. The permutations move every
    # position and are not their own inverses.
    one = AttentionLayer.drawn(g, 4, 3, causal=False)
    first = AttentionLayer.drawn(g, 8, 8, causal=True)
    second = AttentionLayer.drawn(g, 8, 8, causal=True)
    positions = torch.randn(6, 8, generator=g)
    with_positions = AttentionLayer.drawn(g, 8, 5, causal=False)
    return [
        (one, torch.randn(5, 4, generator=g), torch.tensor([2, 0, 4, 1, 3])),
        (Stacked(first, second), torch.randn(6, 8, generator=g), torch.tensor([2, 5, 4, 1, 0, 3])),
        (
            Positioned(with_positions, positions),
            torch.randn(6, 8, generator=g),
            torch.tensor([1, 3, 5, 0, 2, 4]),
        ),
    ]


def _gap(
    f: Layer,
    x: torch.Tensor,
    perm: torch.Tensor,
    moved: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = lambda out, perm: out[perm],
    size: Callable[[torch.Tensor], torch.Tensor] = lambda diff: diff.abs().amax(dim=-1),
    shuffle: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = lambda x, perm: x[perm],
) -> torch.Tensor:
    return size(f(shuffle(x, perm)) - moved(f(x), perm))


def _prefix(f: Layer, x: torch.Tensor, orders=None, compare=None) -> torch.Tensor:
    """The prefix change with a wrong way of listing the orders or of comparing the outputs."""
    T = x.shape[0]
    orders = orders or (lambda t: itertools.permutations(range(t)))
    compare = compare or (lambda new, old, t: (new[t] - old[t]).abs().max())
    original, prefix = f(x), torch.zeros(T)
    for t in range(2, T):
        for order in orders(t):
            reordered = torch.tensor([*order, *range(len(order), T)])
            prefix[t] = max(prefix[t], compare(f(x[reordered]), original, t))
    return prefix


def _with_gap(**kwargs) -> Callable:
    return lambda f, x, perm: (_gap(f, x, perm, **kwargs), _permutation_test(f, x, perm)[1])


def _with_prefix(**kwargs) -> Callable:
    return lambda f, x, perm: (_gap(f, x, perm), _prefix(f, x, **kwargs))


def _last_position_only(f: Layer, x: torch.Tensor, perm: torch.Tensor):
    gap, prefix = _permutation_test(f, x, perm)
    return gap, torch.cat([torch.zeros(len(prefix) - 1), prefix[-1:]])


def non_negative(out, f: Layer, x: torch.Tensor, perm: torch.Tensor) -> str | None:
    gap, prefix = out
    if isinstance(gap, torch.Tensor) and (gap < -1e-6).any():
        return "a gap is negative, but a largest absolute difference cannot be"
    return None


def nothing_to_reorder(out, f: Layer, x: torch.Tensor, perm: torch.Tensor) -> str | None:
    prefix = out[1]
    if (
        isinstance(prefix, torch.Tensor)
        and prefix.shape == (len(x),)
        and prefix[:2].abs().max() > 1e-5
    ):
        return (
            "positions 0 and 1 have fewer than two tokens before them, so there is one order "
            f"only and nothing can change, yet your prefix starts "
            f"{float(prefix[0]):z.4f}, {float(prefix[1]):z.4f}"
        )
    return None


register(
    Exercise(
        name="permutation-test",
        notebook="01_embeddings_and_positions",
        reference=_permutation_test,
        make_inputs=_permutation_inputs,
        returns=("gap", "prefix"),
        properties=(
            Property("sizes", non_negative),
            Property("positions 0 and 1", nothing_to_reorder),
        ),
        mistakes=(
            Mistake(
                "outputs-not-moved",
                "you compared the shuffled run with the first run position by position. The "
                "test asks whether each output moved with its token: position i of the "
                "shuffled input holds the token that stood at perm[i], so compare its output "
                "with the output that token had in the first run.",
                _with_gap(moved=lambda out, perm: out),
                fix="gap = (f(x[perm]) - f(x)[perm]).abs().amax(dim=-1)",
            ),
            Mistake(
                "inverse-permutation",
                "you moved the first run's outputs the other way round. Position i of the "
                "shuffled input holds the token from position perm[i], so the output to "
                "compare with is the first run's output at perm[i], not the one at the "
                "position where perm sends i.",
                _with_gap(moved=lambda out, perm: out[perm.argsort()]),
                fix="index the first run's outputs with perm itself: f(x)[perm], not "
                "f(x)[perm.argsort()]",
            ),
            Mistake(
                "gap-by-original-position",
                "your gaps are right but listed in the wrong order: by where each token stood "
                "before the shuffle. Entry i is for position i of the shuffled input.",
                lambda f, x, perm: (
                    _gap(f, x, perm)[perm.argsort()],
                    _permutation_test(f, x, perm)[1],
                ),
                fix="compare f(x[perm]) with f(x)[perm], both in the shuffled order",
            ),
            Mistake(
                "shuffled-features",
                "you shuffled the second axis of x, the features of every token, instead of the "
                "first, the tokens. The test moves whole tokens to new positions.",
                _with_gap(shuffle=lambda x, perm: x[:, perm]),
                fix="x[perm] (rows), not x[:, perm] (columns)",
            ),
            Mistake(
                "max-over-positions",
                "the gap is one number per position: the largest difference over that "
                "output's features. You took the largest over the positions instead, which "
                "gives one number per feature.",
                _with_gap(size=lambda diff: diff.abs().amax(dim=0)),
                fix="reduce over the last axis: .abs().amax(dim=-1)",
            ),
            Mistake(
                "signed-difference",
                "a difference can be negative: you took the largest signed difference, which "
                "misses a feature that went down. Take the size of each difference first.",
                _with_gap(size=lambda diff: diff.amax(dim=-1)),
                fix="(f(x[perm]) - f(x)[perm]).abs().amax(dim=-1)",
            ),
            Mistake(
                "mean-over-features",
                "you averaged the differences over the features; the test reports the largest "
                "one, so that a single feature that changed is not diluted by the others.",
                _with_gap(size=lambda diff: diff.abs().mean(dim=-1)),
                fix=".abs().amax(dim=-1), not .abs().mean(dim=-1)",
            ),
            Mistake(
                "euclidean-distance",
                "you measured the length of the difference vector; the test reports the "
                "largest absolute difference of one feature.",
                _with_gap(size=lambda diff: diff.norm(dim=-1)),
                fix=".abs().amax(dim=-1), not .norm(dim=-1)",
            ),
            Mistake(
                "prefix-includes-position",
                "you rearranged position t together with the tokens before it, so position t "
                "often holds another token, and its output changes for that reason alone. "
                "Rearrange only the positions before t; t and everything after it stay.",
                _with_prefix(orders=lambda t: itertools.permutations(range(t + 1))),
                fix="for order in itertools.permutations(range(t)): index = [*order, *range(t, T)]",
            ),
            Mistake(
                "whole-output-compared",
                "for the prefix you compared the outputs of every position, the rearranged "
                "ones too, whose tokens moved. The prefix change is about position t's output "
                "only.",
                _with_prefix(compare=lambda new, old, t: (new - old).abs().max()),
                fix="compare f(x[index])[t] with f(x)[t]",
            ),
            Mistake(
                "one-order-only",
                "you tried one rearrangement of the prefix (reversed); the prefix change is "
                "the largest change over every ordering of the positions before t.",
                _with_prefix(orders=lambda t: [tuple(reversed(range(t)))]),
                fix="loop over itertools.permutations(range(t)) and keep the largest change",
            ),
            Mistake(
                "last-position-only",
                "you measured the prefix change at the last position only; the result has one "
                "entry per position t, each over the orderings of the tokens before t.",
                _last_position_only,
                fix="loop t over range(T) and fill prefix[t] for every t",
            ),
        ),
        hints=(
            "Run f on x and on the shuffled x. If f sees only which tokens it gets, the "
            "shuffled run's output at each position is the output the same token had in the "
            "first run: compare those two feature by feature and keep the largest difference "
            "at each position. The prefix change compares the output at one position t before "
            "and after the tokens in front of it are rearranged.",
            "Position i of the shuffled input holds the token that stood at perm[i], so the "
            "first run's outputs indexed by perm line up with the shuffled run. For the "
            "prefix, build for each t an index listing one ordering of 0 to t−1 followed by t, "
            "t+1, ..., T−1; run f on x indexed by it and compare row t with row t of the first "
            "run; keep the largest change over all orderings.",
        ),
    )
)

# --- Exercise 2: token vectors plus position vectors ----------------------------------------


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


def keeps_the_gradient(x: torch.Tensor, idx: torch.Tensor, E: torch.Tensor, P: torch.Tensor):
    if (E.requires_grad or P.requires_grad) and not x.requires_grad:
        return (
            "the result carries no gradient back to the two tables (detaching, reading the "
            "raw data or building a new tensor cuts it), so a model using it could never "
            "train them"
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
                "you looked the positions up with the token ids. A position vector belongs to "
                "the place a token stands, not to the token: position t gets row t of the "
                "position table whatever token sits there.",
                lambda idx, E, P: E[idx] + P[idx],
                fix="add P[:T] with T = idx.shape[1], not P[idx]",
            ),
            Mistake(
                "no-positions",
                "you returned the token vectors only. Add the position vectors too, or "
                "attention cannot tell where each token stands.",
                lambda idx, E, P: E[idx],
                fix="return E[idx] + P[:T]",
            ),
            Mistake(
                "positions-by-batch-size",
                "you took as many position rows as there are sequences in the batch, the first "
                "size of the ids, so they cannot be added to the token vectors. The position "
                "table is cut to the sequence length, the ids' second size: one row per place "
                "in a sequence, shared by every sequence of the batch.",
                lambda idx, E, P: E[idx] + P[: len(idx)],
                fix="T = idx.shape[1] (len(idx) and idx.shape[0] are the batch size B)",
            ),
            Mistake(
                "positions-from-one",
                "positions count from 0: the first token of every sequence gets the first row "
                "of the position table; yours got the second.",
                lambda idx, E, P: E[idx] + P[1 : idx.shape[1] + 1],
                fix="P[:T], not P[1:T+1]",
            ),
            Mistake(
                "concatenated",
                "position vectors are added to the token vectors, not set beside them: the "
                "result keeps the model's width d, not twice it.",
                lambda idx, E, P: torch.cat(
                    [E[idx], P[: idx.shape[1]].expand(idx.shape[0], -1, -1)], dim=-1
                ),
                fix="E[idx] + P[:T] (shape [B, T, d]), not torch.cat(..., dim=-1)",
            ),
            Mistake(
                "detached",
                "the values are right, but the result carries no gradient back to the two "
                "tables. In notebook 07 the model trains both tables through exactly this sum, "
                "so keep it an ordinary tensor expression of the tables.",
                lambda idx, E, P: (E[idx] + P[: idx.shape[1]]).detach(),
                fix="no .detach(), .data or torch.no_grad(): return E[idx] + P[:T]",
            ),
        ),
        properties=(Property("gradient path", keeps_the_gradient),),
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

# --- Exercise 3: the sinusoidal table --------------------------------------------------------


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


def _sinusoidal_inputs(g: torch.Generator) -> list[tuple]:
    """(T, d, base): the lesson's sizes, a small base, a long table, and sizes drawn from `g` (so
    that grading's hidden inputs differ from these)."""
    drawn = (
        int(torch.randint(5, 40, (1,), generator=g)),
        2 * int(torch.randint(2, 17, (1,), generator=g)),
    )
    return [(12, 8, 10000.0), (7, 6, 100.0), (64, 32, 10000.0), (*drawn, 10000.0)]


def row_zero_is_sin0_cos0(table: torch.Tensor, T: int, d: int, base: float) -> str | None:
    expected = torch.tensor([0.0, 1.0]).repeat(d // 2)
    if not torch.allclose(table[0].float(), expected, atol=1e-5):
        return f"position 0 should be (sin 0, cos 0, ...) = (0, 1, 0, 1, ...), got {table[0][:4]}"
    return None


register(
    Exercise(
        name="sinusoidal-positions",
        notebook="01_embeddings_and_positions",
        reference=sinusoidal_positions,
        make_inputs=_sinusoidal_inputs,
        mistakes=(
            Mistake(
                "sin-cos-swapped",
                "sine and cosine are swapped: in each pair of columns the first (even) column "
                "holds the sine and the second (odd) one the cosine.",
                _cos_sin_swapped,
                fix="P[:, 0::2] = torch.sin(angles); P[:, 1::2] = torch.cos(angles)",
            ),
            Mistake(
                "exponent-i-over-d",
                "the exponent counts column pairs, not columns: pair i (columns 2i and 2i+1) "
                "uses 2i/d. With i/d the slowest wavelength stops near the square root of the "
                "base instead of nearly reaching the base.",
                _exponent_i_over_d,
                fix="divide by base ** (two_i / d) with two_i = 0, 2, 4, ..., d - 2",
            ),
            Mistake(
                "own-exponent-per-column",
                "each sine/cosine pair shares one frequency; you gave the cosine column an "
                "exponent of its own, (2i+1)/d. Compute one frequency per pair and use it in "
                "both of its columns.",
                _own_exponent_per_column,
                fix="frequencies for the even columns only: base ** (-torch.arange(0, d, 2) / d)",
            ),
            Mistake(
                "frequencies-growing",
                "your frequencies grow across the columns; they should fall, from 1 for the "
                "first pair toward 1/base for the last: the position is divided by base to "
                "the power 2i/d, not multiplied by it.",
                _frequencies_growing,
                fix="angles = pos / base ** (two_i / d)",
            ),
            Mistake(
                "halves-not-interleaved",
                "you put all sines in the first half of the columns and all cosines in the "
                "second; this course interleaves them, each pair of neighbouring columns "
                "holding one frequency's sine and then its cosine.",
                _halves,
                fix="P[:, 0::2] = sines; P[:, 1::2] = cosines",
            ),
            Mistake(
                "positions-from-one",
                "positions count from 0, so the first row is (sin 0, cos 0, ...) = "
                "(0, 1, 0, 1, ...); yours starts at position 1.",
                _positions_from_one,
                fix="torch.arange(T), not torch.arange(1, T + 1)",
            ),
            Mistake(
                "base-ignored",
                "the table ignores its base argument, which sets how slowly the last columns turn.",
                lambda T, d, base: sinusoidal_positions(T, d, 10000.0),
                fix="use base in the exponent instead of the constant 10000",
            ),
        ),
        properties=(Property("position 0", row_zero_is_sin0_cos0),),
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

# --- Exercise 4: similarity by offset --------------------------------------------------------


def _similarity_by_offset(P: torch.Tensor):
    """P: [T, d] position vectors → (by_offset [T], share): the mean cosine of the pairs k
    apart, and the share of the variance of all pairs' cosines that the offset explains."""
    unit = P / P.norm(dim=-1, keepdim=True)
    cos = unit @ unit.T  # [T, T]
    diagonals = [cos.diagonal(k) for k in range(len(P))]  # offset k: the T - k pairs (i, i + k)
    by_offset = torch.stack([diagonal.mean() for diagonal in diagonals])
    pairs = torch.cat(diagonals[1:])  # every pair i < j
    total = (pairs - pairs.mean()).pow(2).sum()
    within = sum((diagonal - diagonal.mean()).pow(2).sum() for diagonal in diagonals[1:])
    share = 1 - within / total
    return by_offset, share.item()


def _offset_diagonals(P: torch.Tensor, normalise: int | None = -1) -> list[torch.Tensor]:
    unit = P if normalise is None else P / P.norm(dim=normalise, keepdim=True)
    cos = unit @ unit.T
    return [cos.diagonal(k) for k in range(len(P))]


def _share(diagonals: list[torch.Tensor]) -> torch.Tensor:
    pairs = torch.cat(diagonals[1:])
    within = sum((d - d.mean()).pow(2).sum() for d in diagonals[1:])
    return 1 - within / (pairs - pairs.mean()).pow(2).sum()


def _means(diagonals: list[torch.Tensor]) -> torch.Tensor:
    return torch.stack([d.mean() for d in diagonals])


def _normalised_by(normalise: int | None) -> Callable:
    def wrong(P: torch.Tensor):
        diagonals = _offset_diagonals(P, normalise)
        return _means(diagonals), _share(diagonals)

    return wrong


def _first_row_only(P: torch.Tensor):
    diagonals = _offset_diagonals(P)
    return torch.stack([d[0] for d in diagonals]), _share(diagonals)


def _absolute_cosines(P: torch.Tensor):
    diagonals = _offset_diagonals(P)
    return _means([d.abs() for d in diagonals]), _share(diagonals)


def _wrong_share(share: Callable[[list[torch.Tensor]], torch.Tensor]) -> Callable:
    def wrong(P: torch.Tensor):
        diagonals = _offset_diagonals(P)
        return _means(diagonals), share(diagonals)

    return wrong


def _unexplained(diagonals: list[torch.Tensor]) -> torch.Tensor:
    return 1 - _share(diagonals)


def _diagonal_included(diagonals: list[torch.Tensor]) -> torch.Tensor:
    pairs = torch.cat(diagonals)
    within = sum((d - d.mean()).pow(2).sum() for d in diagonals)
    return 1 - within / (pairs - pairs.mean()).pow(2).sum()


def _unweighted_offsets(diagonals: list[torch.Tensor]) -> torch.Tensor:
    pairs = torch.cat(diagonals[1:])
    means = _means(diagonals[1:])
    return (means - means.mean()).pow(2).mean() / (pairs - pairs.mean()).pow(2).mean()


def _biased_and_unbiased(diagonals: list[torch.Tensor]) -> torch.Tensor:
    pairs = torch.cat(diagonals[1:])
    within = torch.cat([d - d.mean() for d in diagonals[1:]])
    return 1 - within.pow(2).mean() / pairs.var()


def _offset_inputs(g: torch.Generator) -> list[tuple]:
    # A random table first (its cosines differ at every offset, so each mistake shows there),
    # then the notebook's tables: sinusoidal [64, 32] (share 1), learned at initialisation
    # [64, 32], and the trained model's shape [128, 128] with some offset structure.
    smooth = sinusoidal_positions(128, 128) + 0.5 * torch.randn(128, 128, generator=g)
    return [
        (torch.randn(12, 6, generator=g),),
        (sinusoidal_positions(64, 32),),
        (torch.randn(64, 32, generator=g),),
        (smooth,),
    ]


def self_similarity(out, P: torch.Tensor) -> str | None:
    by_offset = out[0]
    if isinstance(by_offset, torch.Tensor) and by_offset.shape == (len(P),):
        if abs(float(by_offset[0]) - 1) > 1e-4:
            return (
                "at offset 0 every position is paired with itself, so the mean cosine must be "
                f"1; yours is {float(by_offset[0]):z.4f}"
            )
    return None


register(
    Exercise(
        name="similarity-by-offset",
        notebook="01_embeddings_and_positions",
        reference=_similarity_by_offset,
        make_inputs=_offset_inputs,
        returns=("by_offset", "share"),
        properties=(Property("offset 0", self_similarity),),
        mistakes=(
            Mistake(
                "dot-products",
                "you averaged dot products, which grow with the vectors' lengths; the "
                "measurement is the cosine, which compares directions only. Scale every "
                "position vector to length 1 first.",
                _normalised_by(None),
                fix="unit = P / P.norm(dim=-1, keepdim=True); cos = unit @ unit.T",
            ),
            Mistake(
                "normalised-columns",
                "you scaled each column of the table to length 1; a position vector is a row, "
                "and it is each row that must have length 1 for a dot product to be a cosine.",
                _normalised_by(0),
                fix="P.norm(dim=-1, keepdim=True), the norm of each row",
            ),
            Mistake(
                "first-row-only",
                "you compared position 0 with position k only; the measurement averages every "
                "pair that sits k apart (there are T − k of them). For a sinusoidal table the "
                "two agree, since its similarity depends on the offset alone; for a learned one "
                "they do not.",
                _first_row_only,
                fix="by_offset[k] = cos.diagonal(k).mean()",
            ),
            Mistake(
                "absolute-cosines",
                "you averaged the sizes of the cosines; the measurement keeps their signs, so "
                "that directions that point apart (negative cosines) and alike (positive) do "
                "not add up to a false similarity.",
                _absolute_cosines,
                fix="average cos.diagonal(k), not its absolute value",
            ),
            Mistake(
                "unexplained-share",
                "your share is the part the offset does not explain: the variation of the "
                "cosines around their own offset's mean, over their whole variation. The share "
                "explained is one minus that.",
                _wrong_share(_unexplained),
                fix="share = 1 - within / total",
            ),
            Mistake(
                "diagonal-included",
                "you counted each position paired with itself (offset 0, cosine 1) among the "
                "pairs. The share is over the pairs i < j, offsets 1 to T − 1.",
                _wrong_share(_diagonal_included),
                fix="use diagonals[1:] (offsets 1 to T - 1) for both sums",
            ),
            Mistake(
                "unweighted-offsets",
                "you gave every offset the same weight, but offset k has T − k pairs: the "
                "variance the offset explains counts each pair once, so an offset's mean "
                "weighs as much as its number of pairs.",
                _wrong_share(_unweighted_offsets),
                fix="share = 1 - within / total, both sums over every pair i < j",
            ),
            Mistake(
                "biased-and-unbiased",
                "you divided the within-offset sum of squares by the number of pairs and the "
                "total one by the number of pairs minus one (an unbiased variance). Divide "
                "both the same way, or use plain sums of squares.",
                _wrong_share(_biased_and_unbiased),
                fix="within.pow(2).sum() / (pairs - pairs.mean()).pow(2).sum()",
            ),
        ),
        hints=(
            "Scale every row to length 1; then the cosine of positions i and j is one entry "
            "of a [T, T] matrix of dot products. The pairs k apart lie on its k-th diagonal "
            "above the main one: average each. For the share, compare how much the cosines "
            "vary around their own offset's mean with how much they vary around the mean of "
            "all pairs.",
            "share = 1 − W / S, where S sums, over every pair i < j, the squared distance of "
            "its cosine from the mean of all those pairs, and W sums the squared distance of "
            "each pair's cosine from the mean of the pairs at the same offset. Offset 0, each "
            "position with itself, is not a pair.",
        ),
    )
)
