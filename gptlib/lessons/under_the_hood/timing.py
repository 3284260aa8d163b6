"""How long one move of a control takes, for every explorer of the course (notebook 10).

A redraw is what a slider step costs in a notebook: the explorer's pure function (`compute`),
the in-place figure update (`draw`) and the PNG the Image widget shows. Dragging feels live
while it stays well under half a second. `time_redraws` measures any explorer over a list of
settings; `course_explorers` builds each explorer of notebooks 00–09 with the settings to
visit. `benchmarks/widget_redraw.py` and docs/under_the_hood.ipynb both use these two.

The explorers that show a model (notebook 04 and the sampling and attention explorers of
notebook 08) get small untrained models here, and notebook 03's gets random change matrices: a
redraw costs the same whatever the weights or the numbers.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import torch

from gptlib.data.corpora import tiny_shakespeare
from gptlib.data.grammar import TOY_GRAMMAR
from gptlib.data.tokenizer import CharTokenizer
from gptlib.lessons.engine.explorer import Explorer, figure_png
from gptlib.lessons.nb00.widgets import ModelSizeExplorer
from gptlib.lessons.nb01.widgets import PositionExplorer
from gptlib.lessons.nb02.experiments import saturation_sweep
from gptlib.lessons.nb02.widgets import SaturationExplorer
from gptlib.lessons.nb03.widgets import CausalMaskExplorer
from gptlib.lessons.nb04.widgets import HeadsExplorer
from gptlib.lessons.nb06.widgets import GradientNormExplorer
from gptlib.lessons.nb08.widgets.sampling import SamplingExplorer
from gptlib.lessons.nb08.widgets.trained_attention import AttentionExplorer
from gptlib.lessons.nb09.widgets import CostCalculator
from gptlib.lessons.shared.references import loss_gradient_norms
from gptlib.model import GPT, GPTConfig
from gptlib.validation import check_positive_int

STAGES = ("compute", "update", "png")
LIVE_S = 0.5  # a redraw slower than this no longer feels like dragging


def time_redraws(
    explorer: Explorer, settings: Sequence[dict[str, Any]], repeats: int
) -> dict[str, list[float]]:
    """Per setting (control attribute name → value), the median seconds of each stage of a
    redraw (`compute`, `draw`, the PNG), of the whole redraw ("total"), and its CPU time
    ("cpu"): {"compute": [one per setting], ..., "total": [...], "cpu": [...]}."""
    check_positive_int("repeats", repeats)
    if not settings:
        raise ValueError("give at least one setting, e.g. [{'d_k': 64}]")
    medians: dict[str, list[float]] = {name: [] for name in (*STAGES, "total", "cpu")}
    for setting in settings:
        with explorer.holding(redraw=False):
            for name, value in setting.items():
                getattr(explorer, name).value = value
        runs = []
        for _ in range(repeats):
            cpu0, t0 = time.process_time(), time.perf_counter()
            result = explorer.compute()
            t1 = time.perf_counter()
            explorer.draw(result)
            t2 = time.perf_counter()
            figure_png(explorer.figure, explorer.dpi)
            t3, cpu3 = time.perf_counter(), time.process_time()
            runs.append((t1 - t0, t2 - t1, t3 - t2, t3 - t0, cpu3 - cpu0))
        for name, values in zip(medians, zip(*runs, strict=True), strict=True):
            medians[name].append(statistics.median(values))
    return medians


@dataclass(frozen=True)
class RedrawTiming:
    """One explorer's redraw times over a sweep: per setting, seconds by stage (`time_redraws`)."""

    name: str
    medians: dict[str, list[float]]

    @property
    def median_s(self) -> float:
        """The median over settings of a whole redraw's wall time."""
        return statistics.median(self.medians["total"])

    @property
    def worst_s(self) -> float:
        """The slowest setting's wall time."""
        return max(self.medians["total"])

    @property
    def cpu_s(self) -> float:
        """The median CPU time of this process: close to the wall time with a core to itself."""
        return statistics.median(self.medians["cpu"])

    def shares(self) -> dict[str, float]:
        """Fraction of the summed wall time spent in each of `STAGES`."""
        sums = {stage: sum(self.medians[stage]) for stage in STAGES}
        total = sum(sums.values())
        return {stage: s / total if total else 0.0 for stage, s in sums.items()}

    def lines(self) -> list[str]:
        """One `name = value` line: median and worst wall time, CPU time, stage shares."""
        shares = ", ".join(f"{stage} {share:z.0%}" for stage, share in self.shares().items())
        return [
            f"{self.name} = {self.median_s * 1e3:z.0f} ms (worst setting "
            f"{self.worst_s * 1e3:z.0f} ms, CPU {self.cpu_s * 1e3:z.0f} ms; {shares})"
        ]


