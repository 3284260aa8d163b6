"""The cost calculator of notebook 09: a preset menu and sliders over `calculator_report`.

All arithmetic lives in the pure, unit-tested `gptlib.lessons.nb09.experiments.costs
.calculator_report`; this module only wires controls to it. It prints the report's `name =
value` lines (`total training FLOPs = 8.09e+22`, …) and draws where the parameters and a
token's FLOPs go.
"""

from __future__ import annotations

import ipywidgets as widgets

from gptlib.lessons.engine.explorer import Explorer
from gptlib.lessons.nb09.experiments.costs import (
    PRESET_TRAINING_TOKENS,
    PRESETS,
    CostReport,
    calculator_report,
    parameter_counts,
)
from gptlib.lessons.nb09.plots import CostView

_SHAPE = ("n_layers", "d_model", "n_heads", "n_kv_heads", "vocab_size", "context", "d_ff")
MAX_HEADS = 256


def head_counts(d_model: int) -> list[int]:
    """The head counts h that divide d_model (up to MAX_HEADS): the heads slider's stops."""
    return [h for h in range(1, min(d_model, MAX_HEADS) + 1) if d_model % h == 0]


def _shape_values(preset: str) -> dict[str, int]:
    arch = PRESETS[preset]
    values = {name: getattr(arch, name) for name in _SHAPE if name not in ("n_kv_heads", "d_ff")}
    return {**values, "n_kv_heads": arch.kv_heads, "d_ff": arch.ffn_width}


def _tokens(preset: str) -> float:
    return PRESET_TRAINING_TOKENS.get(preset, 20 * parameter_counts(PRESETS[preset]).total)


class CostCalculator(Explorer):
    """A preset menu and sliders for L, d, h, key/value heads, V, T, d_ff, tokens, peak and MFU
    (notebook 09).

    Picking a preset moves every slider to that model's values (one redraw); moving a slider
    recomputes the report. The heads slider only offers divisors of d; when d changes it keeps
    the head size d_h = d / h as close as it can. The key/value-heads slider offers divisors of
    h; when h changes, a model with one key/value head per query head keeps that, and a
    grouped one keeps the nearest count that divides the new h.
    """

    def __init__(self, preset: str = "Llama 2 7B") -> None:
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; choose one of {list(PRESETS)}")
        slider = {"continuous_update": False, "style": {"description_width": "8em"}}
        self.preset = widgets.Dropdown(options=list(PRESETS), value=preset, description="preset")
        self.shape = {
            "n_layers": widgets.IntSlider(min=1, max=128, description="layers L", **slider),
            "d_model": widgets.IntSlider(
                min=64, max=16_384, step=64, description="width d", **slider
            ),
            "n_heads": widgets.SelectionSlider(options=[1], description="heads h", **slider),
            "n_kv_heads": widgets.SelectionSlider(
                options=[1], description="key/value heads", **slider
            ),
            "vocab_size": widgets.IntSlider(
                min=2, max=262_144, description="vocabulary V", **slider
            ),
            "context": widgets.IntSlider(
                min=16, max=131_072, step=16, description="context T", **slider
            ),
            "d_ff": widgets.IntSlider(
                min=16, max=65_536, step=16, description="FFN width d_ff", **slider
            ),
        }
        self.n_tokens = widgets.FloatLogSlider(
            base=10,
            min=6,
            max=14,
            step=0.01,
            description="tokens D",
            readout_format=".3g",
            **slider,
        )
        self.peak_tflops = widgets.FloatLogSlider(
            value=312.0,
            base=10,
            min=-2,
            max=4,
            step=0.01,
            description="peak TFLOP/s",
            readout_format=".4g",
            **slider,
        )
        self.mfu = widgets.FloatSlider(
            value=0.4, min=0.01, max=1.0, step=0.01, description="MFU", **slider
        )
        # Before the base class observes the controls, so that a new width first gets its
        # heads, new heads their key/value heads and a new preset its values, and only then
        # the one redraw.
        self.shape["d_model"].observe(self._width_changed, names="value")
        self.shape["n_heads"].observe(self._heads_changed, names="value")
        self.preset.observe(self._preset_changed, names="value")
        controls = [self.preset, *self.shape.values(), self.n_tokens, self.peak_tflops, self.mfu]
        super().__init__(controls, figsize=CostView.FIGSIZE)
        self.view = CostView(self.figure)
        self._load_preset(preset)
        self.redraw()

    def _set_heads(self, d_model: int, n_heads: int) -> None:
        heads = self.shape["n_heads"]
        heads.options = head_counts(d_model)
        heads.value = n_heads

    def _set_kv_heads(self, n_heads: int, n_kv_heads: int) -> None:
        kv = self.shape["n_kv_heads"]
        kv.options = head_counts(n_heads)
        kv.value = n_kv_heads

    def _fit_kv_heads(self, old_heads: int, new_heads: int) -> None:
        old_kv = self.shape["n_kv_heads"].value
        if old_kv == old_heads:  # one key/value head per query head: keep it so
            fitted = new_heads
        else:
            fitted = min(head_counts(new_heads), key=lambda k: (abs(k - old_kv), k))
        with self.holding(redraw=False):
            self._set_kv_heads(new_heads, fitted)

    def _width_changed(self, change: dict) -> None:
        if self._held:
            return
        old_heads = self.shape["n_heads"].value
        old_head_size = change["old"] / old_heads
        nearest = min(
            head_counts(change["new"]), key=lambda h: abs(change["new"] / h - old_head_size)
        )
        with self.holding(redraw=False):  # the width's own redraw follows
            self._set_heads(change["new"], nearest)
            self._fit_kv_heads(old_heads, nearest)

    def _heads_changed(self, change: dict) -> None:
        # A new width or preset sets the heads while held (new options pass the value through
        # options[0]) and fits the key/value heads itself.
        if self._held:
            return
        self._fit_kv_heads(change["old"], change["new"])  # the heads' own redraw follows

    def _preset_changed(self, change: dict) -> None:
        self._load_preset(change["new"])  # the preset's own redraw follows

    def _load_preset(self, preset: str) -> None:
        with self.holding(redraw=False):
            values = _shape_values(preset)
            self._set_heads(values["d_model"], values["n_heads"])
            self._set_kv_heads(values["n_heads"], values["n_kv_heads"])
            for name, value in values.items():
                self.shape[name].value = value
            self.n_tokens.value = _tokens(preset)

    def compute(self) -> CostReport:
        return calculator_report(
            self.preset.value,
            **{name: control.value for name, control in self.shape.items()},
            n_tokens=self.n_tokens.value,
            peak_tflops=self.peak_tflops.value,
            mfu=self.mfu.value,
        )

    def draw(self, result: CostReport) -> None:
        self.view.update(result)
