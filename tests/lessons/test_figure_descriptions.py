"""Every figure the lessons draw says what it shows (issue 44): each plotting function and view
of a `plots` module of gptlib.lessons sets a description (gptlib.lessons.engine.figures), which
a notebook's output carries as the image's alt text and the course site puts on its `<img>`.

The drawing functions are found by reading the plots modules (a function that takes or returns
a Figure or an Axes, a class whose `__init__` takes a Figure), so a new one without a case here
fails `test_every_drawing_function_has_a_case`. Each case draws on small inputs and names words
its description must hold: the inputs it was given, and exact results (a count, a zero).
"""

from __future__ import annotations

import importlib
import inspect
import math
import pkgutil
from collections.abc import Callable

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import gptlib.lessons  # noqa: E402
from gptlib import causal_mask  # noqa: E402
from gptlib.lessons.engine.checks import REGISTRY  # noqa: E402
from gptlib.lessons.engine.figures import description, looks_like_a_file  # noqa: E402
from gptlib.lessons.nb01.experiments import position_summary  # noqa: E402
from gptlib.lessons.nb02.experiments import (  # noqa: E402
    RetrievalTask,
    saturation,
    saturation_sweep,
    train_retrieval,
)
from gptlib.lessons.nb03.experiments import Perturbation  # noqa: E402
from gptlib.lessons.nb05.experiments import GradientFlow, StreamWrites  # noqa: E402
from gptlib.lessons.nb06.experiments import ARMS, LearningRateGrid  # noqa: E402
from gptlib.lessons.nb08.experiments.ablation import ROWS, Ablation  # noqa: E402
from gptlib.lessons.nb08.experiments.long_runs import Curves  # noqa: E402
from gptlib.lessons.nb08.experiments.two_lookups import HeadsRun  # noqa: E402
from gptlib.lessons.nb09.experiments.costs import (  # noqa: E402
    PRESETS,
    attention_share,
    cost_report,
)
from gptlib.lessons.shared.experiments.mask_ablation import AblationRun  # noqa: E402
from gptlib.lessons.shared.references import sinusoidal_positions  # noqa: E402

# Drawing helpers that draw part of a panel for a figure that describes itself.
PARTS = {
    # one profile line on a panel of plot_init_gradients / GradientProfileView
    "gptlib.lessons.nb06.plots.draw_gradient_profile",
}


def _draws(obj: object) -> bool:
    """Whether a public function or class of a plots module draws a figure (by its signature:
    annotations are strings here, `from __future__ import annotations`)."""
    target = obj.__init__ if inspect.isclass(obj) else obj
    signature = inspect.signature(target)
    annotations = [str(p.annotation) for p in signature.parameters.values()]
    annotations.append(str(signature.return_annotation))
    return any("Figure" in a or "Axes" in a for a in annotations)


def drawing_functions() -> set[str]:
    """The qualified names of every function and view class of gptlib.lessons' plots modules
    that draws a figure."""
    found = set()
    for module_info in pkgutil.walk_packages(gptlib.lessons.__path__, "gptlib.lessons."):
        if ".plots" not in module_info.name:
            continue
        module = importlib.import_module(module_info.name)
        for name, obj in vars(module).items():
            defined_here = getattr(obj, "__module__", None) == module.__name__
            if name.startswith("_") or not defined_here or not callable(obj):
                continue
            if _draws(obj):
                found.add(f"{module.__name__}.{name}")
    return found - PARTS


# --- one case per drawing function: (draw it, returning its figure; words it must say) ---


def _model_size() -> Figure:
    from gptlib.lessons.nb00.plots import ModelSizeView

    view = ModelSizeView(Figure(), ["a", "b"])
    view.update({"a": 1_000, "b": 250_000}, vocab_size=9)
    return view.ax.figure


def _position_tables() -> Figure:
    from gptlib.lessons.nb01.plots import plot_position_tables

    tables = {"sinusoidal": sinusoidal_positions(16, 8), "learned": torch.randn(16, 8)}
    return plot_position_tables(tables, Figure())


def _position_view(T: int, d: int) -> Callable[[], Figure]:
    def draw() -> Figure:
        from gptlib.lessons.nb01.plots import PositionView

        view = PositionView(Figure())
        view.update(position_summary(T, d, 10000.0))
        return view.fig

    return draw


