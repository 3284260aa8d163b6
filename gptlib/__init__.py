"""gptlib: the small, tested library behind the Transformer notebooks.

The model wing: `model`, the GPT in one file in the order the notebooks build it (attention
02–04, MLP and block 05–06, the GPT with generation 07–08), on `validation`, the checks where
input comes in (our ValueErrors); then `data`, `train` and `checkpoint` (08) and the command
line (`python -m gptlib`); `pretrained` loads GPT-2's weights from Hugging Face transformers
(08, the optional extra `gptlib[gpt2]`); `hooks` looks inside a model, `device` picks where it
runs. The lesson wing, `gptlib.lessons`, holds the notebooks' experiments (the lesson variants
of the model among them), figures, widgets, exercise checks and answers; it imports the model,
never the other way round.
"""

from gptlib.device import describe_device, pick_device, seed_everything
from gptlib.hooks import capture_inputs, capture_outputs, evaluating
from gptlib.model import (
    GPT,
    MLP,
    Block,
    CausalSelfAttention,
    GPTConfig,
    KVCache,
    attention_with_weights,
    causal_mask,
    next_token_probs,
    sample_next,
)

__version__ = "0.1.0"

__all__ = [
    "GPT",
    "MLP",
    "Block",
    "CausalSelfAttention",
    "GPTConfig",
    "KVCache",
    "attention_with_weights",
    "capture_inputs",
    "capture_outputs",
    "causal_mask",
    "describe_device",
    "evaluating",
    "next_token_probs",
    "pick_device",
    "sample_next",
    "seed_everything",
]
