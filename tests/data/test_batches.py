"""The train/validation split and batch sampling."""

import pytest
import torch

from gptlib.data import BatchSampler, train_val_split


def test_split_is_first_90_percent_then_last_10_percent():
    ids = torch.arange(1000)
    train, val = train_val_split(ids)
    assert torch.equal(train, ids[:900]) and torch.equal(val, ids[900:])
    train, val = train_val_split(ids, val_fraction=0.25)
    assert len(train) == 750 and len(val) == 250


def test_split_errors():
    with pytest.raises(ValueError, match="the token stream is empty"):
        train_val_split(torch.zeros(0, dtype=torch.long))
    with pytest.raises(ValueError, match="too short to split"):
        train_val_split(torch.arange(5))
    with pytest.raises(ValueError, match="val_fraction must be between 0 and 1"):
        train_val_split(torch.arange(100), 1.0)
    with pytest.raises(ValueError, match="1-D torch.long tensor"):
        train_val_split(torch.arange(10.0))


def test_batches_are_windows_with_targets_shifted_by_one():
    ids = torch.arange(100)  # each id equals its position, so windows are easy to recognise
    x, y = BatchSampler(ids, batch_size=5, block_size=8, seed=0).sample()
    assert x.shape == y.shape == (5, 8)
    starts = x[:, 0]
    assert torch.equal(x, starts[:, None] + torch.arange(8))
    assert torch.equal(y, x + 1)
    assert int(starts.max()) <= 100 - 8 - 1


def test_batches_repeat_with_the_seed_and_cover_every_start():
    ids = torch.arange(20)
    a = BatchSampler(ids, 4, 5, seed=3)
    b = BatchSampler(ids, 4, 5, seed=3)
    for _ in range(5):
        assert all(torch.equal(u, v) for u, v in zip(a.sample(), b.sample(), strict=True))
    starts = torch.cat([a.sample()[0][:, 0] for _ in range(200)])
    assert set(starts.tolist()) == set(range(15))  # every start 0..N-T-1, no window past the end


def test_too_short_text_and_bad_sizes_are_explained():
    with pytest.raises(ValueError, match=r"has 10 tokens, too few for windows of block_size=10"):
        BatchSampler(torch.arange(10), 2, 10)
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        BatchSampler(torch.arange(10), 0, 2)
    with pytest.raises(ValueError, match="the token stream is empty"):
        BatchSampler(torch.zeros(0, dtype=torch.long), 2, 2)


def test_without_a_seed_new_samplers_differ_and_seed_everything_repeats_them():
    from gptlib import seed_everything

    ids = torch.arange(1000)
    seed_everything(0)
    first, second = BatchSampler(ids, 4, 8).sample()[0], BatchSampler(ids, 4, 8).sample()[0]
    assert not torch.equal(first, second)  # a sampler made per call no longer repeats its batch
    seed_everything(0)
    assert torch.equal(BatchSampler(ids, 4, 8).sample()[0], first)


def test_a_bad_seed_or_device_is_named():
    with pytest.raises(ValueError, match="seed must be a non-negative int, got 1.5"):
        BatchSampler(torch.arange(10), 2, 2, seed=1.5)
    with pytest.raises(ValueError, match="device must be a torch.device or a name .* got 'gpu'"):
        BatchSampler(torch.arange(10), 2, 2, device="gpu")
    x, y = BatchSampler(torch.arange(10), 2, 2, seed=0, device="cpu").sample()
    assert x.device.type == y.device.type == "cpu"