MEASURE = REGISTRY["measure-softmax"].reference


def _saturation_view() -> Figure:
    from gptlib.lessons.nb02.plots import SaturationView

    curves = saturation_sweep([1, 16], MEASURE, n_queries=8, n_keys=16)
    view = SaturationView(Figure(), curves)
    view.update(saturation(256, False, MEASURE))
    return view.fig


def _saturation_curves() -> Figure:
    from gptlib.lessons.nb02.plots import plot_saturation_curves

    curves = saturation_sweep([1, 16, 256], MEASURE, n_queries=8, n_keys=16)
    return plot_saturation_curves(curves, Figure())


def _scaling_runs() -> Figure:
    from gptlib.lessons.nb02.plots import plot_scaling_runs

    task = RetrievalTask(n_pairs=4, n_keys=8, n_values=4)
    runs = {
        d_k: {
            s: train_retrieval(d_k, s, 25, batch_size=4, d_model=4, task=task)
            for s in (False, True)
        }
        for d_k in (2, 8)
    }
    return plot_scaling_runs(runs, Figure())


def _masked_attention() -> Figure:
    from gptlib.lessons.nb03.plots import plot_masked_attention

    masked = torch.randn(3, 3).masked_fill(~causal_mask(3), float("-inf"))
    return plot_masked_attention(masked, torch.softmax(masked, dim=-1), "ab ")


def _output_change_view() -> Figure:
    from gptlib.lessons.nb03.plots import OutputChangeView

    view = OutputChangeView(Figure(), "abcdef")
    change = torch.tensor([0.0, 0.0, 0.5, 1e-3, 0.2, 0.1])
    view.update(Perturbation(True, 2, change, [2, 3, 4, 5], [0, 1]))
    return view.ax.figure


def _output_changes() -> Figure:
    from gptlib.lessons.nb03.plots import plot_output_changes

    causal = torch.tensor([[1.0, 1.0, 1.0], [0.0, 1.0, 1.0], [0.0, 0.0, 1.0]])
    return plot_output_changes({True: causal, False: torch.ones(3, 3)}, "abc")


def _mask_ablation() -> Figure:
    from gptlib.lessons.nb03.plots import plot_mask_ablation

    def run(causal: bool, loss: float) -> AblationRun:
        return AblationRun(causal, None, [3.0, loss], loss, 2 * loss, [loss, loss], "", 0.5)

    return plot_mask_ablation(run(True, 0.5), run(False, 0.05), floor=0.3)


def _head_slots() -> Figure:
    from gptlib.lessons.nb04.plots import plot_head_slots

    right = torch.arange(4).repeat(2, 1)  # [h=2, T=4]: slot t holds token t in every head
    wrong = torch.tensor([[0, 0, 1, 1], [2, 2, 3, 3]])
    return plot_head_slots({"right": right, "wrong": wrong}, token=1)


def _position_loss() -> Figure:
    from gptlib.lessons.nb04.plots import plot_position_loss

    groups = {"copies": [1, 2, 3], "not at all": [0]}
    return plot_position_loss([1.0, 0.01, 0.5, 0.4], groups, [1.4, 0.6, 0.3, 0.3], title="bug")


def _flow(values: list[float]) -> GradientFlow:
    t = torch.tensor(values, dtype=torch.float64)
    z = torch.zeros(len(values), 1, 2, 3)
    return GradientFlow(t, t, z, errors=t, weight_grads=t, bias_grads=t, final_norm_gain=1.0)


def _activations() -> Figure:
    from gptlib.lessons.nb05.plots import plot_activations

    x = torch.linspace(-4, 4, 9)
    return plot_activations(x, {"GELU": (x, x), "ReLU": (x, x)})


def _gradient_flow() -> Figure:
    from gptlib.lessons.nb05.plots import plot_gradient_flow

    return plot_gradient_flow({"skips": _flow([1.0, 2.0]), "none": _flow([1e-40, 1.0])}, "t")


def _token_similarity() -> Figure:
    from gptlib.lessons.nb05.plots import plot_token_similarity

    return plot_token_similarity({"with skips": torch.tensor([0.25, 0.5, 1.0])})


