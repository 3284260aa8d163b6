"""From a stream of token ids to training batches: the train/validation split and random windows.

Introduced in notebook 08. A batch is x [B, T] and targets y [B, T], y being x shifted left by
one position: y[b, t] is the token that follows x[b, t].
"""

from __future__ import annotations

import torch

from gptlib.validation import check_positive_int


def train_val_split(
    ids: torch.Tensor, val_fraction: float = 0.1
) -> tuple[torch.Tensor, torch.Tensor]:
    """ids [N] → (train [N_train], val [N - N_train]): the first 90% and the last 10% by default.

    Splitting by position (not by random windows) keeps validation text unseen in training.
    """
    _check_ids(ids)
    if not 0.0 < val_fraction < 1.0:
        raise ValueError(f"val_fraction must be between 0 and 1, got {val_fraction}")
    n_train = int((1.0 - val_fraction) * len(ids))
    if n_train < 2 or len(ids) - n_train < 2:
        raise ValueError(
            f"a text of {len(ids)} tokens is too short to split {1 - val_fraction:z.0%} / "
            f"{val_fraction:z.0%}: both parts need at least 2 tokens; use a longer text"
        )
    return ids[:n_train], ids[n_train:]


def _check_ids(ids: torch.Tensor) -> None:
    if not isinstance(ids, torch.Tensor) or ids.dim() != 1 or ids.dtype != torch.long:
        got = f"{ids.dtype} {list(ids.shape)}" if isinstance(ids, torch.Tensor) else type(ids)
        raise ValueError(
            f"token ids must be a 1-D torch.long tensor [N] (tokenizer.encode(text)), got {got}"
        )
    if len(ids) == 0:
        raise ValueError("the token stream is empty: encode a non-empty text first")


class BatchSampler:
    """Random windows of a token stream, drawn by a seeded generator (notebook 08).

    `sample()` → x [B, T], y [B, T] on `device`. The generator's state is part of a checkpoint,
    so a resumed run draws the same batches as an uninterrupted one. Without a `seed`, the seed
    is drawn from torch's global generator: two samplers made one after the other draw different
    batches, and `seed_everything` still makes them repeat.
    """

    def __init__(
        self,
        ids: torch.Tensor,
        batch_size: int,
        block_size: int,
        seed: int | None = None,
        device: torch.device | str = "cpu",
    ) -> None:
        _check_ids(ids)
        for name, value in (("batch_size", batch_size), ("block_size", block_size)):
            check_positive_int(name, value)
        if seed is None:
            seed = int(torch.randint(2**62, ()))
        check_positive_int("seed", seed, minimum=0)
        try:
            self.device = torch.device(device)
        except (RuntimeError, TypeError) as exc:
            raise ValueError(
                f"device must be a torch.device or a name such as 'cpu' or 'cuda', got {device!r}"
            ) from exc
        if len(ids) < block_size + 1:
            raise ValueError(
                f"the text has {len(ids)} tokens, too few for windows of block_size="
                f"{block_size} (each needs block_size + 1 = {block_size + 1} tokens: inputs and "
                f"the shifted targets). Use block_size <= {len(ids) - 1} or a longer text"
            )
        self.ids, self.batch_size, self.block_size = ids, batch_size, block_size
        self.generator = torch.Generator().manual_seed(seed)
        self._offsets = torch.arange(block_size + 1)

    def sample(self) -> tuple[torch.Tensor, torch.Tensor]:
        """One batch: x [B, T] and y [B, T] = the next token after each position of x."""
        n_starts = len(self.ids) - self.block_size
        starts = torch.randint(n_starts, (self.batch_size, 1), generator=self.generator)
        windows = self.ids[starts + self._offsets].to(self.device)  # [B, T + 1]
        return windows[:, :-1], windows[:, 1:]
