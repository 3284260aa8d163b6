"""gptlib: the small, tested library behind the Transformer notebooks.

Modules follow the notebooks: attention (02–04), embeddings (01), blocks (05–06),
model and sampling (07), device helpers (00).
"""

from gptlib.attention import CausalSelfAttention, KVCache, causal_mask, scaled_dot_product_attention
from gptlib.blocks import MLP, Block, LayerNorm, layer_norm
from gptlib.device import pick_device, seed_everything
from gptlib.embeddings import PositionalEmbedding, sinusoidal_positions
from gptlib.model import GPT, GPTConfig
from gptlib.sampling import next_token_probs, sample_next

__version__ = "0.1.0"

__all__ = [
    "GPT",
    "MLP",
    "Block",
    "CausalSelfAttention",
    "GPTConfig",
    "KVCache",
    "LayerNorm",
    "PositionalEmbedding",
    "causal_mask",
    "layer_norm",
    "next_token_probs",
    "pick_device",
    "sample_next",
    "scaled_dot_product_attention",
    "seed_everything",
    "sinusoidal_positions",
]
