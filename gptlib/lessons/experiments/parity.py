"""The chapter's GPT and gptlib's GPT are one machine: a name mapping, weight copies (notebook 07).

Notebook 07 writes the chapter's model in its own cells. Its parameters carry gptlib's names,
with two exceptions that `CHAPTER_TO_GPTLIB` lists:

| the chapter's model                | gptlib.GPT                    | shape            |
|------------------------------------|-------------------------------|------------------|
| tok_emb.weight                     | tok_emb.weight                | [V, d]           |
| pos_emb.weight (an nn.Embedding)   | pos_emb.table.weight          | [max_len, d]     |
| blocks.{i}.ln1.weight / .bias      | the same                      | [d]              |
| blocks.{i}.attn.qkv.weight / .bias | the same                      | [3d, d] / [3d]   |
| blocks.{i}.attn.proj.weight / .bias| the same                      | [d, d] / [d]     |
| blocks.{i}.ln2.weight / .bias      | the same                      | [d]              |
| blocks.{i}.mlp.up.weight / .bias   | the same                      | [4d, d] / [4d]   |
| blocks.{i}.mlp.down.weight / .bias | the same                      | [d, 4d] / [d]    |
| ln_f.weight / .bias                | the same                      | [d]              |
| lm_head.weight (or head.weight)    | lm_head.weight                | [V, d]           |

(`head` is what the chapter's own code calls the unembedding; it is accepted when the model
does not also have an `lm_head`.) Buffers, such as a stored causal mask, are not weights and are
left alone. Both copies check every name, shape and shared matrix first and raise a ValueError
naming what does not fit, so a model either receives all of the weights or none.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import torch
from torch import nn

# Names of the chapter's model that differ from gptlib's; every other name is the same.
CHAPTER_TO_GPTLIB = {
    "pos_emb.weight": "pos_emb.table.weight",  # gptlib's PositionalEmbedding offers three kinds
    "head.weight": "lm_head.weight",  # the chapter's code names the unembedding `head`
}
_GPTLIB_TO_CHAPTER = {"pos_emb.table.weight": "pos_emb.weight"}  # the names error messages use


def gptlib_name(chapter_name: str) -> str:
    """The gptlib parameter name for a parameter name of the chapter's model."""
    return CHAPTER_TO_GPTLIB.get(chapter_name, chapter_name)


def copy_gptlib_weights(source: nn.Module, target: nn.Module) -> None:
    """Copy the weights of `source`, a `gptlib.GPT` (or one of its modules, such as a Block),
    into `target`, a model written like the chapter's; ValueError if any name or shape differs."""
    for chapter_param, gptlib_param in _matched(chapter=target, gptlib=source):
        with torch.no_grad():
            chapter_param.copy_(gptlib_param)


def copy_weights_to_gptlib(source: nn.Module, target: nn.Module) -> None:
    """The other way: copy the weights of the chapter-style `source` into `target`, a
    `gptlib.GPT` (or one of its modules); ValueError if any name or shape differs."""
    for chapter_param, gptlib_param in _matched(chapter=source, gptlib=target):
        with torch.no_grad():
            gptlib_param.copy_(chapter_param)


def expected_names(gptlib_model: nn.Module) -> list[str]:
    """The parameter names (and shapes) a chapter-style copy of `gptlib_model` needs, with the
    blocks folded into `blocks.{i}`: what an error message lists."""
    seen: dict[str, str] = {}
    for name, p in gptlib_model.named_parameters(remove_duplicate=False):
        folded = re.sub(r"^blocks\.\d+\.", "blocks.{i}.", _chapter_name(name))
        seen.setdefault(folded, f"{folded} {list(p.shape)}")
    return list(seen.values())


