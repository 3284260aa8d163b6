"""An exercise is passed only by doing it. For every exercise: its reference under another name,
as the stand-in a failed check leaves in the notebook, and subclassed, is refused; so is every
library function and PyTorch operator the exercise lists (`Exercise.forbidden`), each by an
answer that really hands the work to it. `python -m tests.lessons.test_delegations` prints the
table (exercise → route tried → the message it got)."""

from __future__ import annotations

import ast
import importlib
import math
import re
from pathlib import Path

import nbformat
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import gptlib.model as gptlib_model
from gptlib.data.batches import BatchSampler
from gptlib.lessons.engine.checks import REGISTRY, CheckError, verify
from gptlib.lessons.engine.checks.delegation import DELEGATED
from gptlib.lessons.engine.checks.in_notebook import make_stand_in
from gptlib.lessons.nb04.checks import heads_of
from gptlib.lessons.nb04.experiments.multihead import (
    multi_head_by_loop,
    multi_head_steps,
    to_torch_multihead,
)
from gptlib.lessons.nb06.references import layer_norm as library_layer_norm
from gptlib.lessons.nb09.experiments.costs import (
    Architecture,
    accelerator_hours,
    architecture_of,
    parameter_counts,
)
from gptlib.lessons.nb09.experiments.llama_shape import LlamaShaped
from gptlib.lessons.shared.experiments.toy import train_losses
from gptlib.lessons.shared.experiments.variants import RewiredBlock
from gptlib.lessons.shared.references import (
    held_out_losses,
    loss_gradient_norms,
    sinusoidal_positions,
)
from gptlib.train import TrainConfig, Trainer
from tests.lessons.nb02.test_checks import _by_sdpa
from tests.lessons.nb06.test_checks import _through_gptlib_block, _via_nn_layer_norm
from tests.lessons.nb09.test_checks import _real_block

EXERCISES = sorted(REGISTRY)
NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


# --- the reference under other names: every exercise ------------------------------------------


def _renamed(reference):
    """The reference, called from the student's own function or class."""
    if isinstance(reference, type):
        return type("Mine", (reference,), {})

    def mine(*args, **kwargs):
        return reference(*args, **kwargs)

    return mine


def _unwrapped_stand_in(name):
    """The stand-in a failed check leaves in the notebook, taken apart: a class's stand-in
    subclassed once more (no longer marked as a stand-in), a function's `__wrapped__`."""
    stand_in = make_stand_in(REGISTRY[name], "mine")
    if isinstance(stand_in, type):
        return type("Again", (stand_in,), {})
    return stand_in.__wrapped__


@pytest.mark.parametrize("name", EXERCISES)
def test_the_reference_under_another_name_is_refused(name):
    for answer in (_renamed(REGISTRY[name].reference), _unwrapped_stand_in(name)):
        with pytest.raises(CheckError) as info:
            verify(name, answer)
        assert info.value.mistake == DELEGATED, info.value
        assert "the course's reference answer" in info.value.detail


# --- each listed route, by an answer that uses it ---------------------------------------------


def _holder(ln1, attn, ln2, mlp):
    block = nn.Module()
    block.ln1, block.attn, block.ln2, block.mlp = ln1, attn, ln2, mlp
    return block


class _LoopedHeads(nn.Module):
    """gptlib's layer's two linear maps, run by the course's loop over heads."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        return multi_head_by_loop(self, x)


class _TorchsLayer(nn.Module):
    """torch's nn.MultiheadAttention built inside the student's layer."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.torch_layer = nn.MultiheadAttention(d_model, n_heads, batch_first=True)

    def forward(self, x):
        return self.torch_layer(x, x, x, need_weights=False)[0]


class _ConvertedLayer(_LoopedHeads):
    """The course's converter to torch's layer, run on the student's."""

    def forward(self, x):
        T = x.shape[1]
        mask = torch.ones(T, T, dtype=torch.bool).triu(1)
        return to_torch_multihead(self)(x, x, x, attn_mask=mask, need_weights=False)[0]


class _SteppedLayer(_LoopedHeads):
    """The course's step-by-step forward pass, run on the student's layer."""

    def forward(self, x):
        return multi_head_steps(self, x)[-1].tensor


