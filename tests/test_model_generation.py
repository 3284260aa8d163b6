"""Generation, with and without the KV cache, against the chapter's loop written out.

The rule (GPT.generate's docstring, the chapter's and nanoGPT's `generate`): each new token is
predicted from the last max_len tokens at most, at positions 0 to max_len - 1.
"""

import pytest
import torch

from gptlib import GPT, GPTConfig, seed_everything
from gptlib.lessons.shared.experiments.kv_cache import compare_cache
from gptlib.lessons.shared.experiments.variants import Variant, build_gpt


def peaked_model(max_len: int, variant: Variant | None = None) -> GPT:
    """gptlib's GPT (or a lesson variant of it, which generates through the same code)."""
    seed_everything(0)
    config = GPTConfig(vocab_size=23, d_model=32, n_heads=4, n_layers=2, max_len=max_len)
    model = build_gpt(config, variant or Variant())
    with torch.no_grad():  # larger weights: a peaked next-token distribution, fewer near-ties
        for name, p in model.named_parameters():
            p.mul_(6.0)
            if ".ln" in name or name.startswith("ln_f"):  # every norm its own scale and shift
                p.add_(torch.randn_like(p))
    return model.eval()


def chapter_loop(model: GPT, idx: torch.Tensor, n_new: int, temperature: float = 0.0,
                 top_k: int | None = None,
                 generator: torch.Generator | None = None) -> torch.Tensor:  # fmt: skip
    """The chapter's generate (notebook 07's exercise), calling only model.forward: crop to the
    last max_len tokens, divide the last logits by the temperature, keep the top k, sample; the
    arg-max at temperature 0."""
    max_len = model.config.max_len
    with torch.no_grad():
        for _ in range(n_new):
            logits, _ = model(idx[:, -max_len:])
            if temperature == 0:
                next_id = logits[:, -1].argmax(-1, keepdim=True)
            else:
                logits = logits[:, -1] / temperature
                if top_k is not None:
                    kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]
                    logits = logits.masked_fill(logits < kth, float("-inf"))
                probs = torch.softmax(logits, dim=-1)
                next_id = torch.multinomial(probs, 1, generator=generator)
            idx = torch.cat([idx, next_id], dim=1)
    return idx


@pytest.mark.parametrize("max_len", [1, 2, 7, 16])
@pytest.mark.parametrize("prompt_len", ["shorter", "longer"])
@pytest.mark.parametrize("sampling", [{"temperature": 0}, {"temperature": 0.8, "top_k": 5}])
@pytest.mark.parametrize("use_cache", [True, False])
def test_generate_equals_the_chapters_loop_far_past_max_len(max_len, prompt_len, sampling,
                                                            use_cache):  # fmt: skip
    model = peaked_model(max_len)
    T = max(1, max_len - 3) if prompt_len == "shorter" else max_len + 5
    prompt = torch.randint(23, (3, T), generator=torch.Generator().manual_seed(max_len))
    n_new = 3 * max_len
    out = model.generate(
        prompt, n_new, use_cache=use_cache, generator=torch.Generator().manual_seed(7), **sampling
    )
    reference = chapter_loop(
        model, prompt, n_new, generator=torch.Generator().manual_seed(7), **sampling
    )
    assert torch.equal(out, reference)


def test_a_full_window_is_cropped_by_one_token_per_step_not_slid_back():
    """A 2-token prompt and 20 new tokens at max_len 8: where the window slid back to the last 4
    tokens, greedy decoding wrote other tokens than the chapter's loop from new token 7 on."""
    model = peaked_model(8)
    prompt = torch.randint(23, (1, 2), generator=torch.Generator().manual_seed(0))
    for use_cache in (True, False):
        out = model.generate(prompt, 20, temperature=0, use_cache=use_cache)
        assert torch.equal(out, chapter_loop(model, prompt, 20))


