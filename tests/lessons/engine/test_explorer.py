"""The explorer base: one redraw per change, `name = value` lines, PNG, no display on build."""

import ast
from dataclasses import dataclass
from pathlib import Path

import ipywidgets as widgets
import pytest

import gptlib.lessons
from gptlib.lessons.engine.explorer import Explorer, check_lines

PNG_MAGIC = b"\x89PNG"
LESSONS = Path(gptlib.lessons.__file__).parent
# every module that builds widgets: each lesson's widgets, the engine's base and prediction
# widget, and the maintainers' timing of every explorer
WIDGET_MODULES = sorted(
    [*LESSONS.glob("*/widgets.py"), *LESSONS.glob("*/widgets/*.py")]
    + [LESSONS / "engine/explorer.py", LESSONS / "engine/predict.py"]
    + [LESSONS / "under_the_hood/timing.py"]
)


@dataclass(frozen=True)
class Square:
    n: int

    def lines(self) -> list[str]:
        return [f"n = {self.n}", f"n squared = {self.n**2}"]


class SquareExplorer(Explorer):
    """A minimal explorer: a slider n, the line of n², one bar of height n²."""

    def __init__(self, n: int = 3) -> None:
        self.n = widgets.IntSlider(value=n, min=0, max=10, description="n")
        self.m = widgets.IntSlider(value=0, min=0, max=10, description="m")
        super().__init__([self.n, self.m], figsize=(2, 2))
        self.ax = self.figure.subplots()
        (self.bar,) = self.ax.bar([0], [0])
        self.ax.set_ylim(0, 100)
        self.computed = 0
        self.redraw()

    def compute(self) -> Square:
        self.computed += 1
        return Square(self.n.value)

    def draw(self, result: Square) -> None:
        self.bar.set_height(result.n**2)


def _printed(explorer: Explorer) -> str:
    (output,) = explorer.numbers.outputs
    return output["text"]


def test_every_change_recomputes_redraws_and_reprints():
    explorer = SquareExplorer(3)
    assert explorer.lines == ["n = 3", "n squared = 9"] and explorer.result == Square(3)
    assert _printed(explorer) == "n = 3\nn squared = 9\n"
    first_png = bytes(explorer.image.value)
    assert first_png.startswith(PNG_MAGIC)
    explorer.n.value = 7
    assert explorer.lines == ["n = 7", "n squared = 49"] and explorer.computed == 2
    assert _printed(explorer) == "n = 7\nn squared = 49\n"
    assert bytes(explorer.image.value) != first_png


def test_holding_moves_several_controls_with_one_redraw():
    explorer = SquareExplorer(3)
    with explorer.holding():
        explorer.n.value = 4
        explorer.m.value = 5
        assert explorer.computed == 1 and explorer.lines[0] == "n = 3"
    assert explorer.computed == 2 and explorer.lines[0] == "n = 4"
    with explorer.holding(redraw=False):
        explorer.n.value = 5
    assert explorer.computed == 2 and explorer.lines[0] == "n = 4"


def test_controls_sit_above_the_numbers_and_the_image():
    explorer = SquareExplorer()
    controls, numbers, image = explorer.widget.children
    assert list(controls.children) == [explorer.n, explorer.m]
    assert numbers is explorer.numbers and image is explorer.image
    bundle = explorer._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"].startswith("SquareExplorer: an interactive explorer")


def test_lines_must_be_name_equals_value():
    assert check_lines(("d_k = 128", "changed positions = [3, 4]", "x (nats) = 1.2 (note)")) == [
        "d_k = 128",
        "changed positions = [3, 4]",
        "x (nats) = 1.2 (note)",
    ]
    for wrong in ("d_k: 128", "d_k=128", "= 3", "name = ", "a\nb = 2"):
        with pytest.raises(ValueError, match="name = value"):
            check_lines([wrong])


@pytest.mark.parametrize("path", WIDGET_MODULES, ids=lambda p: str(p.relative_to(LESSONS)))
def test_widget_modules_have_no_display_side_effects(path):
    """Building a widget must not display it (the notebook cell's last value does)."""
    tree = ast.parse(path.read_text())
    called = {
        node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
    }
    assert not called & {"display", "show"}, f"{path} calls display() or plt.show()"


@pytest.mark.parametrize("path", WIDGET_MODULES, ids=lambda p: str(p.relative_to(LESSONS)))
def test_every_explorer_uses_the_shared_base(path):
    """A module that builds controls defines an Explorer subclass (the base and the prediction
    widget, which is no explorer, aside)."""
    tree = ast.parse(path.read_text())
    uses_ipywidgets = any(
        isinstance(node, ast.Import) and any(a.name == "ipywidgets" for a in node.names)
        for node in ast.walk(tree)
    )
    bases = {
        base.id
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        for base in node.bases
        if isinstance(base, ast.Name)
    }
    if uses_ipywidgets and path.name not in ("explorer.py", "predict.py"):
        assert "Explorer" in bases, f"{path} builds controls without the Explorer base"


def test_the_png_has_the_figure_size_at_the_explorer_dpi():
    explorer = SquareExplorer()  # 2 × 2 inches at the default 80 dpi
    png = bytes(explorer.image.value)
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (160, 160)
