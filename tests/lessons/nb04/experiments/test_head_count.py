"""Tiny models that differ only in their number of heads."""

import pytest

from gptlib.lessons.nb04.experiments.head_count import train_head_variants


def test_variants_share_the_parameter_count_and_train():
    variants = train_head_variants(choices=(1, 4), d_model=16, steps=30)
    assert sorted(variants) == [1, 4]
    counts = set()
    for h, (model, losses) in variants.items():
        assert model.blocks[0].attn.n_heads == h and model.blocks[0].attn.d_head == 16 // h
        counts.add(model.num_parameters())
        assert len(losses) == 30 and losses[-1] < losses[0]
    assert len(counts) == 1  # d is fixed: the head count adds no parameters


def test_head_counts_must_divide_d():
    with pytest.raises(ValueError, match=r"\[3\]"):
        train_head_variants(choices=(1, 3), d_model=16, steps=1)
