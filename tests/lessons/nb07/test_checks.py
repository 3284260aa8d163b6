"""Notebook 07's exercises: right answers written in other ways pass (the attention and MLP
again, the capstone's Block and GPT, generate, the KV cache), and mistakes in the whole model
are named as what they are."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from gptlib import GPT as gptlib_GPT
from gptlib import GPTConfig
from gptlib import model as gptlib_model
from gptlib.lessons.engine.checks import REGISTRY, CheckError, core, verify
from gptlib.lessons.engine.checks.recorded import record
from gptlib.lessons.nb04.checks import ATTENTION_MODULE_MISTAKES
from gptlib.lessons.nb05.checks import MLP_MISTAKES
from tests.lessons.nb05.test_checks import ByHand

# --- 07_build_the_gpt: the capstone's Block and GPT, and generate ----------------------------
# Right answers written other ways must pass: sdpa or an explicit softmax, a tril or a triu
# mask, a mask kept out of the state dict, hand-written LayerNorms, tying from either side,
# einsum, other crops and top-k cuts. What later cells do with an answer (section 8's strict
# load, section 10's backward pass) the checks do first: a mask in the state dict, an in-place
# residual update and a forward cut off from the gradient are named.


class SdpaAttention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, d = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(out.transpose(1, 2).flatten(2))


class TrilAttention(nn.Module):
    """Explicit softmax with a lower-triangular mask (True = allowed) kept out of the state
    dict, and einsum."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.h = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        mask = torch.tril(torch.ones(256, 256, dtype=torch.bool))
        self.register_buffer("allowed", mask, persistent=False)

    def forward(self, x):
        B, T, d = x.shape
        q, k, v = (t.reshape(B, T, self.h, -1) for t in self.qkv(x).chunk(3, dim=-1))
        scores = torch.einsum("bihc,bjhc->bhij", q, k) * (d // self.h) ** -0.5
        scores = scores.masked_fill(~self.allowed[:T, :T], float("-inf"))
        out = torch.einsum("bhij,bjhc->bihc", torch.softmax(scores, dim=-1), v)
        return self.proj(out.reshape(B, T, d))


class HandLayerNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight, self.bias = nn.Parameter(torch.ones(d)), nn.Parameter(torch.zeros(d))

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = x.var(-1, unbiased=False, keepdim=True)
        return (x - mean) / torch.sqrt(var + 1e-5) * self.weight + self.bias


class ModuleMLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.up, self.act, self.down = nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)

    def forward(self, x):
        return self.down(self.act(self.up(x)))


