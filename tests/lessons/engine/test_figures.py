"""gptlib.lessons.engine.figures: a figure's description, and the alt text IPython displays it
with (in the shell's formatters, and end to end in a kernel running a notebook)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import nbformat  # noqa: E402
import pytest  # noqa: E402
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402
from IPython.core.pylabtools import select_figure_formats  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from gptlib.lessons.engine.figures import (  # noqa: E402
    describe,
    description,
    looks_like_a_file,
    spans,
)


def test_describe_sets_the_description_of_the_figure_drawn_on():
    fig = Figure()
    ax = fig.subfigures(1, 2)[1].subplots()
    assert description(fig) is None
    describe(ax, "  A line\n   rising. ")
    assert description(fig) == "A line rising."
    describe(fig, "Replaced.")
    assert description(fig) == "Replaced."


@pytest.mark.parametrize("text", ["", "  \n", "../_images/f52f79.png", "figure.svg", "a/b"])
def test_describe_refuses_what_says_nothing(text):
    with pytest.raises(ValueError, match="describe what the figure shows"):
        describe(Figure(), text)


def test_describe_refuses_what_is_not_a_figure():
    with pytest.raises(ValueError, match="got str"):
        describe("fig", "A line.")
    with pytest.raises(ValueError, match="a description is text, got int"):
        describe(Figure(), 3)


def test_file_names_are_told_from_words():
    for name in ("../_images/f52f79.png", "plot.JPG", "img/x", "/tmp/a.pdf"):
        assert looks_like_a_file(name), name
    for words in ("Bars of 3 runs.", "The ratio 4/3 of two losses.", "x.png is drawn here"):
        assert not looks_like_a_file(words), words


@pytest.mark.parametrize(
    ("numbers", "said"),
    [
        ([], "none"),
        ([4], "4"),
        ([2, 1], "1 and 2"),
        ([0, 1, 2, 3, 7, 9], "0 to 3, 7 and 9"),
        ([1, 2, 5, 6], "1, 2, 5 and 6"),
        ([5, 7, 6, 6], "5 to 7"),
    ],
)
def test_spans(numbers, said):
    assert spans(numbers) == said


@pytest.fixture
def shell():
    """An IPython shell drawing figures as the inline backend does (PNG)."""
    shell = InteractiveShell.instance()
    select_figure_formats(shell, {"png"})
    yield shell
    InteractiveShell.clear_instance()


def test_a_described_figure_is_displayed_with_its_alt_text(shell):
    fig = Figure()
    fig.subplots().plot([1, 2])
    describe(fig, "A line rising from 1 to 2.")
    data, metadata = shell.display_formatter.format(fig)
    assert set(data) == {"image/png", "text/plain"}
    assert metadata == {"image/png": {"alt": "A line rising from 1 to 2."}}
    assert shell.display_formatter.format(Figure())[1] == {}  # no description, no metadata


def test_the_alt_text_follows_a_change_of_figure_formats(shell):
    fig = Figure()
    fig.subplots()
    describe(fig, "One empty panel.")
    select_figure_formats(shell, {"png", "svg"})  # what %config InlineBackend.figure_formats does
    data, metadata = shell.display_formatter.format(fig)
    assert {"image/png", "image/svg+xml"} <= set(data)
    assert metadata == {
        mime: {"alt": "One empty panel."} for mime in ("image/png", "image/svg+xml")
    }


@pytest.mark.slow
def test_a_notebook_stores_the_description_in_the_figures_output(tmp_path):
    """plt.show() in a kernel: the stored output carries the alt text; nbval does not compare
    output metadata, so a stored notebook without it still passes until it is regenerated."""
    from nbclient import NotebookClient

    source = (
        "import matplotlib.pyplot as plt\n"
        "from gptlib.lessons.engine.figures import describe\n"
        "fig, ax = plt.subplots()\n"
        "ax.plot([1, 2])\n"
        "describe(ax, 'A line rising from 1 to 2.')\n"
        "plt.show()\n"
        "plt.subplots()\n"
        "plt.show()"
    )
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    NotebookClient(notebook, timeout=120, resources={"metadata": {"path": str(tmp_path)}}).execute()
    described, plain = notebook.cells[0].outputs
    assert "image/png" in described.data and "image/png" in plain.data
    assert described.metadata == {"image/png": {"alt": "A line rising from 1 to 2."}}
    assert plain.metadata == {}