class _RewiredBlock(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = gptlib_model.CausalSelfAttention(d_model, n_heads)
        self.mlp = gptlib_model.MLP(d_model)

    def forward(self, x):
        return RewiredBlock(self, norm="pre")(x)


class _LibraryGPT(gptlib_model.GPT):
    def __init__(self, vocab_size, **sizes):
        super().__init__(gptlib_model.GPTConfig(vocab_size=vocab_size, **sizes))


def _generate_by_steps(sample_or_probs):
    def generate(model, idx, n_new, max_len, temperature=1.0, top_k=None, generator=None):
        with torch.no_grad():
            for _ in range(n_new):
                logits, _ = model(idx[:, -max_len:])
                last = logits[:, -1, :]
                if sample_or_probs is gptlib_model.sample_next:
                    nxt = gptlib_model.sample_next(
                        last, temperature=temperature, top_k=top_k, generator=generator
                    )
                else:
                    probs = gptlib_model.next_token_probs(
                        last, temperature=temperature, top_k=top_k
                    )
                    nxt = torch.multinomial(probs, 1, generator=generator)
                idx = torch.cat([idx, nxt.view(-1, 1)], dim=1)
        return idx

    return generate


def _generate_by_the_model(model, idx, n_new, max_len, temperature=1.0, top_k=None, generator=None):
    return model.generate(idx, n_new, temperature=temperature, top_k=top_k, generator=generator)


def _cache_by_the_library(attn, x, cache, n_heads):
    B, _, d = x.shape
    layer = gptlib_model.CausalSelfAttention(d, n_heads)
    layer.qkv, layer.proj = attn.qkv, attn.proj
    q, k, v = (layer.split_heads(t) for t in attn.qkv(x).split(d, dim=-1))
    if cache is not None:
        k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
    y = F.scaled_dot_product_attention(q, k, v)
    return attn.proj(layer.merge_heads(y)), (k, v)


def _cache_in_a_kv_cache(attn, x, cache, n_heads):
    B, _, d = x.shape
    q, k, v = (t.view(B, 1, n_heads, -1).transpose(1, 2) for t in attn.qkv(x).split(d, dim=-1))
    if cache is not None:
        k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
    kept = gptlib_model.KVCache.empty(tuple(k.shape), device=k.device, dtype=k.dtype)
    k, v = kept.append(k, v)
    y = F.scaled_dot_product_attention(q, k, v)
    return attn.proj(y.transpose(1, 2).reshape(B, 1, d)), (k, v)


def _train_with_the_trainer(model, get_batch, eval_batches, steps, lr, eval_every):
    ids = torch.cat([x.flatten() for x, _ in eval_batches["train"]])
    Trainer(model, ids, ids, TrainConfig(steps=steps, lr=lr, batch_size=4, block_size=8))
    raise AssertionError("not reached: the check refuses the Trainer")


def _train_by_train_losses(model, get_batch, eval_batches, steps, lr, eval_every):
    ids = torch.cat([x.flatten() for x, _ in eval_batches["train"]])
    train_losses(model, ids, TrainConfig(steps=steps, lr=lr, batch_size=4, block_size=8))
    raise AssertionError("not reached: the check refuses train_losses")


def _count_of_a_shaped_model(d, h, kv, d_ff):
    with torch.device("meta"):
        model = LlamaShaped(1, d, h, 1, d_ff, kv)
    return sum(p.numel() for p in model.blocks[0].parameters())


def _count_of_an_architecture(d, h, kv, d_ff):
    arch = Architecture(1, d, h, 1, 1, d_ff=d_ff, n_kv_heads=kv, style="llama", bias=False)
    counts = parameter_counts(arch)
    return counts.attention_per_layer + counts.ffn_per_layer + 2 * d


def _count_of_a_gpt(d, h, kv, d_ff):
    counts = parameter_counts(architecture_of(gptlib_model.GPTConfig(vocab_size=2, d_model=d)))
    return counts.attention_per_layer + counts.ffn_per_layer


def _group_norm(x, g, b, eps=1e-5):
    return F.group_norm(x.reshape(-1, x.shape[-1]), 1, g, b, eps).reshape(x.shape)


def _instance_norm(x, g, b, eps=1e-5):
    flat = x.reshape(1, -1, x.shape[-1])
    return g * F.instance_norm(flat, eps=eps).reshape(x.shape) + b


def _gpu_hours_by_the_library(n_params, n_tokens, peak_flops, mfu):
    return accelerator_hours(6 * n_params * n_tokens, peak_flops, mfu)


# exercise → {route tried: an answer that takes it}
ROUTES = {
    "softmax-rows": {
        "torch.softmax": lambda s: torch.softmax(s, dim=-1),
        "F.softmax": lambda s: F.softmax(s, -1),
        "Tensor.softmax, transposed": lambda s: s.mT.softmax(-2).mT,
        "nn.Softmax": nn.Softmax(dim=-1),
        "log_softmax then exp": lambda s: s.log_softmax(-1).exp(),
        "torch._safe_softmax": lambda s: torch._safe_softmax(s, -1),
    },
    "attention": {
        "gptlib.attention_with_weights": lambda q, k, v, mask=None: (
            gptlib_model.attention_with_weights(q, k, v, mask=mask)
        ),
        "F.scaled_dot_product_attention": _by_sdpa,
        "F.scaled_dot_product_attention, 4-D": lambda q, k, v, mask=None: (
            F.scaled_dot_product_attention(q[:, None], k[:, None], v[:, None], attn_mask=mask)[
                :, 0
            ],
            torch.ones(q.shape[0], q.shape[1], k.shape[1]) / k.shape[1],
        ),
    },
    "causal-attention-weights": {
        "gptlib.causal_mask": lambda s: torch.softmax(
            s.masked_fill(~gptlib_model.causal_mask(s.shape[-1]), float("-inf")), -1
        ),
    },
    "entropy-floor": {
        "Grammar.entropy_per_char": lambda g: g.entropy_per_char(),
        "Grammar.entropy_per_sentence": lambda g: g.entropy_per_sentence() / 20,
        "Grammar.mean_sentence_length": lambda g: math.log(2) * g.mean_sentence_length(),
        "Grammar.context_entropies": lambda g: g.context_entropies(4)[-1],
    },
    "held-out-losses": {"the library's held_out_losses": held_out_losses},
    "block_gradient_norms": {"the library's loss_gradient_norms": loss_gradient_norms},
    "sinusoidal-positions": {"the library's sinusoidal_positions": sinusoidal_positions},
    "split-heads": {
        "CausalSelfAttention.split_heads": lambda x, h: gptlib_model.CausalSelfAttention(
            x.shape[-1], h
        ).split_heads(x),
        "the course's heads_of": heads_of,
    },
    "merge-heads": {
        "CausalSelfAttention.merge_heads": gptlib_model.CausalSelfAttention.merge_heads,
    },
    "attention-module": {
        "multi_head_by_loop": _LoopedHeads,
        "nn.MultiheadAttention": _TorchsLayer,
        "to_torch_multihead": _ConvertedLayer,
        "multi_head_steps": _SteppedLayer,
    },
    "gpt-attention": {
        "multi_head_by_loop": _LoopedHeads,
        "nn.MultiheadAttention": _TorchsLayer,
        "to_torch_multihead": _ConvertedLayer,
        "multi_head_steps": _SteppedLayer,
    },
    "layer_norm": {
        "F.layer_norm": lambda x, g, b, eps=1e-5: F.layer_norm(x, x.shape[-1:], g, b, eps),
        "nn.LayerNorm": _via_nn_layer_norm,
        "F.group_norm with one group": _group_norm,
        "F.instance_norm": _instance_norm,
        "the library's layer_norm": library_layer_norm,
    },
    "block_forward": {
        "gptlib's Block": _through_gptlib_block,
        "RewiredBlock": lambda x, ln1, attn, ln2, mlp, norm: RewiredBlock(
            _holder(ln1, attn, ln2, mlp), norm=norm
        )(x),
    },
    "gpt-block": {
        "gptlib's Block": type("FromGptlib", (gptlib_model.Block,), {}),
        "RewiredBlock": _RewiredBlock,
    },
    "gpt": {"gptlib's GPT": _LibraryGPT},
    "generate": {
        "GPT.generate": _generate_by_the_model,
        "gptlib.next_token_probs": _generate_by_steps(gptlib_model.next_token_probs),
        "gptlib.sample_next": _generate_by_steps(gptlib_model.sample_next),
    },
    "kv-cache": {
        "gptlib's CausalSelfAttention": _cache_by_the_library,
        "gptlib's KVCache": _cache_in_a_kv_cache,
    },
    "mlp": {"gptlib's MLP": gptlib_model.MLP},
    "gpt-mlp": {"gptlib's MLP": gptlib_model.MLP},
    "get-batch": {
        "BatchSampler": lambda ids, B, T, g: BatchSampler(
            ids, B, T, seed=int(torch.randint(2**31, (1,), generator=g))
        ).sample(),
    },
    "effective-choices": {
        "torch's Categorical": lambda logits, temperature: (
            torch.distributions.Categorical(logits=logits / temperature).entropy().exp()
        ),
    },
    "train": {
        "gptlib's Trainer": _train_with_the_trainer,
        "the course's train_losses": _train_by_train_losses,
    },
    "llama-block-parameters": {
        "a built LlamaBlock": _real_block,
        "a built LlamaShaped": _count_of_a_shaped_model,
        "parameter_counts of an Architecture": _count_of_an_architecture,
        "architecture_of a GPTConfig": _count_of_a_gpt,
    },
    "training-gpu-hours": {"accelerator_hours": _gpu_hours_by_the_library},
}
CASES = [
    (name, route, answer) for name, routes in ROUTES.items() for route, answer in routes.items()
]


def refusal_of(name, answer) -> str:
    """The message a delegating answer gets (AssertionError if it is not refused as one)."""
    with pytest.raises(CheckError) as info:
        verify(name, answer)
    assert info.value.mistake == DELEGATED, info.value
    return info.value.detail


@pytest.mark.parametrize(("name", "route", "answer"), CASES, ids=[f"{n}-{r}" for n, r, _ in CASES])
def test_an_answer_through_a_library_route_is_refused(name, route, answer):
    detail = refusal_of(name, answer)
    assert detail.startswith("your `") and " called " in detail
    assert "Write that part with your own code" in detail


@pytest.mark.parametrize("name", [n for n in EXERCISES if REGISTRY[n].forbidden])
def test_every_forbidden_route_is_tried_by_an_answer(name):
    """Each route an exercise lists is named in the refusal of at least one answer above."""
    assert name in ROUTES, (
        f"{name} forbids {[r.target for r in REGISTRY[name].forbidden]}: add ROUTES[{name!r}] "
        "above, an answer that takes each route (docs/authoring.md, step 3)"
    )
    messages = [refusal_of(name, answer) for answer in ROUTES[name].values()]
    for route in REGISTRY[name].forbidden:
        if route.called in "".join(messages):
            continue
        raise AssertionError(f"{name}: no answer above takes {route.target} ({route.called})")


def main() -> None:
    for name, route, answer in CASES:
        try:
            detail = refusal_of(name, answer)
        except BaseException as exc:  # noqa: BLE001 - a table row, not a test
            detail = f"NOT REFUSED: {exc}"
        print(f"| {name} | {route} | {detail} |")


if __name__ == "__main__":
    main()


# --- no notebook hands the student a reference before its check -------------------------------

_CHECK = re.compile(r"""\bcheck\(\s*["']([^"']+)["']""")


def _imported_before_each_check(path: Path) -> list[tuple[str, dict[str, object]]]:
    """(exercise, {name: object imported by an earlier cell}) for each check cell of `path`."""
    imported: dict[str, object] = {}
    found = []
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        found += [(name, dict(imported)) for name in _CHECK.findall(cell.source)]
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:  # IPython magics: no imports of the course's there
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                module = importlib.import_module(node.module)
                for alias in node.names:
                    imported[alias.asname or alias.name] = getattr(module, alias.name, None)
    return found


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")), ids=lambda p: p.stem)
def test_no_notebook_imports_an_exercises_reference_before_its_check(path):
    for name, imported in _imported_before_each_check(path):
        reference = REGISTRY[name].reference
        leaked = [alias for alias, obj in imported.items() if obj is reference]
        assert not leaked, f"{path.name} imports {leaked}, {name}'s reference, before its check"


# --- the same refusals from a graded release's recording ----------------------------------------


@pytest.fixture(scope="module")
def recorded():
    """Every exercise as a graded release registers it: recorded results, no reference code."""
    import io

    from gptlib.lessons.engine.checks.recorded import record, recorded_exercises

    buffer = io.BytesIO()
    torch.save(record(sorted(ROUTES)), buffer)
    buffer.seek(0)
    return {e.name: e for e in recorded_exercises(torch.load(buffer, weights_only=False))}


@pytest.mark.parametrize(("name", "route", "answer"), CASES, ids=[f"{n}-{r}" for n, r, _ in CASES])
def test_a_graded_release_refuses_the_same_routes(name, route, answer, recorded, monkeypatch):
    monkeypatch.setitem(REGISTRY, name, recorded[name])
    assert not REGISTRY[name].has_solution
    refusal_of(name, answer)
