"""Notebook 07's block diagram: every module of the model is a box, wired in the model's order,
with both residual connections going around their sublayer."""

import pytest
from matplotlib.figure import Figure

from gptlib.lessons.nb07.plots import draw_gpt_diagram

MODULES = ["tok_emb", "pos_emb", "ln1", "attn", "ln2", "mlp", "ln_f", "lm_head"]


def test_every_module_is_a_box_named_as_in_the_model():
    ax = Figure().subplots()
    diagram = draw_gpt_diagram(ax, n_layers=4)
    assert set(MODULES) < set(diagram.boxes)
    for name in MODULES:
        assert diagram.boxes[name].startswith(name)
    texts = [t.get_text() for t in ax.texts]
    assert any("× L = 4" in t and "blocks[3]" in t for t in texts)
    assert min(t.get_fontsize() for t in ax.texts) >= 8
    assert not ax.axison


def test_the_arrows_follow_the_forward_pass():
    arrows = draw_gpt_diagram(Figure().subplots(), n_layers=2).arrows
    path = ["add embeddings", "ln1", "attn", "add attention", "ln2", "mlp", "add mlp", "ln_f",
            "lm_head", "logits"]  # fmt: skip
    for step in zip(path[:-1], path[1:], strict=True):
        assert step in arrows
    assert {("tok_emb", "add embeddings"), ("pos_emb", "add embeddings")} <= set(arrows)
    assert ("skip", "add attention") in arrows and ("skip", "add mlp") in arrows


def test_a_model_needs_a_block():
    with pytest.raises(ValueError, match="n_layers must be at least 1"):
        draw_gpt_diagram(Figure().subplots(), n_layers=0)
