"""One model, one state dict: gptlib's GPT, the model the student writes in notebook 07 and the
chapter's model as the chapter prints it load each other's weights with
`load_state_dict(strict=True)`, and then compute the same logits and loss."""

import json
import math
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from gptlib import GPT, GPTConfig
from gptlib.lessons.engine.checks import REGISTRY

NOTEBOOK_07 = Path(__file__).resolve().parent.parent / "notebooks" / "07_build_the_gpt.ipynb"


# --- The chapter's model, as the chapter prints it, with one rename: `head` → `lm_head` -------
class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        assert d_model % n_heads == 0
        self.h, self.dh = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)  # W_Q, W_K, W_V fused
        self.proj = nn.Linear(d_model, d_model)  # W_O

    def forward(self, x):  # x: [B, T, d]
        B, T, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)  # each [B, T, d]
        # split d into h heads of size dh: [B, T, d] -> [B, h, T, dh]
        q, k, v = (t.view(B, T, self.h, self.dh).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.dh)  # [B, h, T, T]
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), 1)
        scores = scores.masked_fill(mask, float("-inf"))  # no peeking ahead
        out = F.softmax(scores, dim=-1) @ v  # [B, h, T, dh]
        out = out.transpose(1, 2).reshape(B, T, d)  # concat heads
        return self.proj(out)


class MLP(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.up = nn.Linear(d_model, 4 * d_model)
        self.down = nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


class Block(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn, self.mlp = CausalSelfAttention(d_model, n_heads), MLP(d_model)

    def forward(self, x):  # Pre-LN residual block
        x = x + self.attn(self.ln1(x))  # tokens exchange information
        x = x + self.mlp(self.ln2(x))  # each token processed independently
        return x


class ChapterGPT(nn.Module):
    def __init__(self, vocab_size, d_model=128, n_heads=4, n_layers=4, max_len=256):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(max_len, d_model)  # learned absolute positions
        self.blocks = nn.ModuleList(Block(d_model, n_heads) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)  # unembedding

    def forward(self, idx, targets=None):  # idx: [B, T] token ids
        B, T = idx.shape
        pos = torch.arange(T, device=idx.device)
        x = self.tok_emb(idx) + self.pos_emb(pos)  # [B, T, d]
        for blk in self.blocks:
            x = blk(x)
        logits = self.lm_head(self.ln_f(x))  # [B, T, V]
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


# --- The student's model: the solution cells of notebook 07, and the check's reference -------
def notebook_07_gpt() -> type:
    """The GPT class notebook 07's solution cells define (with their attention, MLP, Block)."""
    cells = json.loads(NOTEBOOK_07.read_text(encoding="utf-8"))["cells"]
    namespace = {"math": math, "torch": torch, "nn": nn, "F": F}
    for cell in cells:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and source.startswith("class "):
            exec(source, namespace)  # noqa: S102 - the repository's own notebook
    return namespace["GPT"]


STUDENT_MODELS = {
    "notebook 07's solution": notebook_07_gpt,
    "the gpt check's reference": lambda: REGISTRY["gpt"].reference,
}


def randomise(model: nn.Module, seed: int) -> nn.Module:
    """Weights far from any initialisation, so that a weight in the wrong place shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(0.3 * torch.randn(p.shape, generator=g))
    return model.eval()


def assert_same_function(a: nn.Module, b: nn.Module, vocab_size: int) -> None:
    g = torch.Generator().manual_seed(7)
    idx, targets = torch.randint(vocab_size, (2, 2, 9), generator=g)
    with torch.no_grad():
        (logits_a, loss_a), (logits_b, loss_b) = a(idx, targets), b(idx, targets)
    torch.testing.assert_close(logits_a, logits_b, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(loss_a, loss_b, atol=1e-5, rtol=1e-5)


def test_the_chapters_model_and_gptlib_load_each_other_strictly():
    chapter, library = ChapterGPT(65), GPT(GPTConfig(vocab_size=65))
    assert chapter.state_dict().keys() == library.state_dict().keys()  # the same names
    chapter.load_state_dict(randomise(library, 0).state_dict(), strict=True)
    assert_same_function(chapter, library, 65)
    library.load_state_dict(randomise(chapter, 1).state_dict(), strict=True)
    assert_same_function(chapter, library, 65)


@pytest.mark.parametrize("tie", [False, True])
@pytest.mark.parametrize("student", STUDENT_MODELS.values(), ids=STUDENT_MODELS)
def test_the_students_model_and_gptlib_load_each_other_strictly(student, tie):
    sizes = dict(vocab_size=11, d_model=16, n_heads=4, n_layers=2, max_len=12, tie_weights=tie)
    ours, library = student()(**sizes), GPT(GPTConfig(**sizes))
    ours.load_state_dict(randomise(library, 2).state_dict(), strict=True)
    assert_same_function(ours, library, 11)
    library.load_state_dict(randomise(ours, 3).state_dict(), strict=True)
    assert_same_function(ours, library, 11)
    assert (library.lm_head.weight is library.tok_emb.weight) == tie


def test_a_misfit_is_refused_by_name():
    """strict=True names what does not fit, so no weight is silently left out."""
    small, library = ChapterGPT(65, n_layers=3), GPT(GPTConfig(vocab_size=65))
    with pytest.raises(RuntimeError, match=r"Unexpected key\(s\) in state_dict: \"blocks\.3\."):
        small.load_state_dict(library.state_dict(), strict=True)
