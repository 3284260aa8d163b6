"""The GPT: parameter count by formula, loss at init, bad input, KV-cache generation."""

import math

import pytest
import torch
import torch.nn.functional as F

from gptlib import (
    GPT,
    MLP,
    Block,
    CausalSelfAttention,
    GPTConfig,
    next_token_probs,
    sample_next,
    seed_everything,
)
from gptlib.validation import check_token_ids
from tests.test_state_dicts import ChapterGPT, randomise


def chapter_formula(V: int, d: int, L: int, max_len: int) -> int:
    """Parameters of the chapter's GPT, term by term (biases on, untied, learned positions)."""
    attention = (3 * d * d + 3 * d) + (d * d + d)  # fused qkv + output projection
    mlp = (4 * d * d + 4 * d) + (4 * d * d + d)
    norms = 2 * 2 * d
    return V * d + max_len * d + L * (attention + mlp + norms) + 2 * d + d * V


@pytest.mark.parametrize("V", [65, 80])
def test_parameter_count_of_chapter_config_matches_formula(V):
    model = GPT(GPTConfig(vocab_size=V))
    assert model.num_parameters() == chapter_formula(V, 128, 4, 256)
    assert round(model.num_parameters() / 1e6, 2) in (0.84, 0.85)


def test_tied_weights_are_counted_once_and_shared():
    untied = GPT(GPTConfig(vocab_size=65))
    tied = GPT(GPTConfig(vocab_size=65, tie_weights=True))
    assert untied.num_parameters() - tied.num_parameters() == 65 * 128
    assert tied.lm_head.weight is tied.tok_emb.weight


def test_frozen_parameters_are_counted_too():
    model = GPT(GPTConfig(vocab_size=65))
    model.tok_emb.weight.requires_grad_(False)
    assert model.num_parameters() == chapter_formula(65, 128, 4, 256)


class ChapterNamedGPT(ChapterGPT):
    """The chapter's model under the chapter's own name for the unembedding, `head`."""

    def __init__(self, vocab_size: int) -> None:
        super().__init__(vocab_size)
        self.head = self.lm_head
        del self.lm_head


def test_the_chapters_head_is_refused_by_name_and_loads_once_renamed_lm_head():
    """model.py's docstring: rename `head` to `lm_head` and the two load each other strictly."""
    chapter, library = ChapterNamedGPT(65), GPT(GPTConfig(vocab_size=65))
    with pytest.raises(RuntimeError) as refused:
        library.load_state_dict(chapter.state_dict(), strict=True)
    assert 'Missing key(s) in state_dict: "lm_head.weight"' in str(refused.value)
    assert 'Unexpected key(s) in state_dict: "head.weight"' in str(refused.value)
    renamed = {
        ("lm_head.weight" if name == "head.weight" else name): p
        for name, p in randomise(chapter, 0).state_dict().items()
    }
    library.load_state_dict(renamed, strict=True)
    assert all(torch.equal(library.state_dict()[name], p) for name, p in renamed.items())
    back = {name.replace("lm_head.", "head."): p for name, p in library.state_dict().items()}
    randomise(chapter, 1).load_state_dict(back, strict=True)
    assert torch.equal(chapter.head.weight, library.lm_head.weight)


def test_initial_loss_is_about_log_vocab():
    seed_everything(0)
    model = GPT(GPTConfig(vocab_size=65))
    idx = torch.randint(65, (4, 32))
    _, loss = model(idx, idx)
    assert abs(loss.item() - math.log(65)) < 0.1


def test_model_is_causal():
    seed_everything(0)
    model = GPT(GPTConfig(vocab_size=20, d_model=16, n_heads=2, n_layers=2)).eval()
    idx = torch.randint(20, (1, 10))
    logits, _ = model(idx)
    changed = idx.clone()
    changed[0, 6] = (changed[0, 6] + 1) % 20
    logits2, _ = model(changed)
    assert torch.equal(logits[0, :6], logits2[0, :6])
    assert not torch.allclose(logits[0, 6], logits2[0, 6])


@pytest.mark.parametrize(
    ("idx", "message"),
    [
        (
            torch.zeros(1, 300, dtype=torch.long),
            r"T=300 exceeds the model's max_len=256.*idx\[:, -256:\]",
        ),
        (
            torch.tensor([[1, 2, 70]]),
            r"token id 70 is out of range for vocab_size=65 \(valid ids are 0..64\)",
        ),
        (torch.tensor([[-1, 2]]), r"token id -1 is out of range"),
        (
            torch.zeros(5, dtype=torch.long),
            r"shape \[B, T\] with B >= 1 and T >= 1, got \[5\].*unsqueeze\(0\)",
        ),
        (torch.zeros(0, 3, dtype=torch.long), r"with B >= 1 and T >= 1, got \[0, 3\]$"),
        (torch.zeros(1, 5), r"must hold integer token ids, got dtype torch.float32"),
        (torch.zeros(1, 5, dtype=torch.bool), r"must hold integer token ids, got dtype torch.bool"),
        ([[1, 2]], r"must be a torch.Tensor"),
    ],
)
def test_bad_token_ids_are_explained(idx, message):
    model = GPT(GPTConfig(vocab_size=65))
    with pytest.raises(ValueError, match=message):
        model(idx)