def _matched(chapter: nn.Module, gptlib: nn.Module) -> list[tuple[nn.Parameter, nn.Parameter]]:
    """Pairs (chapter parameter, gptlib parameter), after checking that the two fit exactly."""
    chapter_params = dict(chapter.named_parameters(remove_duplicate=False))
    gptlib_params = dict(gptlib.named_parameters(remove_duplicate=False))
    to_gptlib = _translate(chapter_params, gptlib_params)
    problems = []
    missing = sorted(c for c, g in to_gptlib.items() if g not in gptlib_params)
    if missing:
        problems.append(f"gptlib has no weight for these parameters of yours: {missing}")
    unfilled = sorted(set(gptlib_params) - set(to_gptlib.values()))
    if unfilled:
        names = [_chapter_name(g) for g in unfilled]
        problems.append(f"your model has no parameter for these weights of gptlib's: {names}")
    for c, g in sorted(to_gptlib.items()):
        if g in gptlib_params and chapter_params[c].shape != gptlib_params[g].shape:
            problems.append(
                f"{c} has shape {list(chapter_params[c].shape)} in your model and "
                f"{list(gptlib_params[g].shape)} in gptlib's"
            )
    if problems:
        raise ValueError(
            "the weights do not fit: "
            + "; ".join(problems)
            + ". Name and shape the parameters as gptlib does (CHAPTER_TO_GPTLIB in "
            "gptlib/lessons/experiments/parity.py lists the two names that may differ): "
            + ", ".join(expected_names(gptlib))
        )
    _check_shared(chapter_params, gptlib_params, to_gptlib)
    return [(chapter_params[c], gptlib_params[g]) for c, g in to_gptlib.items()]


def _translate(
    chapter_params: dict[str, nn.Parameter], gptlib_params: dict[str, nn.Parameter]
) -> dict[str, str]:
    """{chapter name: gptlib name}; ValueError when two of the chapter's names claim one weight."""
    to_gptlib: dict[str, str] = {}
    for name in chapter_params:
        target = name if name in gptlib_params else gptlib_name(name)
        rival = next((c for c, g in to_gptlib.items() if g == target), None)
        if rival is not None:
            raise ValueError(
                f"your model has both {rival!r} and {name!r}, which both stand for gptlib's "
                f"{target!r}; keep one of them (gptlib's name is {target!r})"
            )
        to_gptlib[name] = target
    return to_gptlib


def _chapter_name(name: str) -> str:
    return _GPTLIB_TO_CHAPTER.get(name, name)


def _shared_groups(params: dict[str, nn.Parameter], names: Iterable[str]) -> set[frozenset[str]]:
    """Groups of names that hold one and the same parameter (a tied matrix), among `names`."""
    by_id: dict[int, set[str]] = {}
    for name in names:
        by_id.setdefault(id(params[name]), set()).add(name)
    return {frozenset(group) for group in by_id.values() if len(group) > 1}


class SharedWeightsMismatch(ValueError):
    """One model shares a matrix between two names (tied weights) and the other does not."""


def _check_shared(
    chapter_params: dict[str, nn.Parameter],
    gptlib_params: dict[str, nn.Parameter],
    to_gptlib: dict[str, str],
) -> None:
    ours = {
        frozenset(to_gptlib[c] for c in group)
        for group in _shared_groups(chapter_params, to_gptlib)
    }
    theirs = _shared_groups(gptlib_params, to_gptlib.values())
    if ours == theirs:
        return
    only_gptlib = [sorted(map(_chapter_name, g)) for g in theirs - ours]
    only_yours = [sorted(map(_chapter_name, g)) for g in ours - theirs]
    detail = []
    if only_gptlib:
        detail.append(
            f"gptlib's model uses one matrix for {only_gptlib} where yours has separate ones"
        )
    if only_yours:
        detail.append(
            f"your model uses one matrix for {only_yours} where gptlib's has separate ones"
        )
    raise SharedWeightsMismatch(
        "; ".join(detail) + ": tie (or untie) the same weights in both models, for instance "
        "with the same tie_weights setting"
    )
