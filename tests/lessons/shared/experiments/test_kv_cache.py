"""Notebook 07's cached decoding through the student's model: the same tokens as recomputing
every window, with each position through each layer once. Notebook 08's comparisons of gptlib's
two paths: sampled tokens, logits to rounding, and where generation re-reads a window."""

import pytest
import torch

import gptlib
from gptlib.lessons.engine.checks import REGISTRY
from gptlib.lessons.shared.experiments.kv_cache import (
    cached_logit_gap,
    compare_cache,
    decode_with_cache,
    positions_through_qkv,
    window_passes,
)

ATTEND = REGISTRY["kv-cache"].reference


def _model(max_len=24):
    gptlib.seed_everything(3)
    config = gptlib.GPTConfig(vocab_size=9, d_model=16, n_heads=4, n_layers=2, max_len=max_len)
    model = gptlib.GPT(config).eval()
    with torch.no_grad():
        for p in model.parameters():  # far from the near-uniform start: decisive arg-maxes
            p.mul_(20 if p.dim() == 2 else 1)
    return model


def test_cached_decoding_writes_what_recomputing_writes_with_one_pass_per_position():
    model, prompt = _model(), torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8]])
    cached, fed = positions_through_qkv(
        model, lambda: decode_with_cache(model, prompt, 12, ATTEND, 4)
    )
    recomputed, refed = positions_through_qkv(
        model, lambda: model.generate(prompt, 12, temperature=0, use_cache=False)
    )
    assert torch.equal(cached, recomputed)
    assert fed == 4 + 12 - 1  # every position once; the last new token is never fed
    assert refed == sum(range(4, 4 + 12))  # the whole text so far, for each new token


def test_the_chapters_name_head_is_read_too():
    model, prompt = _model(), torch.tensor([[1, 2]])
    expected = decode_with_cache(model, prompt, 5, ATTEND, 4)
    model.head = model.lm_head
    del model.lm_head
    assert torch.equal(decode_with_cache(model, prompt, 5, ATTEND, 4), expected)


def test_a_text_longer_than_the_models_positions_is_refused_with_the_numbers():
    with pytest.raises(
        ValueError, match="20 positions, more than the model's 16; decode at most 12"
    ):
        decode_with_cache(_model(max_len=16), torch.zeros(1, 4, dtype=torch.long), 16, ATTEND, 4)


def test_sampled_generation_compares_the_two_paths_with_generators_seeded_alike():
    model = _model(max_len=12)
    result = compare_cache(model, torch.tensor([[1, 2, 3]]), 30, temperature=0.8, seed=5)
    assert result.identical and result.temperature == 0.8
    again = model.generate(torch.tensor([[1, 2, 3]]), 30, temperature=0.8,
                           generator=torch.Generator().manual_seed(5), use_cache=False)  # fmt: skip
    assert not torch.equal(again, model.generate(torch.tensor([[1, 2, 3]]), 30, temperature=0))


def test_cached_logits_agree_with_one_pass_to_rounding_and_full_windows_are_found():
    model = _model(max_len=24)
    idx = torch.randint(9, (2, 20), generator=torch.Generator().manual_seed(0))
    assert 0 <= cached_logit_gap(model, idx, prompt_len=5) < 1e-3
    # a 16-position model: the prompt fills 4, the window is full after 12 more tokens, and from
    # the 14th new token on every window is read whole, cropped to the last 16 tokens
    small = _model(max_len=16)
    passes = window_passes(small, lambda: small.generate(torch.zeros(1, 4, dtype=torch.long), 40))
    assert passes == [0, *range(13, 40)]