def test_the_id_range_is_read_on_the_cpu_only_unless_asked():
    """Reading the ids' range is a host synchronisation on an accelerator: a training step
    must not pay it. A tensor on the meta device has no values to read at all."""
    ids = torch.empty(2, 5, dtype=torch.long, device="meta")
    check_token_ids(ids, 10, max_len=8, targets=ids)  # shape, dtype and length only
    with pytest.raises(RuntimeError, match="item"):
        check_token_ids(ids, 10, read_values=True)  # generate reads them, once per call
    with pytest.raises(ValueError, match="token id 12 is out of range"):
        check_token_ids(torch.tensor([[1, 12]]), 10)


def test_bad_config_and_targets_are_explained():
    with pytest.raises(ValueError, match=r"d_model=100 is not divisible by n_heads=3"):
        GPTConfig(vocab_size=10, d_model=100, n_heads=3)
    with pytest.raises(ValueError, match="vocab_size must be a positive int"):
        GPTConfig(vocab_size=0)
    with pytest.raises(ValueError, match=r"dropout must be a number in \[0, 1\), got 1.5"):
        GPTConfig(vocab_size=10, dropout=1.5)
    model = GPT(GPTConfig(vocab_size=10, d_model=16, n_heads=2, n_layers=1))
    with pytest.raises(ValueError, match=r"targets must have the same shape as idx \[1, 4\]"):
        model(torch.zeros(1, 4, dtype=torch.long), torch.zeros(1, 3, dtype=torch.long))


def _small_model(max_len=32):
    seed_everything(0)
    model = GPT(GPTConfig(vocab_size=17, d_model=32, n_heads=4, n_layers=2, max_len=max_len))
    # bigger weights than at init, so that the next-token distribution is far from uniform
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(8.0)
    return model


def test_kv_cache_greedy_equals_recomputation_also_past_max_len():
    model = _small_model()
    prompt = torch.randint(17, (2, 5))
    cached = model.generate(prompt, 70, temperature=0)  # 75 tokens > 2 × max_len
    recomputed = model.generate(prompt, 70, temperature=0, use_cache=False)
    assert cached.shape == (2, 75)
    assert torch.equal(cached, recomputed)
    assert torch.equal(cached[:, :5], prompt)


def test_kv_cache_seeded_sampling_equals_recomputation():
    model = _small_model()
    prompt = torch.randint(17, (3, 4))
    a = model.generate(
        prompt, 40, temperature=0.9, top_k=5, generator=torch.Generator().manual_seed(1)
    )
    b = model.generate(
        prompt,
        40,
        temperature=0.9,
        top_k=5,
        generator=torch.Generator().manual_seed(1),
        use_cache=False,
    )
    assert torch.equal(a, b)