def _stream_writes() -> Figure:
    from gptlib.lessons.nb05.plots import plot_stream_writes

    zero = torch.zeros(1)
    w = StreamWrites(zero, zero, zero, torch.tensor([0.1, 0.2, 0.3]), ("attn 1", "mlp 1", "attn 2"))
    return plot_stream_writes({"at init": w, "trained": w})


def _profile_view() -> Figure:
    from gptlib.lessons.nb06.plots import GradientProfileView

    view = GradientProfileView(Figure())
    view.update({"pre": torch.tensor([1.0, 0.5, 0.25]), "post": torch.tensor([1.0, 2.0, 3.0])})
    return view.ax.figure


def _init_gradients() -> Figure:
    from gptlib.lessons.nb06.plots import plot_init_gradients

    ones = torch.ones
    return plot_init_gradients({("pre", 2): ones(2), ("post", 2): ones(2), ("post", 4): ones(4)})


def _training() -> Figure:
    from gptlib.lessons.nb06.plots import plot_training

    return plot_training({"a": torch.tensor([3.0, 2.0]), "b": torch.tensor([3.0, 2.9])}, 2.8)


def _learning_rate_grid() -> Figure:
    from gptlib.lessons.nb06.plots import plot_learning_rate_grid

    curves = torch.full((3, 2, 2, 2, 12), 1.5)
    curves[2, 0, 0, 1, 5:] = math.nan  # one seed diverged
    grid = LearningRateGrid(tuple(ARMS), (2, 8), (1e-3, 3e-2), (0, 1), 12, 4, curves, 2.8)
    return plot_learning_rate_grid(grid)


def _gpt_diagram() -> Figure:
    from gptlib.lessons.nb07.plots import draw_gpt_diagram

    ax = Figure().subplots()
    draw_gpt_diagram(ax, n_layers=3)
    return ax.figure


def _ablation() -> Figure:
    from gptlib.lessons.nb08.plots.ablation import plot_ablation

    runs, held_out = {}, {}
    for i, row in enumerate(ROWS):
        for seed in (1, 2):
            runs[row.name, seed] = Curves((0, 5, 10), (4, 3, 2.5 - 0.1 * i), (4, 3, 2.5))
            held_out[row.name, seed] = 2.5
    other = {row.name: 2.6 for row in ROWS}
    ablation = Ablation(runs, held_out, 3e-3, (1, 2), 10, 1e-3, other)
    return plot_ablation(ablation, vocab_size=65, counted_bigram=2.48)


def _heads() -> Figure:
    from gptlib.lessons.nb08.plots.ablation import plot_heads

    runs = [
        HeadsRun(1, "learned", 0.4, 0.88, 0.34, 0.33),
        HeadsRun(2, "learned", 0.1, 0.97, 0.9, 0.9),
    ]
    return plot_heads(runs)


def _next_char_view() -> Figure:
    from gptlib.lessons.nb08.plots.sampling import NextCharView

    view = NextCharView(Figure(), vocab_size=4, prompt="to be or\nnot", top=3)
    view.update("ab \n", torch.tensor([0.1, 0.2, 0.3, 0.4]))
    return view.ax.figure


def _loss_curves() -> Figure:
    from gptlib.lessons.nb08.plots.training import plot_loss_curves

    curves = Curves((0, 2), (4.1, 2.4), (4.2, 2.6), losses=(4.0, 3.0, 2.5))
    return plot_loss_curves(curves, vocab_size=65, title="a run").figure


def _cost_view() -> Figure:
    from gptlib.lessons.nb09.plots import CostView

    view = CostView(Figure())
    view.update(cost_report(PRESETS["Llama 2 7B"], 2e12))
    return view.params_ax.figure


def _attention_share() -> Figure:
    from gptlib.lessons.nb09.plots import plot_attention_share

    contexts = [512, 4096, 32_768]
    ax = Figure().subplots()
    plot_attention_share(ax, [attention_share(PRESETS["Llama 2 7B"], contexts)])
    return ax.figure