def time_explorer(
    name: str, explorer: Explorer, settings: Sequence[dict[str, Any]], repeats: int = 1
) -> RedrawTiming:
    """`time_redraws` of one explorer, as a `RedrawTiming` named `name`."""
    return RedrawTiming(name, time_redraws(explorer, settings, repeats))


@dataclass(frozen=True)
class ExplorerCase:
    """One explorer of the course: a name with its notebook, how to build it, what to sweep."""

    name: str
    build: Callable[[], Explorer]
    settings: tuple[dict[str, Any], ...]


def _toy_sentence(text: str) -> torch.Tensor:
    return TOY_GRAMMAR.tokenizer().encode(text)[None]  # [1, T]


DK_WIDTHS = tuple(2**p for p in range(11))  # notebook 02's sweep: 1, 2, 4, ..., 1024


def _saturation_explorer() -> SaturationExplorer:
    # A redraw looks the sweep's numbers up and never measures (notebook 02 measures with the
    # student's function), so the numbers here only fill the table: zeros do.
    return SaturationExplorer(saturation_sweep(DK_WIDTHS, lambda q, k, g, scaled: (0.0,) * 4))


def _causal_mask_explorer() -> CausalMaskExplorer:
    T = len("the red fox sees the cat.")
    moved = torch.rand(T, T, generator=torch.Generator().manual_seed(0))
    return CausalMaskExplorer({True: moved.triu(), False: moved}, "the red fox sees the cat.")


def _heads_explorer() -> HeadsExplorer:
    text = "the cat sees the dog."
    V = len(TOY_GRAMMAR.alphabet())
    models = {
        h: GPT(GPTConfig(V, d_model=32, n_heads=h, n_layers=1, max_len=32)).eval()
        for h in (1, 2, 4, 8)
    }
    return HeadsExplorer(models, _toy_sentence(text), text)


@lru_cache(maxsize=1)
def _shakespeare_tokenizer() -> CharTokenizer:
    return CharTokenizer.from_text(tiny_shakespeare())


def _shakespeare_model() -> tuple[GPT, CharTokenizer]:
    tokenizer = _shakespeare_tokenizer()
    return GPT(GPTConfig(tokenizer.vocab_size, max_len=64)).eval(), tokenizer


def _sampling_explorer() -> SamplingExplorer:
    model, tokenizer = _shakespeare_model()
    return SamplingExplorer(model, tokenizer, "ROMEO:\nWhat light is this that breaks upon my e")


def _attention_explorer() -> AttentionExplorer:
    model, tokenizer = _shakespeare_model()
    return AttentionExplorer(model, tokenizer, "ROMEO:\nBut soft, what light through yonder")


def course_explorers() -> list[ExplorerCase]:
    """Every explorer of notebooks 00–09, in course order, each with settings at the ends of
    its controls' ranges (the most and the least work a redraw can have).

    Building one is cheap except notebook 06's, which reads its toy corpus, and the two of
    notebook 08, which read Tiny Shakespeare for the tokenizer (about a second each).
    """
    return [
        ExplorerCase(
            "model size (00)",
            ModelSizeExplorer,
            ({"vocab_size": 2}, {"vocab_size": 512}),
        ),
        ExplorerCase(
            "positions (01)",
            PositionExplorer,
            ({"length": 8, "d_model": 4}, {"length": 512, "d_model": 256}),
        ),
        ExplorerCase(
            "d_k and scaling (02)",
            _saturation_explorer,
            tuple({"d_k": d_k, "scaled": s} for s in (False, True) for d_k in DK_WIDTHS[::-10]),
        ),
        ExplorerCase(
            "causal mask (03)",
            _causal_mask_explorer,
            ({"position": 0, "causal": True}, {"position": 24, "causal": False}),
        ),
        ExplorerCase("heads (04)", _heads_explorer, ({"n_heads": 1}, {"n_heads": 8})),
        ExplorerCase(
            "gradient norms (06)",
            lambda: GradientNormExplorer(loss_gradient_norms, depth=2),
            ({"depth": 4, "choice": "both"}, {"depth": 24, "choice": "both"}),
        ),
        ExplorerCase(
            "sampling (08)",
            _sampling_explorer,
            ({"temperature": 0.5, "top_k": 0}, {"temperature": 1.5, "top_k": 5}),
        ),
        ExplorerCase(
            "attention maps (08)",
            _attention_explorer,
            ({"layer": 0, "head": 0}, {"layer": 3, "head": 3}),
        ),
        ExplorerCase(
            "cost calculator (09)",
            CostCalculator,
            ({"preset": "GPT-3 175B", "mfu": 0.2}, {"preset": "Llama 2 7B", "mfu": 0.6}),
        ),
    ]