def test_recompute_window_matches_chapter_cropping_before_the_window_fills():
    model = _small_model(max_len=32)
    prompt = torch.randint(17, (1, 3))
    ours = model.generate(prompt, 29, temperature=0, use_cache=False)
    idx = prompt
    for _ in range(29):  # the chapter's loop: recompute over the last max_len tokens
        logits, _ = model(idx[:, -32:])
        idx = torch.cat([idx, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert torch.equal(ours, idx)


def test_generation_with_a_prompt_longer_than_max_len():
    model = _small_model(max_len=16)
    prompt = torch.randint(17, (1, 40))
    out = model.generate(prompt, 10, temperature=0)
    assert torch.equal(out, model.generate(prompt, 10, temperature=0, use_cache=False))


def test_generation_errors():
    model = _small_model()
    prompt = torch.zeros(1, 2, dtype=torch.long)
    for bad in (-1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="temperature must be a finite number >= 0.*greedy"):
            model.generate(prompt, 3, temperature=bad)
    with pytest.raises(ValueError, match="top_k must be a positive int"):
        model.generate(prompt, 3, top_k=0)
    with pytest.raises(ValueError, match="n_new must be a non-negative int"):
        model.generate(prompt, -2)


def test_temperature_and_top_k_probabilities():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    torch.testing.assert_close(
        next_token_probs(logits, temperature=0.5), torch.softmax(logits / 0.5, -1)
    )
    p = next_token_probs(logits, top_k=2)
    e = math.exp(1.0)
    torch.testing.assert_close(p, torch.tensor([[e / (e + 1), 1 / (e + 1), 0.0, 0.0]]))
    assert next_token_probs(logits, temperature=0).tolist() == [[1.0, 0.0, 0.0, 0.0]]
    assert sample_next(logits, temperature=0).item() == 0
    assert torch.equal(next_token_probs(logits, top_k=10), torch.softmax(logits, -1))


def test_pytorch_init_keeps_each_modules_default():
    config = GPTConfig(vocab_size=65, d_model=64, n_heads=4, n_layers=2, max_len=32)
    seed_everything(0)
    ours = GPT(config, init="pytorch")
    seed_everything(0)
    gpt2 = GPT(config)
    assert 0.9 < ours.tok_emb.weight.std().item() < 1.1  # nn.Embedding: N(0, 1)
    assert 0.015 < gpt2.tok_emb.weight.std().item() < 0.025  # GPT-2's 0.02
    block = ours.blocks[1]
    assert block.mlp.down.weight.abs().max().item() <= 1 / math.sqrt(4 * 64)  # U(±1/√fan_in)
    assert block.mlp.down.weight.std().item() > 0.8 / math.sqrt(3 * 4 * 64)
    assert block.attn.qkv.bias.abs().max().item() > 0  # biases are not zeroed
    assert torch.equal(block.ln1.weight, torch.ones(64))
    assert not torch.equal(ours.lm_head.weight, gpt2.lm_head.weight)
    with pytest.raises(
        ValueError, match=r"init must be one of \('gpt2', 'pytorch'\), got 'xavier'"
    ):
        GPT(config, init="xavier")


def test_every_integer_dtype_of_ids_and_targets_gives_the_same_loss():
    seed_everything(0)
    model = GPT(GPTConfig(vocab_size=10, d_model=16, n_heads=2, n_layers=1))
    idx = torch.randint(10, (2, 6))
    targets = torch.randint(10, (2, 6))
    logits, loss = model(idx, targets)
    for dtype in (torch.uint8, torch.int8, torch.int16, torch.int32):
        other_logits, other_loss = model(idx.to(dtype), targets.to(dtype))
        assert torch.equal(other_logits, logits) and torch.equal(other_loss, loss), dtype
    assert torch.equal(model.generate(idx.to(torch.uint8), 3, temperature=0)[:, :6], idx)


def test_a_target_of_minus_one_leaves_its_position_out_of_the_loss():
    seed_everything(0)
    model = GPT(GPTConfig(vocab_size=10, d_model=16, n_heads=2, n_layers=1))
    idx, targets = torch.randint(10, (1, 6)), torch.randint(10, (1, 6))
    logits, _ = model(idx)
    kept = targets.clone()
    kept[0, 2] = -1
    expected = F.cross_entropy(logits[0, [0, 1, 3, 4, 5]], targets[0, [0, 1, 3, 4, 5]])
    torch.testing.assert_close(model(idx, kept)[1], expected)


@pytest.mark.parametrize(
    ("targets", "message"),
    [
        (
            torch.tensor([[1, 2, 10]]),
            r"target 10 is out of range for vocab_size=10.*or -1",
        ),
        (torch.tensor([[1, -2, 3]]), r"target -2 is out of range"),
        (torch.tensor([[1.0, 2.0, 3.0]]), r"targets must hold integer token ids, got dtype torch."),
        (torch.full((1, 3), -1), r"every target is -1"),
        ([[1, 2, 3]], r"targets must be a torch.Tensor"),
    ],
)
def test_bad_targets_are_explained(targets, message):
    model = GPT(GPTConfig(vocab_size=10, d_model=16, n_heads=2, n_layers=1))
    with pytest.raises(ValueError, match=message):
        model(torch.zeros(1, 3, dtype=torch.long), targets)


@pytest.mark.parametrize("temperature", [1e-6, 1e-40, 1e-46, 1e-300])
def test_a_tiny_temperature_is_greedy_instead_of_an_error(temperature):
    # 1e-46 and 1e-300 are 0 in float32, so the logits divided by them would be 0 / 0
    logits = torch.tensor([[1.0, 3.0, 2.0, 3.0]])
    probs = next_token_probs(logits, temperature=temperature)
    assert probs.tolist() == [[0.0, 0.5, 0.0, 0.5]]  # the two largest share the mass
    assert sample_next(logits, temperature=temperature).item() in (1, 3)
    model = _small_model()
    prompt = torch.zeros(1, 2, dtype=torch.long)
    tiny = model.generate(prompt, 5, temperature=temperature, generator=torch.Generator())
    assert torch.equal(tiny, model.generate(prompt, 5, temperature=0))


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: MLP(16, d_ff=0), "d_ff must be a positive int, got 0"),
        (lambda: MLP(0), "d_model must be a positive int, got 0"),
        (lambda: MLP(16, dropout=-0.1), r"dropout must be a number in \[0, 1\)"),
        (lambda: CausalSelfAttention(10, 3), "d_model=10 is not divisible by n_heads=3"),
        (lambda: CausalSelfAttention(16, 0), "n_heads must be a positive int, got 0"),
        (lambda: Block(16, 5), "d_model=16 is not divisible by n_heads=5"),
    ],
)
def test_bad_module_settings_are_explained(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_the_mlp_takes_another_hidden_width():
    mlp = MLP(16, d_ff=24)
    assert mlp.up.weight.shape == (24, 16) and mlp.down.weight.shape == (16, 24)
    assert mlp(torch.zeros(2, 3, 16)).shape == (2, 3, 16)