def _head_patterns(causal: bool) -> Callable[[], Figure]:
    def draw() -> Figure:
        from gptlib.lessons.shared.plots.multihead import HeadPatternsView

        view = HeadPatternsView(Figure(), "ab\n", max_heads=4)
        scores = torch.randn(2, 3, 3)
        if causal:
            scores = scores.masked_fill(~causal_mask(3), float("-inf"))
        view.update(torch.softmax(scores, -1), title="2 heads")
        return view.axes[0].figure

    return draw


def _attention_map() -> Figure:
    from gptlib.lessons.shared.plots.trained_attention import AttentionMapView

    view = AttentionMapView(Figure(), "ab c")
    view.update(torch.tril(torch.ones(4, 4)) / torch.arange(1, 5)[:, None], title="layer 1, head 2")
    return view.ax.figure


def _attention_grid() -> Figure:
    from gptlib.lessons.shared.plots.trained_attention import plot_attention_grid

    return plot_attention_grid(torch.rand(2, 3, 4, 4), "abcd")


# Llama 2 7B by its formulas: 32 layers, d = 4096, d_ff = 11008, N = 6,738,415,616
LLAMA_FFN = 100 * 32 * 3 * 4096 * 11008 / 6_738_415_616  # three d × d_ff matrices a layer
LLAMA_CROSSING = 2 * 6_738_415_616 / (4 * 32 * 4096)  # 4·L·T·d = 2N

