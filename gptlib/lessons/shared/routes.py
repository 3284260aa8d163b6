"""The library calls that would answer an exercise asked in more than one lesson (see
`gptlib.lessons.engine.checks.delegation`): the multi-head layer (04, written again in 07) and
the Pre-LN block (06's `block_forward`, 07's `Block`)."""

from __future__ import annotations

from gptlib.lessons.engine.checks.delegation import Route

_LAYER_WHY = "it computes the multi-head layer this exercise asks you to write."
MULTI_HEAD_LAYER = (
    Route(
        "gptlib.lessons.nb04.experiments.multihead:multi_head_by_loop",
        "the course's `multi_head_by_loop`",
        _LAYER_WHY,
    ),
    Route(
        "gptlib.lessons.nb04.experiments.multihead:multi_head_steps",
        "the course's `multi_head_steps`",
        _LAYER_WHY,
    ),
    Route(
        "gptlib.lessons.nb04.experiments.multihead:to_torch_multihead",
        "the course's `to_torch_multihead`",
        _LAYER_WHY,
    ),
    Route("torch.nn.modules.activation:MultiheadAttention", "`nn.MultiheadAttention`", _LAYER_WHY),
)

_BLOCK_WHY = "it computes the block this exercise asks you to write."
BLOCK = (
    Route("gptlib.model:Block", "gptlib's `Block`", _BLOCK_WHY),
    Route(
        "gptlib.lessons.shared.experiments.variants:RewiredBlock",
        "the course's `RewiredBlock`",
        _BLOCK_WHY,
    ),
)
