"""GPT-2's weights in gptlib's GPT (notebook 08): OpenAI's 124M-parameter model, or any GPT-2
that Hugging Face `transformers` builds, as a `gptlib.GPT` with the same logits.

    model = load_gpt2("gpt2")    # about 500 MB, downloaded once; needs pip install "gptlib[gpt2]"
    model = load_gpt2(hf_model)  # a transformers GPT2LMHeadModel you already have

GPT-2 is the chapter's model with three differences of form, none of substance:

- its linear layers are `Conv1D`s, whose weight is stored [in, out], the transpose of
  `nn.Linear`'s [out, in]; the fused c_attn holds W_Q, W_K, W_V side by side, as `attn.qkv` does;
- its MLP uses GELU's tanh approximation, 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), which
  differs from the exact x·Φ(x) by up to 4.7e-4 (near x = ±2.7): `GPTConfig(gelu="tanh")`;
- its unembedding is the token embedding (`tie_weights=True`).

`gpt2_config` reads a `GPT2Config` into a `GPTConfig`, `gpt2_state_dict` renames and transposes
the weights; the result loads with `load_state_dict(strict=True)` into `GPT(config)` and into
the model the student writes in notebook 07, which has the same parameter names. That model
calls the exact `F.gelu`; run it inside `tanh_gelu()` to compute GPT-2's function.
`transformers` is needed only to build or download a GPT-2, and is imported only then.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import torch
import torch.nn.functional as F

from gptlib.model import GPT, GPTConfig

INSTALL_HINT = 'pip install "gptlib[gpt2]"'
# transformers' activation names (its ACT2FN) and the GELU each computes, as GPTConfig.gelu.
GPT2_ACTIVATIONS = {
    "gelu_new": "tanh",  # GPT-2's own: the tanh formula, written out
    "gelu_pytorch_tanh": "tanh",  # the same, as F.gelu(approximate="tanh")
    "gelu_fast": "tanh",  # the same formula, factored differently
    "gelu_python_tanh": "tanh",
    "gelu": "exact",  # F.gelu, the erf form (the chapter's)
    "gelu_python": "exact",
}
# Buffers of older transformers releases (the causal mask and its fill value): no weights.
_BUFFER = re.compile(r"(transformer\.)?h\.\d+\.attn\.(masked_)?bias")
# Per block, gptlib's name → (GPT-2's name, its shape in units of d, whether it is a Conv1D
# weight [in, out] that nn.Linear holds transposed, [out, in]).
_BLOCK_NAMES = {
    "ln1.weight": ("ln_1.weight", (1,), False),
    "ln1.bias": ("ln_1.bias", (1,), False),
    "attn.qkv.weight": ("attn.c_attn.weight", (1, 3), True),
    "attn.qkv.bias": ("attn.c_attn.bias", (3,), False),
    "attn.proj.weight": ("attn.c_proj.weight", (1, 1), True),
    "attn.proj.bias": ("attn.c_proj.bias", (1,), False),
    "ln2.weight": ("ln_2.weight", (1,), False),
    "ln2.bias": ("ln_2.bias", (1,), False),
    "mlp.up.weight": ("mlp.c_fc.weight", (1, 4), True),
    "mlp.up.bias": ("mlp.c_fc.bias", (4,), False),
    "mlp.down.weight": ("mlp.c_proj.weight", (4, 1), True),
    "mlp.down.bias": ("mlp.c_proj.bias", (1,), False),
}


def gpt2_config(config: Any) -> GPTConfig:
    """The `GPTConfig` of a transformers `GPT2Config` (or any object with its attributes).

    vocab_size, n_embd, n_head, n_layer and n_positions become vocab_size, d_model, n_heads,
    n_layers and max_len; GPT-2's tanh GELU becomes gelu="tanh"; tie_word_embeddings becomes
    tie_weights. Dropout is left at 0: the model is for inference; for fine-tuning, set it with
    `dataclasses.replace(config, dropout=0.1)`. A GPT-2 variant that gptlib's GPT cannot compute
    (another activation, LayerNorm ε, MLP width or attention scale, cross-attention) raises a
    ValueError that names the setting.
    """
    model_type = getattr(config, "model_type", "gpt2")
    if model_type != "gpt2":
        raise ValueError(
            f"expected a GPT-2 config (model_type 'gpt2'), got model_type {model_type!r}; "
            "gptlib.pretrained loads GPT-2 models only"
        )
    activation = getattr(config, "activation_function", "gelu_new")
    n_embd, n_inner = config.n_embd, getattr(config, "n_inner", None)
    epsilon = getattr(config, "layer_norm_epsilon", 1e-5)
    checks = [  # (setting, its value, whether gptlib cannot compute it, why)
        (
            "activation_function",
            activation,
            activation not in GPT2_ACTIVATIONS,
            f"gptlib's MLP computes GELU, exact or tanh: {', '.join(GPT2_ACTIVATIONS)}",
        ),
        ("layer_norm_epsilon", epsilon, epsilon != 1e-5, "gptlib's LayerNorms use ε = 1e-5"),
        (
            "n_inner",
            n_inner,
            n_inner not in (None, 4 * n_embd),
            f"gptlib's MLP is 4 · n_embd = {4 * n_embd} wide",
        ),
        (
            "scale_attn_weights",
            False,
            not getattr(config, "scale_attn_weights", True),
            "gptlib's attention always divides the scores by √d_h",
        ),
        (
            "scale_attn_by_inverse_layer_idx",
            True,
            getattr(config, "scale_attn_by_inverse_layer_idx", False),
            "gptlib's attention scales every layer alike, by 1/√d_h",
        ),
        (
            "add_cross_attention",
            True,
            getattr(config, "add_cross_attention", False),
            "gptlib's GPT is decoder-only, without cross-attention layers",
        ),
    ]
    wrong = [f"{name}={value!r} ({why})" for name, value, refused, why in checks if refused]
    if wrong:
        raise ValueError(
            f"this GPT-2 config cannot be computed by gptlib's GPT: {'; '.join(wrong)}. Load a "
            "model with GPT-2's own settings (such as 'gpt2', 'gpt2-medium', 'gpt2-large', "
            "'gpt2-xl', 'distilgpt2'), or change these settings in the GPT2Config"
        )
    return GPTConfig(
        vocab_size=config.vocab_size,
        d_model=n_embd,
        n_heads=config.n_head,
        n_layers=config.n_layer,
        max_len=config.n_positions,
        tie_weights=bool(getattr(config, "tie_word_embeddings", True)),
        bias=True,
        dropout=0.0,
        gelu=GPT2_ACTIVATIONS[activation],
    )


def gpt2_state_dict(
    state_dict: Mapping[str, torch.Tensor], config: GPTConfig
) -> dict[str, torch.Tensor]:
    """GPT-2's weights under gptlib's names, for `GPT(config).load_state_dict(..., strict=True)`.

    `state_dict`: a `GPT2LMHeadModel`'s (keys transformer.wte.weight, transformer.h.{i}.…,
    lm_head.weight), or a `GPT2Model`'s or a hub checkpoint file's (the same without the
    "transformer." prefix, nor lm_head.weight when it is tied). `config`: from `gpt2_config`.
    Conv1D weights [in, out] are transposed to nn.Linear's [out, in]: c_attn [d, 3d] →
    attn.qkv.weight [3d, d], c_fc [d, 4d] → mlp.up.weight [4d, d], and so on; the attention
    mask buffers (attn.bias, attn.masked_bias) are dropped. With tie_weights the result holds
    lm_head.weight as the token embedding itself, as `GPT(config).state_dict()` does.

    A missing, unexpected or wrongly shaped weight raises a ValueError naming it. Tensors that
    need no transpose are not copied: the result shares them with `state_dict`.
    """
    prefix = "transformer." if "transformer.wte.weight" in state_dict else ""
    d, V = config.d_model, config.vocab_size
    wanted: dict[str, tuple[str, tuple[int, ...], bool]] = {  # ours → (theirs, shape, transpose)
        "tok_emb.weight": (f"{prefix}wte.weight", (V, d), False),
        "pos_emb.weight": (f"{prefix}wpe.weight", (config.max_len, d), False),
    }
    for i in range(config.n_layers):
        for ours, (theirs, units, transpose) in _BLOCK_NAMES.items():
            shape = tuple(n * d for n in units)
            wanted[f"blocks.{i}.{ours}"] = (f"{prefix}h.{i}.{theirs}", shape, transpose)
    wanted["ln_f.weight"] = (f"{prefix}ln_f.weight", (d,), False)
    wanted["ln_f.bias"] = (f"{prefix}ln_f.bias", (d,), False)
    head = "lm_head.weight"
    if head in state_dict or not config.tie_weights:
        wanted[head] = (head, (V, d), False)

    known = [theirs for theirs, _, _ in wanted.values()]  # in the model's order
    missing = [theirs for theirs in known if theirs not in state_dict]
    unexpected = [k for k in state_dict if k not in set(known) and not _BUFFER.fullmatch(k)]
    if missing or unexpected:
        parts = [f"missing {_names(missing)}"] * bool(missing)
        parts += [f"unexpected {_names(unexpected)}"] * bool(unexpected)
        raise ValueError(
            f"the state dict is not a GPT-2 of this config ({config.n_layers} layers, "
            f"d_model={d}, vocab_size={V}): {'; '.join(parts)}. Pass the state dict of a "
            "transformers GPT2LMHeadModel with the config given to gpt2_config"
        )
    converted = {}
    for ours, (theirs, shape, transpose) in wanted.items():
        tensor = state_dict[theirs].detach()
        if tuple(tensor.shape) != shape:
            layout = " (Conv1D's [in, out])" if transpose else ""
            raise ValueError(
                f"GPT-2's {theirs} has shape {list(tensor.shape)}, expected {list(shape)}"
                f"{layout} for {ours} of this config; the state dict and the config come from "
                "different models"
            )
        converted[ours] = tensor.t().contiguous() if transpose else tensor
    if config.tie_weights:
        if head in state_dict and not torch.equal(state_dict[head], converted["tok_emb.weight"]):
            raise ValueError(
                "the config ties the unembedding to the token embedding (tie_word_embeddings), "
                "but the state dict's lm_head.weight differs from wte.weight; build the config "
                "with tie_word_embeddings=False to keep them apart"
            )
        converted[head] = converted["tok_emb.weight"]
    return converted


def _names(keys: list[str], most: int = 6) -> str:
    shown = ", ".join(keys[:most])
    return shown + (f" and {len(keys) - most} more" if len(keys) > most else "")


def load_gpt2(model_or_name: Any = "gpt2") -> GPT:
    """A gptlib GPT, in eval mode, that computes what GPT-2 computes (notebook 08).

    `model_or_name`: a transformers `GPT2LMHeadModel` (or `GPT2Model`), or a name that its
    `from_pretrained` takes: "gpt2" (124M parameters), "gpt2-medium", "gpt2-large", "gpt2-xl",
    "distilgpt2", a hub id, or a folder written by `save_pretrained`. A name needs transformers
    (`pip install "gptlib[gpt2]"`, else ImportError) and, the first time, a network connection
    (else OSError, which says so); later loads read the local cache. The model is float32 on
    the CPU; move it with `.to(device)`. GPT-2's tokenizer is transformers' `GPT2TokenizerFast`.
    """
    hf_model = _from_pretrained(model_or_name) if isinstance(model_or_name, str) else model_or_name
    if not (hasattr(hf_model, "config") and hasattr(hf_model, "state_dict")):
        raise ValueError(
            "load_gpt2 expects a transformers GPT2LMHeadModel or a model name such as 'gpt2', "
            f"got {type(hf_model).__name__}"
        )
    config = gpt2_config(hf_model.config)
    model = GPT(config)
    model.load_state_dict(gpt2_state_dict(hf_model.state_dict(), config), strict=True)
    return model.eval()


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether huggingface.co answers within `timeout` seconds (a download would work).

    Offline, `from_pretrained` retries for about 30 s before it fails; a notebook asks this
    first and takes its offline path at once.
    """
    try:
        with socket.create_connection(("huggingface.co", 443), timeout=timeout):
            return True
    except OSError:
        return False