class SdpaBlock(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn, self.mlp = SdpaAttention(d_model, n_heads), gptlib_model.MLP(d_model)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return x


class TrilBlock(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.attn, self.mlp = TrilAttention(d_model, n_heads), ModuleMLP(d_model)
        self.ln1, self.ln2 = HandLayerNorm(d_model), HandLayerNorm(d_model)

    def forward(self, x):
        h = x + self.attn(self.ln1(x))
        return h + self.mlp(self.ln2(h))


BLOCKS = {"sdpa, nn.LayerNorm": SdpaBlock, "tril buffer, einsum, hand LayerNorm": TrilBlock}
ATTENTIONS = {"sdpa": SdpaAttention, "tril, einsum": TrilAttention}


@pytest.mark.parametrize("attention", ATTENTIONS.values(), ids=ATTENTIONS)
def test_the_attention_written_again_passes_in_other_styles(attention):
    assert verify("gpt-attention", attention) == 3


def test_the_mlp_written_again_passes_in_another_style():
    assert verify("gpt-mlp", ModuleMLP) == 2


@pytest.mark.parametrize("block", BLOCKS.values(), ids=BLOCKS)
def test_other_right_blocks_pass(block):
    assert verify("gpt-block", block) == 2


class ChapterStyleGPT(nn.Module):
    """Positions sliced from the table, an nn.Sequential of blocks, the loss in [B, V, T] form,
    tying from the unembedding's side."""

    def __init__(self, vocab_size, d_model=128, n_heads=4, n_layers=4, max_len=256,
                 tie_weights=False):  # fmt: skip
        super().__init__()
        self.max_len = max_len
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        if tie_weights:
            self.tok_emb.weight = self.lm_head.weight
        self.pos_emb = nn.Embedding(max_len, d_model)
        self.blocks = nn.Sequential(*(TrilBlock(d_model, n_heads) for _ in range(n_layers)))
        self.ln_f = HandLayerNorm(d_model)

    def forward(self, idx, targets=None):
        x = self.blocks(self.tok_emb(idx) + self.pos_emb.weight[: idx.shape[1]])
        logits = self.lm_head(self.ln_f(x))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.transpose(1, 2), targets)


class LibraryPiecesGPT(nn.Module):
    """gptlib's own Block inside, the sdpa path, loss via log_softmax."""

    def __init__(self, vocab_size, d_model=128, n_heads=4, n_layers=4, max_len=256,
                 tie_weights=False):  # fmt: skip
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(gptlib_model.Block(d_model, n_heads) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        if tie_weights:
            self.lm_head.weight = self.tok_emb.weight

    def forward(self, idx, targets=None):
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(idx.shape[1]))[None]
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = None
        if targets is not None:
            log_probs = logits.log_softmax(-1)
            loss = -log_probs.gather(-1, targets[..., None]).mean()
        return logits, loss


@pytest.mark.parametrize("gpt", [ChapterStyleGPT, LibraryPiecesGPT], ids=["chapter", "library"])
def test_other_right_models_pass(gpt):
    assert verify("gpt", gpt) == 4


def test_a_model_named_otherwise_is_told_the_expected_names():
    class Renamed(LibraryPiecesGPT):
        def __init__(self, vocab_size, **kwargs):
            super().__init__(vocab_size, **kwargs)
            self.wte = self.tok_emb
            del self.tok_emb

        def forward(self, idx, targets=None):
            self.tok_emb = self.wte
            return super().forward(idx, targets)

    with pytest.raises(CheckError) as info:
        verify("gpt", Renamed)
    message = str(info.value)
    assert message.startswith(
        "gpt: the weights do not fit: your module has no tok_emb.weight; gptlib's has no weight "
        "for your wte.weight. Name and shape the parameters as gptlib does: tok_emb.weight "
        "[11, 16], pos_emb.weight [12, 16], blocks.{i}.ln1.weight [16]"
    )
    assert info.value.mistake is None


def test_the_capstone_catalogues_the_issues_mistakes():
    names = {m.name for m in REGISTRY["gpt"].mistakes}
    assert len(names) >= 8
    assert {"post-ln", "no-final-layernorm", "positions-not-added", "no-mask",
            "positions-added-after-the-blocks", "no-residual-around-attention",
            "no-residual-around-mlp", "no-activation", "scaled-by-sqrt-d", "not-tied",
            "loss-against-the-inputs", "reshape-without-transpose", "gelu-tanh",
            "one-block-shared", "loss-on-probabilities"} <= names  # fmt: skip
    assert all(isinstance(m.implementation, type) for m in REGISTRY["gpt"].mistakes)


class ScrambledHeadsAttention(TrilAttention):
    """The chapter's pitfall: view(B, h, T, d_h) straight from [B, T, d]."""

    def forward(self, x):
        B, T, d = x.shape
        q, k, v = (t.reshape(B, self.h, T, -1) for t in self.qkv(x).chunk(3, dim=-1))
        scores = (q @ k.transpose(-2, -1)) * (d // self.h) ** -0.5
        scores = scores.masked_fill(~self.allowed[:T, :T], float("-inf"))
        return self.proj((scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, d))


class TanhMLP(ModuleMLP):
    def __init__(self, d):
        super().__init__(d)
        self.act = nn.GELU(approximate="tanh")


def _gpt_from(attention=TrilAttention, mlp=ModuleMLP, shared=False, block=TrilBlock):
    """A student's whole GPT in the chapter's style, with one piece swapped."""

    class StudentBlock(block):
        def __init__(self, d_model, n_heads):
            super().__init__(d_model, n_heads)
            self.attn, self.mlp = attention(d_model, n_heads), mlp(d_model)

    class StudentGPT(LibraryPiecesGPT):
        def __init__(self, vocab_size, d_model=128, n_heads=4, n_layers=4, max_len=256,
                     tie_weights=False):  # fmt: skip
            super().__init__(vocab_size, d_model, n_heads, n_layers, max_len, tie_weights)
            if shared:
                self.blocks = nn.ModuleList([StudentBlock(d_model, n_heads)] * n_layers)
            else:
                self.blocks = nn.ModuleList(StudentBlock(d_model, n_heads) for _ in range(n_layers))

    return StudentGPT


def test_a_whole_model_in_the_chapters_style_passes():
    assert verify("gpt", _gpt_from()) == 4


def test_one_block_repeated_is_named_as_shared_layers_not_as_tied_embeddings():
    with pytest.raises(CheckError) as info:
        verify("gpt", _gpt_from(shared=True))
    assert info.value.mistake == "one-block-shared"
    assert "not weight tying" in str(info.value)


def test_the_reshape_pitfall_inside_the_students_attention_is_named_from_the_whole_model():
    with pytest.raises(CheckError) as info:
        verify("gpt", _gpt_from(attention=ScrambledHeadsAttention))
    assert info.value.mistake == "reshape-without-transpose"
    assert str(info.value).startswith("gpt: in your attention, ")


def test_gpt2s_tanh_gelu_is_recognised_and_explained_from_the_whole_model():
    with pytest.raises(CheckError) as info:
        verify("gpt", _gpt_from(mlp=TanhMLP))
    assert info.value.mistake == "gelu-tanh"
    assert str(info.value).startswith("gpt: in your MLP, ")


def test_the_tanh_gelu_gap_the_message_quotes():
    x = torch.linspace(-6, 6, 120_001, dtype=torch.float64)
    gap = (F.gelu(x) - F.gelu(x, approximate="tanh")).abs()
    assert round(gap.max().item(), 5) == 0.00047
    assert abs(abs(x[gap.argmax()].item()) - 2.7) < 0.1


def _attend_by_sdpa(attn, x, cache, n_heads):
    B, T, d = x.shape
    q, k, v = attn.qkv(x).view(B, T, 3, n_heads, d // n_heads).permute(2, 0, 3, 1, 4)
    if cache is not None:
        k, v = torch.cat((cache[0], k), dim=-2), torch.cat((cache[1], v), dim=-2)
    out = F.scaled_dot_product_attention(q, k, v)  # the newest position reads every key
    return attn.proj(out.transpose(1, 2).reshape(B, T, d)), (k, v)


def _attend_by_einsum(attn, x, cache, n_heads):
    B, _, d = x.shape
    q, k, v = (t.reshape(B, 1, n_heads, -1).transpose(1, 2) for t in attn.qkv(x).chunk(3, -1))
    keys = k if cache is None else torch.cat([cache[0], k], 2)
    values = v if cache is None else torch.cat([cache[1], v], 2)
    w = torch.einsum("bhqc,bhkc->bhqk", q, keys).div((d // n_heads) ** 0.5).softmax(-1)
    out = torch.einsum("bhqk,bhkc->bqhc", w, values).reshape(B, 1, d)
    return attn.proj(out), (keys, values)


@pytest.mark.parametrize("answer", [_attend_by_sdpa, _attend_by_einsum], ids=["sdpa", "einsum"])
def test_other_right_caches_pass(answer):
    assert verify("kv-cache", answer) == 2


def test_the_cached_steps_give_what_the_full_layer_computes():
    """The reference, fed one position at a time, equals gptlib's layer run on the whole x."""
    exercise = REGISTRY["kv-cache"]
    for attn, x, n_heads in exercise.inputs():
        outputs, keys, values = exercise.as_function(exercise.reference)(attn, x, n_heads)
        layer = gptlib_model.CausalSelfAttention(x.shape[2], n_heads)
        layer.load_state_dict(attn.state_dict())
        with torch.no_grad():
            torch.testing.assert_close(outputs, layer(x), atol=1e-5, rtol=1e-5)
        assert (
            keys.shape == values.shape == (x.shape[0], n_heads, x.shape[1], x.shape[2] // n_heads)
        )


def test_a_cache_answer_that_returns_no_pair_is_told_the_contract():
    with pytest.raises(CheckError, match=r"\(y, \(keys, values\)\)"):
        verify("kv-cache", lambda attn, x, cache, n_heads: attn.proj(x))
    with pytest.raises(CheckError, match="runs the whole attention layer"):
        verify("kv-cache", lambda attn, x, cache, n_heads: attn(x))


def test_the_reference_model_is_gptlibs_model():
    """The reference classes compute what gptlib.GPT computes (so neither can drift alone)."""
    config, source, idx, targets = REGISTRY["gpt"].inputs()[1]
    assert config["tie_weights"]
    ours = REGISTRY["gpt"].reference(**config)
    ours.load_state_dict(source.state_dict(), strict=True)
    logits, loss = ours(idx, targets)
    expected_logits, expected_loss = source(idx, targets)
    torch.testing.assert_close(logits, expected_logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(loss, expected_loss, atol=1e-5, rtol=1e-5)
    assert ours.lm_head.weight is ours.tok_emb.weight


def _generate_by_scatter(model, idx, n_new, max_len, temperature=1.0, top_k=None, generator=None):
    for _ in range(n_new):
        start = max(0, idx.size(1) - max_len)
        logits, _ = model(idx[:, start:])
        logits = logits[:, -1, :]
        if top_k is not None:
            top = torch.topk(logits, top_k)
            logits = torch.full_like(logits, float("-inf")).scatter(1, top.indices, top.values)
        probs = F.softmax(logits / temperature, dim=-1)
        idx = torch.cat((idx, torch.multinomial(probs, num_samples=1, generator=generator)), 1)
    return idx


def _generate_into_a_buffer(model, idx, n_new, max_len, temperature=1.0, top_k=None,
                            generator=None):  # fmt: skip
    B, T = idx.shape
    out = torch.empty(B, T + n_new, dtype=idx.dtype)
    out[:, :T] = idx
    with torch.inference_mode():
        for t in range(T, T + n_new):
            last = model(out[:, max(0, t - max_len) : t])[0][:, -1] / temperature
            if top_k:
                cut = last.sort(dim=-1, descending=True).values[:, top_k - 1 : top_k]
                last = torch.where(last >= cut, last, torch.tensor(float("-inf")))
            out[:, t] = torch.multinomial(last.softmax(-1), 1, generator=generator)[:, 0]
    return out


@pytest.mark.parametrize("answer", [_generate_by_scatter, _generate_into_a_buffer])
def test_other_right_generators_pass(answer):
    assert verify("generate", answer) == 4


def test_every_generate_case_runs_past_the_models_window():
    for model, idx, n_new, max_len, *_ in REGISTRY["generate"].inputs():
        assert model.config.max_len == max_len
        assert idx.shape[1] + n_new > max_len + 1  # the crop matters on several steps


def test_without_the_crop_the_check_names_the_mistake_from_the_models_error():
    def uncropped(model, idx, n_new, max_len, temperature=1.0, top_k=None, generator=None):
        for _ in range(n_new):
            probs = torch.softmax(model(idx)[0][:, -1] / temperature, dim=-1)
            idx = torch.cat([idx, torch.multinomial(probs, 1, generator=generator)], dim=1)
        return idx

    with pytest.raises(CheckError, match="only ever read the most recent max_len tokens") as info:
        verify("generate", uncropped)
    assert info.value.mistake == "no-crop"


# --- no late surprises: what sections 8 and 10 do with the answers, the checks do first ---------


class PersistentMaskAttention(TrilAttention):
    """Right values, but the mask kept in the state dict: section 8's strict load refuses it."""

    def __init__(self, d_model, n_heads):
        super().__init__(d_model, n_heads)
        self.register_buffer("allowed", torch.tril(torch.ones(256, 256, dtype=torch.bool)))


class InPlaceBlock(TrilBlock):
    """Right values, but the residual sum made in place: section 10's backward pass fails."""

    def forward(self, x):
        h = x + self.attn(self.ln1(x))
        h += self.mlp(self.ln2(h))
        return h


class NoGradAttention(TrilAttention):
    """Right values from a forward pass run without gradient tracking."""

    def forward(self, x):
        with torch.no_grad():
            return super().forward(x)


def test_a_mask_in_the_state_dict_is_named_by_every_check_that_meets_it():
    with pytest.raises(CheckError) as info:
        verify("gpt-attention", PersistentMaskAttention)
    assert info.value.mistake == "buffer-in-the-state-dict"
    with pytest.raises(CheckError) as info:
        verify("gpt", _gpt_from(attention=PersistentMaskAttention))
    assert info.value.mistake == "buffer-in-the-state-dict"
    assert "strict load" in str(info.value) and "persistent=False" not in str(info.value)
    with pytest.raises(CheckError) as again:  # the second time, the line that fixes it
        verify("gpt", _gpt_from(attention=PersistentMaskAttention))
    assert again.value.detail.endswith("persistent=False), or build the mask inside forward")


def test_without_the_check_that_mask_would_fail_section_8s_strict_load():
    student = _gpt_from(attention=PersistentMaskAttention)(11, d_model=16, n_layers=1)
    library = gptlib_GPT(GPTConfig(vocab_size=11, d_model=16, n_layers=1))
    with pytest.raises(RuntimeError, match=r"Missing key\(s\) in state_dict: \"blocks.0.attn"):
        student.load_state_dict(library.state_dict(), strict=True)


def test_an_in_place_residual_is_named_though_its_values_are_right():
    for name, answer in (("gpt-block", InPlaceBlock), ("gpt", _gpt_from(block=InPlaceBlock))):
        with pytest.raises(CheckError) as info:
            verify(name, answer)
        assert info.value.mistake == "in-place-on-a-saved-tensor", name


def test_without_the_check_the_in_place_residual_would_fail_section_10s_backward_pass():
    model = _gpt_from(block=InPlaceBlock)(11, d_model=16, n_layers=2)
    idx = torch.randint(11, (2, 5))
    _, loss = model(idx, idx)
    with pytest.raises(RuntimeError, match="inplace operation"):
        loss.backward()


def test_a_forward_pass_cut_off_from_the_gradient_is_named():
    for name, answer in (
        ("gpt-attention", NoGradAttention),
        ("gpt", _gpt_from(attention=NoGradAttention)),
    ):
        with pytest.raises(CheckError) as info:
            verify(name, answer)
        assert info.value.mistake == "gradient-cut", name


def test_the_chapters_name_for_the_unembedding_is_told_the_course_name():
    class HeadNamed(ChapterStyleGPT):
        def __init__(self, vocab_size, **kwargs):
            super().__init__(vocab_size, **kwargs)
            self.head = self.lm_head
            del self.lm_head

        def forward(self, idx, targets=None):
            self.lm_head = self.head
            return super().forward(idx, targets)

    with pytest.raises(CheckError, match="your module has no lm_head.weight; gptlib's has no "
                       r"weight for your head.weight\."):  # fmt: skip
        verify("gpt", HeadNamed)


def test_default_sizes_other_than_the_chapters_are_named():
    class SmallDefaults(LibraryPiecesGPT):
        def __init__(self, vocab_size, d_model=64, n_heads=4, n_layers=4, max_len=256,
                     tie_weights=False):  # fmt: skip
            super().__init__(vocab_size, d_model, n_heads, n_layers, max_len, tie_weights)

    with pytest.raises(CheckError) as info:
        verify("gpt", SmallDefaults)
    assert info.value.mistake == "other-default-sizes"


@pytest.mark.parametrize(
    "gpt", [ChapterStyleGPT, LibraryPiecesGPT, _gpt_from()], ids=["chapter", "library", "student"]
)
def test_an_answer_that_passes_survives_sections_8_and_10(gpt):
    """Section 8 loads gptlib's weights into the model of the chapter's sizes and back, both
    strictly; section 10 trains a model of 64 positions."""
    assert verify("gpt", gpt) == 4
    V = 41
    yours, theirs = gpt(V), gptlib_GPT(GPTConfig(vocab_size=V))
    yours.load_state_dict(theirs.state_dict(), strict=True)
    theirs.load_state_dict(yours.state_dict(), strict=True)
    model = gpt(V, max_len=64)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    idx = torch.randint(V, (2, 64), generator=torch.Generator().manual_seed(0))
    _, loss = model(idx, idx)
    loss.backward()
    optimizer.step()


def test_a_cache_that_reads_other_attributes_of_the_layer_is_told_what_it_may_use():
    def attend_with_heads_from_the_layer(attn, x, cache, n_heads):
        return _attend_by_einsum(attn, x, cache, attn.n_heads)

    with pytest.raises(CheckError, match=r"Use only the layer's qkv and proj, and the n_heads"):
        verify("kv-cache", attend_with_heads_from_the_layer)


NB07_EXERCISES = ("gpt-attention", "gpt-block", "gpt", "generate", "kv-cache")
NB07_MISTAKES = [
    (name, m)
    for name in NB07_EXERCISES
    for m in REGISTRY[name].mistakes
    if m.name not in {o.name for o in ATTENTION_MODULE_MISTAKES + MLP_MISTAKES}
]


@pytest.mark.parametrize(
    ("name", "mistake"), NB07_MISTAKES, ids=[f"{n}-{m.name}" for n, m in NB07_MISTAKES]
)
def test_07s_mistakes_teach_in_words_first_and_keep_the_line_that_fixes_it(name, mistake):
    """Messages name the misconception in words: no code (04's and 05's mistakes, reused here,
    are theirs); the fix, shown from the second time, holds the code."""
    for code in ("`", "torch.", "self.", "F.", "nn.", "[:", "dim=", "()"):
        assert code not in mistake.message, f"{name}/{mistake.name}: {code!r} in the message"
    assert mistake.fix, f"{name}/{mistake.name}: no fix"


def test_a_mask_too_short_for_the_models_window_is_caught_by_the_capstone():
    class ShortMaskAttention(TrilAttention):
        def __init__(self, d_model, n_heads):
            super().__init__(d_model, n_heads)
            mask = torch.tril(torch.ones(50, 50, dtype=torch.bool))
            self.register_buffer("allowed", mask, persistent=False)

    assert verify("gpt-attention", ShortMaskAttention) == 3  # its longest input is 40
    with pytest.raises(CheckError, match=r"fails on a window of all 256 positions it knows"):
        verify("gpt", _gpt_from(attention=ShortMaskAttention))


@pytest.mark.parametrize("name", NB07_EXERCISES + ("gpt-mlp",))
def test_a_check_leaves_the_notebooks_random_stream_as_it_found_it(name):
    right = {"gpt-attention": SdpaAttention, "gpt-mlp": ModuleMLP, "gpt-block": SdpaBlock,
             "gpt": LibraryPiecesGPT, "generate": _generate_by_scatter,
             "kv-cache": _attend_by_einsum}  # fmt: skip
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    verify(name, right[name])
    torch.testing.assert_close(torch.rand(3), expected, rtol=0, atol=0)


def test_recording_07s_mistakes_for_a_graded_release_reports_nothing_to_the_student():
    """A graded release records what each catalogued mistake raises on every input. Those runs
    are the engine's own: every input keeps the mistake's first message (no fix), and the
    student's count of reports, which decides when the fix shows, stays where it was."""
    before = dict(core._MISTAKE_TRIES)
    recording = record(["gpt"])
    raised = [r.error for m in recording["gpt"]["mistakes"] for r in m["results"] if r.error]
    assert len(raised) >= 10  # the mistakes that raise, each on every input
    assert not [text for _, text in raised if "here is the fix" in text]
    assert dict(core._MISTAKE_TRIES) == before


# ---------------------------------------------------------------- read for every exercise
# tests/lessons/engine/checks/test_every_exercise.py runs, for each exercise of this lesson,
# every right answer written another way (at least two) through its check, and holds the one
# named in INDEPENDENT, which shares no code with the reference, to not copying its formula.
RIGHT_ANSWERS = {
    "gpt-attention": ATTENTIONS,
    "gpt-mlp": {"modules": ModuleMLP, "05's by hand in float64": ByHand},
    "gpt-block": BLOCKS,
    "gpt": {"chapter": ChapterStyleGPT, "library": LibraryPiecesGPT, "student": _gpt_from()},
    "generate": {"scatter": _generate_by_scatter, "into a buffer": _generate_into_a_buffer},
    "kv-cache": {"sdpa": _attend_by_sdpa, "einsum": _attend_by_einsum},
}
INDEPENDENT = {
    "gpt-attention": "sdpa",
    "gpt-mlp": "05's by hand in float64",
    "gpt-block": "tril buffer, einsum, hand LayerNorm",
    "gpt": "chapter",
    "generate": "scatter",
    "kv-cache": "einsum",
}