@pytest.mark.parametrize("attention", ["fused", "written-out"])
@pytest.mark.parametrize("positions", ["learned", "sinusoidal", "none"])
def test_cache_and_recomputation_agree_for_every_attention_path_and_position_kind(
    attention, positions
):
    model = peaked_model(12, Variant(attention=attention, positions=positions))
    prompt = torch.randint(23, (2, 20))  # longer than max_len: generation starts mid-window
    cached = model.generate(prompt, 30, temperature=0)
    recomputed = model.generate(prompt, 30, temperature=0, use_cache=False)
    assert torch.equal(cached, recomputed)
    assert torch.equal(cached, chapter_loop(model, prompt, 30))


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_cache_and_recomputation_agree_for_both_norm_placements(norm):
    model = peaked_model(9, Variant(norm=norm))
    prompt = torch.randint(23, (2, 3))
    cached = model.generate(prompt, 25, temperature=0)
    assert torch.equal(cached, model.generate(prompt, 25, temperature=0, use_cache=False))
    assert torch.equal(cached, chapter_loop(model, prompt, 25))


@pytest.mark.parametrize("norm", ["pre", "post"])
@pytest.mark.parametrize("attention", ["fused", "written-out"])
@pytest.mark.parametrize("positions", ["learned", "sinusoidal", "none"])
def test_one_cached_token_equals_the_last_position_of_a_full_forward(norm, attention, positions):
    model = peaked_model(8, Variant(attention=attention, positions=positions, norm=norm))
    idx = torch.randint(23, (3, 6))
    caches = model.new_caches(3)
    with torch.no_grad():
        full, _ = model(idx)  # [3, 6, V]: every position in one causal pass
        model.hidden_states(idx[:, :5], caches=caches)  # the first 5 positions fill the caches
        sixth = model.hidden_states(idx[:, 5:], start=5, caches=caches)  # the sixth alone
        last = model.lm_head(sixth)
    assert [cache.filled for cache in caches] == [6] * model.config.n_layers
    torch.testing.assert_close(last[:, 0], full[:, 5], atol=1e-4, rtol=1e-5)


def test_a_prompt_in_pieces_through_the_caches_equals_one_pass():
    """Three new tokens after five cached ones: the shifted causal band of causal_mask(3, 8)."""
    model = peaked_model(10)
    idx = torch.randint(23, (2, 8))
    caches = model.new_caches(2)
    with torch.no_grad():
        full = model.hidden_states(idx)
        first = model.hidden_states(idx[:, :5], caches=caches)
        rest = model.hidden_states(idx[:, 5:], start=5, caches=caches)
    torch.testing.assert_close(torch.cat([first, rest], dim=1), full, atol=1e-5, rtol=1e-5)


def test_seeded_sampling_is_identical_with_and_without_the_cache():
    model = peaked_model(8)
    prompt = torch.randint(23, (2, 3))
    runs = [
        model.generate(
            prompt,
            25,
            temperature=1.3,
            top_k=6,
            generator=torch.Generator().manual_seed(5),
            use_cache=use_cache,
        )
        for use_cache in (True, False)
    ]
    assert torch.equal(runs[0], runs[1])


def test_generate_restores_training_mode_and_returns_an_ordinary_tensor():
    model = peaked_model(8).train()
    out = model.generate(torch.zeros(1, 2, dtype=torch.long), 4)
    assert model.training
    assert not out.is_inference()
    _, loss = model(out, out)  # usable as training data: autograd accepts it
    loss.backward()


def test_compare_cache_times_both_paths_and_checks_their_tokens():
    model = peaked_model(12)
    ticks = iter(range(100))
    result = compare_cache(
        model, torch.randint(23, (2, 4)), 20, rounds=3, clock=lambda: next(ticks)
    )
    assert result.identical and (result.max_len, result.n_new, result.rounds) == (12, 20, 3)
    assert result.cached_s == result.recomputed_s == 1  # one tick per run of the fake clock
    assert result.speedup == 1.0 and "identical = True" in result.lines()
    with pytest.raises(ValueError, match="rounds must be a positive int, got 0"):
        compare_cache(model, torch.zeros(1, 1, dtype=torch.long), 1, rounds=0)