def _from_pretrained(name: str) -> Any:
    """transformers' GPT2LMHeadModel.from_pretrained(name), with errors that say what to do."""
    try:
        import transformers
    except ImportError as exc:
        raise ImportError(
            f"loading GPT-2 by name needs Hugging Face transformers, which is not installed: "
            f"{INSTALL_HINT} (or pip install transformers)"
        ) from exc
    try:
        return transformers.GPT2LMHeadModel.from_pretrained(name)
    except OSError as exc:  # no network and no cached copy, or no such model
        reason = " ".join(str(exc).split())[:300]
        raise OSError(
            f"could not load GPT-2 weights {name!r} with transformers: {reason}. A hub name "
            "downloads the weights the first time (about 500 MB for 'gpt2'), which needs a "
            "network connection; later loads read the local cache. Without a network, pass a "
            "folder written by save_pretrained, or a GPT2LMHeadModel you built yourself"
        ) from exc


@contextmanager
def tanh_gelu() -> Iterator[None]:
    """Inside this context `F.gelu` (and so `nn.GELU`) computes GELU's tanh approximation.

        with tanh_gelu():
            logits, _ = my_gpt(idx)    # a notebook-07 model holding GPT-2's weights

    Why: GPT-2 was trained with 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), not the exact
    x·Φ(x) that notebook 07's MLP calls with `F.gelu(x)`. The two differ by at most 4.7e-4 per
    unit (near x = ±2.7), but every layer adds its share, so GPT-2's weights in that MLP compute
    a slightly different function from GPT-2's: close logits, not the same ones. The lasting fix
    is to write `F.gelu(x, approximate="tanh")` in the MLP; this context gives the same without
    editing the model. It replaces `torch.nn.functional.gelu` for the whole
    process (every thread, every model, gptlib's own MLP included, whatever `approximate` it
    asks for) and puts the original back on exit, also when an exception leaves the block. It
    does not reach code that imported the function by name (`from torch.nn.functional import
    gelu`) before the context began.
    """
    exact = F.gelu

    def gelu(input: torch.Tensor, approximate: str = "none") -> torch.Tensor:
        return exact(input, approximate="tanh")

    F.gelu = gelu
    try:
        yield
    finally:
        F.gelu = exact