CASES: dict[str, list[tuple[Callable[[], Figure], tuple[str, ...]]]] = {
    "gptlib.lessons.nb00.plots.ModelSizeView": [
        (_model_size, ("V = 9 characters", "a 1,000; b 250,000"))
    ],
    "gptlib.lessons.nb01.plots.plot_position_tables": [
        (_position_tables, ("sinusoidal [16, 8], learned [16, 8]", "cosine similarity"))
    ],
    "gptlib.lessons.nb01.plots.PositionView": [
        (_position_view(64, 2), ("d_model = 2, 64 positions", "marked with a red x")),
        (_position_view(128, 64), ("d_model = 64, 128 positions", "no other position")),
    ],
    "gptlib.lessons.nb02.plots.SaturationView": [
        (_saturation_view, ("d_k = 256, unscaled scores", "its 16 keys", "uniform 1/16"))
    ],
    "gptlib.lessons.nb02.plots.plot_saturation_curves": [
        (_saturation_curves, ("log scale, 1 to 256", "over 16 keys", "ln 16"))
    ],
    "gptlib.lessons.nb02.plots.plot_scaling_runs": [
        (_scaling_runs, ("one column per d_k (2, 8)", "ln 4", "1/4"))
    ],
    "gptlib.lessons.nb03.plots.plot_masked_attention": [
        (_masked_attention, ("3 × 3", "“ab ”", "every key after its query (3 cells)", "3 of them"))
    ],
    "gptlib.lessons.nb03.plots.OutputChangeView": [
        (_output_change_view, ("6 positions", "token 2 changed, with the", "2 to 5 moved"))
    ],
    "gptlib.lessons.nb03.plots.plot_output_changes": [
        (_output_changes, ("6 of 9 entries moved, none of them left", "without it 9 moved"))
    ],
    "gptlib.lessons.nb03.plots.plot_mask_ablation": [
        (_mask_ablation, ("with the causal mask (blue)", "only the prefix visible"))
    ],
    "gptlib.lessons.nb04.plots.plot_head_slots": [
        (
            _head_slots,
            (
                "2 heads (rows) by 4 slots",
                "right: token 1 fills slot 1 of every head",
                "wrong: token 1 fills slots 2 and 3 of head 0",
            ),
        ),  # fmt: skip
    ],
    "gptlib.lessons.nb04.plots.plot_position_loss": [
        (_position_loss, ("bug. Bars", "4 positions", "copies: 1 to 3; not at all: 0"))
    ],
    "gptlib.lessons.nb05.plots.plot_activations": [
        (_activations, ("x from -4 to 4", "(GELU; ReLU)", "slope"))
    ],
    "gptlib.lessons.nb05.plots.plot_gradient_flow": [
        (_gradient_flow, ("t: the gradient norm", "(skips; none)", "smallest normal number"))
    ],
    "gptlib.lessons.nb05.plots.plot_token_similarity": [
        (_token_similarity, ("one line per run (with skips)", "at 1"))
    ],
    "gptlib.lessons.nb05.plots.plot_stream_writes": [
        (_stream_writes, ("the 3 sublayers from attn 1 to attn 2", "(at init; trained)"))
    ],
    "gptlib.lessons.nb06.plots.GradientProfileView": [
        (_profile_view, ("each of the 3 blocks", "Pre-LN (blue) against Post-LN (red)"))
    ],
    "gptlib.lessons.nb06.plots.plot_init_gradients": [
        (_init_gradients, ("(2, 4 blocks)", "Pre-LN (blue) against Post-LN (red)"))
    ],
    "gptlib.lessons.nb06.plots.plot_training": [
        (_training, ("one line per run (a; b)", "letter frequencies"))
    ],
    "gptlib.lessons.nb06.plots.plot_learning_rate_grid": [
        (_learning_rate_grid, ("after 12 steps", "over 2 seeds", "(2, 8 blocks", "1e-3, 3e-2"))
    ],
    "gptlib.lessons.nb07.plots.draw_gpt_diagram": [
        (_gpt_diagram, ("L = 3 times", "tok_emb", "lm_head", "logits [B, T, V]"))
    ],
    "gptlib.lessons.nb08.plots.ablation.plot_ablation": [
        (
            _ablation,
            (
                ", ".join(r.name for r in ROWS),
                "seeds 1, 2",
                "after 10 steps",
                "counted bigram",
                "learning rate 0.001",
            ),
        ),  # fmt: skip
    ],
    "gptlib.lessons.nb08.plots.ablation.plot_heads": [
        (_heads, ("2 models on the two-lookups task", "latest letter"))
    ],
    "gptlib.lessons.nb08.plots.sampling.NextCharView": [
        (_next_char_view, ("the 3 likeliest next characters", "“to be or⏎not”", "1/4"))
    ],
    "gptlib.lessons.nb08.plots.training.plot_loss_curves": [
        (_loss_curves, ("a run: cross-entropy", "train (estimate)", "ln V = ln 65"))
    ],
    "gptlib.lessons.nb09.plots.CostView": [
        (_cost_view, ("Llama 2 7B", "T = 4,096", f"FFN (all layers) {LLAMA_FFN:.1f}%"))
    ],
    "gptlib.lessons.nb09.plots.plot_attention_share": [
        (_attention_share, ("from 512 to 32K tokens", f"Llama 2 7B at T ≈ {LLAMA_CROSSING:,.0f}"))
    ],
    "gptlib.lessons.shared.plots.multihead.HeadPatternsView": [
        (_head_patterns(True), ("2 heads (2 heads)", "“ab⏎”", "no weight goes to a later key")),
        (_head_patterns(False), ("some weight goes to later keys",)),
    ],
    "gptlib.lessons.shared.plots.trained_attention.AttentionMapView": [
        (_attention_map, ("(layer 1, head 2) on “ab c”", "no weight goes to a later key"))
    ],
    "gptlib.lessons.shared.plots.trained_attention.plot_attention_grid": [
        (_attention_grid, ("every layer (2, rows) and head (3, columns)", "“abcd”"))
    ],
}


def test_every_drawing_function_has_a_case():
    found = drawing_functions()
    assert found, "no drawing function found: has the plots layout changed?"
    assert sorted(found - set(CASES)) == [], "a drawing function without a case below"
    assert sorted(set(CASES) - found) == [], "a case for a function that is gone"


@pytest.mark.parametrize(
    ("draw", "words"),
    [case for cases in CASES.values() for case in cases],
    ids=[
        f"{name.rsplit('.', 1)[1]}-{i}" for name, cases in CASES.items() for i in range(len(cases))
    ],
)
def test_the_figure_says_what_it_shows(draw, words):
    fig = draw()
    text = description(fig)
    plt.close("all")
    assert text, "the figure has no description"
    assert not looks_like_a_file(text) and text.endswith("."), text
    assert "tensor(" not in text and "  " not in text, text
    for word in words:
        assert word in text, f"{word!r} not in the description:\n{text}"
