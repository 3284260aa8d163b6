"""Every widget of every notebook renders and responds, in JupyterLab in headless Chromium.

SPECS is the table: for each notebook, the controls to move (by the description shown next to
them) and the text line of the widget output that must change, and which way. A notebook whose
file is not in the tree yet is skipped with a message; when it lands its row runs. A control on
the page that no row moves fails the test (list it in `ignored`, with the reason, if moving it
proves nothing). Widgets print their key numbers as `name = value` lines, such as
`max weight = 0.912` (an explorer's `lines`); `line(name)` reads one. A prediction's row types a
guess, commits it and runs the cell that reveals it again (kind RUN_CELL).

Each lesson is driven in its workbook, where a student drives it: JupyterLab serves the copies
of workbook/NN_name.ipynb that `make lab` makes in my-work/ (`serve_course` in ui_harness.py),
which hold no stored output and no guard cell, open with a setup cell (a no-op where gptlib is
importable) and leave every exercise a stub: its check says "not implemented yet" and the
reference stands in, so Run All reaches the end. The maintainers' notebook is driven in docs/.
No row needs the solved edition (notebooks/): Run All clears every stored output first, and no
test compares with them.

Run: `PYTHONPATH=$PWD python -m pytest -m ui tests/ui` (screenshots in ui-screenshots/).
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from .ui_harness import (
    DOCS,
    IMAGE,
    NOTEBOOKS,
    RUN_CELL,
    SERVED_AS,
    WORKBOOK,
    Interaction,
    NotebookSpec,
    parse_number,
)

NUMBER = r"([-+]?[\d,]*\.?\d+(?:[eE][-+]?\d+)?)"


def line(name: str) -> str:
    """Regex for a printed `name = <number>` line, the number in group 1.

    `name` must not be the tail of a longer word: line("d") does not match "squared = 81".
    """
    return rf"(?<!\w){re.escape(name)} = {NUMBER}"


def choice_prediction(cell: str, choice: str, reveal: str) -> tuple[Interaction, ...]:
    """The rows of one `Prediction(kind="choice")`: click `choice` in the cell whose source
    contains `cell`, commit it, and run the `reveal` cell again, which must now show it."""
    committed = r"your prediction = [^\n]*"
    return (
        Interaction(choice, "toggle", "click", committed, cell=cell),
        Interaction("commit", "button", "click", r"\((?:not )?committed\)", cell=cell),
        Interaction(reveal, RUN_CELL, "run", committed),
    )


def prediction(cell: str, guess: str, reveal: str) -> tuple[Interaction, ...]:
    """The rows of one `Prediction`: type `guess` (larger than the default 0) into the box of the
    cell whose source contains `cell`, commit it, and run the `reveal` cell again, whose output
    must now show the committed guess."""
    return (
        Interaction("prediction", "text", guess, line("your prediction"), "increases", cell=cell),
        Interaction("commit", "button", "click", r"\((?:not )?committed\)", cell=cell),
        Interaction(reveal, RUN_CELL, "run", r"your prediction = [^\n]*"),
    )


def question(cell: str) -> Interaction:
    """The row of one `Question` (in the cell whose source contains `cell`): type an answer,
    commit it; the course's answer must appear under the button."""
    return Interaction(
        QUESTION_BUTTON, "answer", "my answer", r"the course's answer:|none committed", cell=cell
    )


QUESTION_BUTTON = "commit, then show the course's answer"
ATTENTION_FLOPS = line("attention FLOPs per token (4·L·T·d)")
KV_CACHE = line("KV cache (one sequence of T tokens, bf16)")
# A choice prediction (notebooks 01, 02): its status line, and its commit state.
PREDICTION = r"your prediction = [^\n]*"
COMMITTED = r"\((?:not )?committed\)"
OTHER_CHOICE = "another choice of a prediction whose row clicks one choice"

SPECS: dict[str, NotebookSpec] = {
    "00_start_here": NotebookSpec(
        "00_*.ipynb",
        (
            # A larger vocabulary adds rows to the embedding (and unembedding) matrices.
            Interaction("vocab size", "slider", "ArrowRight", line("embeddings"), "increases"),
            Interaction("vocab size", "slider", "End", line("total"), "increases"),
            Interaction("vocab size", "slider", "Home", line("total"), "decreases"),
            *prediction("guess_per_char = Prediction(", "300", "guess_per_char.reveal("),
            question("q_vocabulary = Question("),
        ),
    ),
    "01_embeddings_positions": NotebookSpec(
        "01_*.ipynb",
        (
            # The slowest sinusoid's wavelength grows with the width and shrinks with the base.
            Interaction("d_model", "slider", "End", line("longest wavelength"), "increases"),
            Interaction("base", "slider", "Home", line("longest wavelength"), "decreases"),
            Interaction("length", "slider", "End", IMAGE),
            # A choice prediction: pick one choice, commit, run the reveal again; then two
            # number predictions.
            Interaction(
                "it passes (every gap 0)",
                "toggle",
                "click",
                PREDICTION,
                cell="guess_two_layers = Prediction(",
            ),
            Interaction(
                "commit", "button", "click", COMMITTED, cell="guess_two_layers = Prediction("
            ),
            Interaction("guess_two_layers.reveal(", RUN_CELL, "run", PREDICTION),
            # Its reveal shares a cell with the choice's: watch the reveal of a measured number.
            *prediction("guess_causal_prefix = Prediction(", "3", "")[:2],
            Interaction(
                "guess_causal_prefix.reveal(", RUN_CELL, "run", PREDICTION + r"\nmeasured = \d"
            ),
            *prediction("guess_trained = Prediction(", "0.5", "guess_trained.reveal("),
            question("q_set = Question("),
            question("q_beyond = Question("),
            question("q_offsets = Question("),
        ),
        ignored={"it fails (some gap above 0)": OTHER_CHOICE},
    ),
    "02_attention": NotebookSpec(
        "02_*.ipynb",
        (
            # The sweep's prediction, then the explorer under the sweep (core path), fed by it:
            # unscaled, the scores' spread grows like sqrt(d_k) and the softmax saturates;
            # dividing by sqrt(d_k) brings the weights back.
            *prediction("guess_gradient = Prediction(", "5", "guess_gradient.reveal("),
            Interaction("d_k", "slider", "End", line("score std"), "increases"),
            Interaction("scaled by 1/√d_k", "toggle", "click", line("max weight"), "decreases"),
            Interaction("unscaled", "toggle", "click", line("max weight"), "increases"),
            Interaction("d_k", "slider", "Home", line("max weight"), "decreases"),
            *prediction("guess_ratio = Prediction(", "0.2", "guess_ratio.reveal("),
            *prediction("guess_batch = Prediction(", "100", "guess_batch.reveal("),
            question("q_over_divided = Question("),
            question("q_delay = Question("),
        ),
    ),
    "03_causal_mask": NotebookSpec(
        "03_*.ipynb",
        (
            # With the mask, changing a later token moves fewer positions and never earlier ones;
            # without it, every position moves.
            Interaction("perturb token", "slider", "End", line("number changed"), "decreases"),
            Interaction("causal mask", "toggle", "click", line("number changed"), "increases"),
            Interaction(
                "causal mask", "toggle", "click", line("earliest changed position"), "increases"
            ),
            Interaction(
                "perturb token", "slider", "Home", line("earliest changed position"), "decreases"
            ),
            *choice_prediction(
                "guess_largest = Prediction(", "a later position", "guess_largest.reveal("
            ),
            *choice_prediction(
                "guess_prefix = Prediction(",
                "below the entropy floor (0.296)",
                "guess_prefix.reveal(",
            ),
            question("q_entries = Question("),
            question("q_diagonal = Question("),
            question("q_detour = Question("),
            question("q_worse = Question("),
            question("q_predictions = Question("),
            question("q_one_step = Question("),
        ),
        ignored={
            choice: "the other choices of a prediction: one click per prediction proves them"
            for choice in (
                "position 10 itself",
                "all the moved positions about equally",
                "between the floor and a uniform guess (ln 27 = 3.296)",
                "above a uniform guess: worse than knowing nothing",
            )
        },
    ),
    "04_multi_head_attention": NotebookSpec(
        "04_*.ipynb",
        (
            # More heads at a fixed width: narrower heads, same parameter count, more patterns.
            Interaction("n_heads", "slider", "End", line("d_head"), "decreases"),
            Interaction("n_heads", "slider", "Home", line("n_heads"), "decreases"),
            Interaction("n_heads", "slider", "ArrowRight", IMAGE),
            *choice_prediction(
                "guess_growth = Prediction(", "the parameters", "guess_growth.reveal("
            ),
            question("q_torch_mask = Question("),
            question("q_null = Question("),
            question("q_scale = Question("),
            question("q_slots = Question("),
        ),
        ignored={
            choice: "the other choices of a prediction: one click per prediction proves them"
            for choice in (
                "the FLOPs of the matrix products",
                "the number of score entries",
                "none of these three",
            )
        },
    ),
    "05_feed_forward_and_residuals": NotebookSpec(
        "05_*.ipynb",
        (
            *prediction("guess_orders = Prediction(", "100", "guess_orders.reveal("),
            *choice_prediction(
                "guess_layernorm = Prediction(", "larger", "guess_layernorm.reveal("
            ),
            question("q_share = Question("),
            question("q_line = Question("),
            question("q_skips = Question("),
        ),
        ignored={"smaller": OTHER_CHOICE},
    ),
    "06_norm_placement": NotebookSpec(
        "06_*.ipynb",
        (
            # Deeper stacks: the depth line follows the slider; each norm choice redraws the plot.
            Interaction("depth", "slider", "End", line("depth"), "increases"),
            Interaction("Pre-LN", "toggle", "click", IMAGE),
            Interaction("Post-LN", "toggle", "click", IMAGE),
            Interaction("both", "toggle", "click", IMAGE),
            Interaction("depth", "slider", "Home", line("depth"), "decreases"),
            # The prediction before the learning-rate grid.
            *choice_prediction("guess_post_ln = Prediction(", "stalls", "guess_post_ln.reveal("),
            question("q_deep = Question("),
            question("q_grid = Question("),
            question("q_post = Question("),
        ),
        ignored={"trains": OTHER_CHOICE, "diverges": OTHER_CHOICE},
        run_timeout_s=400.0,
    ),
    "07_build_the_gpt": NotebookSpec(
        "07_build_the_gpt.ipynb",
        (
            question("q_init = Question("),
            # The memorisation run's prediction: type the loss at position 0, commit, reveal it.
            *prediction("guess_first = Prediction(", "1.9", "guess_first.reveal("),
            question("q_tying = Question("),
            question("q_max_len = Question("),
            question("q_curve = Question("),
            question("q_same = Question("),
        ),
        run_timeout_s=300.0,
    ),
    "08_train_and_sample": NotebookSpec(
        "08_train_and_sample.ipynb",
        (
            # Hotter sampling flattens the next-character distribution: its top probability falls.
            Interaction("temperature", "slider", "End", line("top probability"), "decreases"),
            # Top-k = 1 leaves a single candidate character.
            Interaction(
                "top-k (0: off)", "slider", "ArrowRight", line("characters with p > 0"), "decreases"
            ),
            # Another layer or head of the trained model attends differently.
            Interaction("layer", "slider", "End", line("mean look-back")),
            Interaction("head", "slider", "End", line("weight on itself")),
            # The leave-one-out prediction: pick a removal, commit, run the reveal again.
            Interaction(
                "no residuals",
                "toggle",
                "click",
                r"your prediction = [^\n]*",
                cell="guess_removal = Prediction(",
            ),
            Interaction(
                "commit",
                "button",
                "click",
                r"\((?:not )?committed\)",
                cell="guess_removal = Prediction(",
            ),
            Interaction("guess_removal.reveal(", RUN_CELL, "run", r"your prediction = [^\n]*"),
            # The long run's prediction: the gap between the held-out and training estimates.
            *prediction("guess_gap = Prediction(", "0.5", "guess_gap.reveal("),
            question("q_gap = Question("),
            question("q_mode = Question("),
            question("q_residuals = Question("),
        ),
        ignored={
            row: "the other choices of the leave-one-out prediction: one click proves the buttons"
            for row in (
                "no positions",
                "one head",
                "no MLP",
                "no block norms",
                "no final norm",
                "no attention",
            )
        },
        run_timeout_s=600.0,
    ),
    "09_cost_accounting": NotebookSpec(
        "09_*.ipynb",
        (
            # From Llama 2 7B; the heads slider offers only divisors of d, the key/value heads
            # slider divisors of h.
            Interaction("layers L", "slider", "End", line("total training FLOPs"), "increases"),
            Interaction("layers L", "slider", "Home", line("parameters N"), "decreases"),
            Interaction("key/value heads", "slider", "Home", KV_CACHE, "decreases"),
            Interaction("heads h", "slider", "End", line("head size d_h"), "decreases"),
            Interaction("width d", "slider", "End", line("parameters N"), "increases"),
            Interaction("vocabulary V", "slider", "Home", line("parameters N"), "decreases"),
            Interaction("context T", "slider", "End", ATTENTION_FLOPS, "increases"),
            Interaction("FFN width d_ff", "slider", "Home", line("parameters N"), "decreases"),
            Interaction("tokens D", "slider", "End", line("total training FLOPs"), "increases"),
            Interaction("peak TFLOP/s", "slider", "End", line("accelerator-hours"), "decreases"),
            Interaction("MFU", "slider", "Home", line("accelerator-hours"), "increases"),
            Interaction("preset", "dropdown", "GPT-3 175B", line("parameters N"), "increases"),
            # Predict, then reveal: GPT-2 small's share in its tables, the estimate's miss.
            *prediction("guess_tables = Prediction(", "30", "guess_tables.reveal("),
            question("q_plot = Question("),
            *prediction("guess_hours = Prediction(", "5", "guess_hours.reveal("),
            question("q_size = Question("),
            question("q_frozen = Question("),
            question("q_long = Question("),
            question("q_half = Question("),
            question("q_cache = Question("),
            question("q_batch = Question("),
        ),
    ),
    # The maintainers' notebook (once notebook 10, now kept in docs/) builds every explorer to
    # time it but shows none: it must run without errors.
    "under_the_hood": NotebookSpec("under_the_hood.ipynb", (), run_timeout_s=240.0, folder=DOCS),
}


def _uses_widgets(path: Path) -> bool:
    notebook = nbformat.read(path, as_version=4)
    code = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    # a lesson's widgets, the engine's prediction widget and explorer base, the timing of them
    widgets = r"gptlib\.lessons\.(?:nb\d\d\.widgets|engine\.(?:predict|explorer)|under_the_hood)"
    return bool(re.search(rf"ipywidgets|{widgets}|\binteract\b", code))


def _driven_paths() -> list[Path]:
    """The notebooks the UI tests must cover: every workbook, every notebook of docs/, and any
    solved notebook without a workbook (which no row could then drive: nothing serves it)."""
    workbooks = sorted(WORKBOOK.glob("*.ipynb"))
    names = {p.name for p in workbooks}
    solved_only = [p for p in sorted(NOTEBOOKS.glob("*.ipynb")) if p.name not in names]
    return workbooks + sorted(DOCS.glob("*.ipynb")) + solved_only


def test_every_notebook_with_widgets_has_a_spec() -> None:
    with_widgets = [p for p in _driven_paths() if _uses_widgets(p)]
    uncovered = [
        p.relative_to(WORKBOOK.parent).as_posix()
        for p in with_widgets
        if not any(p in spec.paths() for spec in SPECS.values())
    ]
    assert not uncovered, f"add a row to SPECS in {__file__} for {uncovered}"


def test_every_spec_drives_one_served_notebook_and_names_cells_it_holds() -> None:
    """Each row's pattern matches one file of its folder, which the UI tests serve, and every
    cell a row names (`Interaction.cell`, a RUN_CELL's control) is one code cell of it."""
    for name, spec in SPECS.items():
        assert spec.folder in SERVED_AS, name
        found = spec.paths()
        assert len(found) == 1, f"{name}: {spec.where()} matches {found}"
        code = [
            c.source for c in nbformat.read(found[0], as_version=4).cells if c.cell_type == "code"
        ]
        for interaction in spec.interactions:
            named = interaction.control if interaction.kind == RUN_CELL else interaction.cell
            if named:
                holding = sum(named in source for source in code)
                assert holding == 1, (
                    f"{name}: {holding} code cells of {found[0].name} hold {named!r}"
                )
    assert SERVED_AS[WORKBOOK] == "my-work"  # where `make lab` puts the student's copies


def test_interaction_rejects_a_direction_without_a_number() -> None:
    with pytest.raises(ValueError, match="group 1"):
        Interaction("n", "slider", "End", r"n squared", expect="increases")
    with pytest.raises(ValueError, match="action 'run'"):
        Interaction("print(", RUN_CELL, "click", line("n"))
    assert re.search(line("d"), "n squared = 81") is None
    assert re.search(line("d_h"), "d_h: 128") is None  # one convention: `name = value`
    assert parse_number("6,738,415,616") == 6738415616
    assert parse_number("8.1e22") == 8.1e22


def _spec_params() -> list:
    params = []
    for name, spec in SPECS.items():
        missing = not spec.paths()
        reason = f"{spec.where()} is not in this tree yet; its SPECS row runs once it is"
        params.append(pytest.param(name, marks=[pytest.mark.skip(reason)] if missing else []))
    return params


@pytest.mark.ui
@pytest.mark.parametrize("name", _spec_params())
def test_notebook_widgets_respond(name, lab, notebook, record) -> None:
    spec = SPECS[name]
    found = spec.paths()
    assert len(found) == 1, f"{spec.where()} matches {found}; make the pattern unique"
    path = found[0]
    served = spec.served_path(path)  # a lesson: the student's copy in my-work/
    assert (lab.root_dir / served).read_bytes() == path.read_bytes(), f"{served} is not {path}"
    notebook.open(served, path.stem)
    notebook.run_all(spec.run_timeout_s)
    notebook.assert_no_errors()
    record(notebook.screenshot())
    # A question's row presses its commit button (after typing an answer).
    moved = {("button" if i.kind == "answer" else i.kind, i.control) for i in spec.interactions}
    unmoved = [c for c in notebook.controls() if c not in moved and c[1] not in spec.ignored]
    assert not unmoved, f"{path.name}: controls no SPECS row moves: {unmoved}"
    for index, interaction in enumerate(spec.interactions):
        record(notebook.perform(interaction, index))


# The harness proves itself on throwaway notebooks written into the served folder: one control
# of each kind, a control whose output never changes, and a cell that raises.
HARNESS_CONTROLS = """\
import ipywidgets as w
from IPython.display import display

out = w.Output()
n = w.IntSlider(value=3, min=1, max=10, description="n")
x = w.FloatSlider(value=1.0, min=0.1, max=2.0, step=0.1, description="x")
rate = w.FloatLogSlider(value=1e-3, min=-4, max=-1, description="rate", continuous_update=False)
d = w.SelectionSlider(options=[1, 2, 4, 8], value=2, description="d")
scaled = w.Checkbox(value=False, description="scaled")
mask = w.ToggleButton(value=False, description="mask")
mode = w.ToggleButtons(options=["off", "on"])
kind = w.Dropdown(options=["sum", "max"], description="kind")
size = w.BoundedIntText(value=4, min=1, max=100, description="size")
again = w.Button(description="again")
idle = w.IntSlider(value=0, min=0, max=5, description="idle")
bar = w.Image(format="svg+xml")
clicks = [0]
SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="100" height="8"><rect width="{}" height="8"/>'


def show(_=None):
    bar.value = (SVG.format(10 * n.value) + "</svg>").encode()
    with out:
        out.clear_output(wait=True)
        print(f"n squared = {n.value ** 2}")
        print(f"inverse x = {1 / x.value:z.3f}")
        print(f"rate = {rate.value:z.0e}")
        print(f"d = {d.value}")
        print(f"flags = {scaled.value} {mask.value}")
        print(f"mode = {mode.value}")
        print(f"kind = {kind.value}")
        print(f"size cubed = {size.value ** 3:,}")
        print(f"clicks = {clicks[0]}")


def click(_):
    clicks[0] += 1
    show()


for control in (n, x, rate, d, scaled, mask, mode, kind, size):
    control.observe(show, "value")
again.on_click(click)
show()
display(w.VBox([n, x, rate, d, scaled, mask, mode, kind, size, again, idle, bar, out]))
"""

# A second button with the same label, told apart by its cell (`Interaction.cell`).
HARNESS_SAME_LABEL = """\
pressed = [0]
again_too = w.Button(description="again")
shown = w.Output()


def press(_=None):
    text = f"presses = {pressed[0]}\\n"
    shown.outputs = ({"output_type": "stream", "name": "stdout", "text": text},)


def count(_):
    pressed[0] += 1
    press()


press()
again_too.on_click(count)
w.VBox([again_too, shown])
"""

# A cell that prints a control's value when it runs: RUN_CELL runs it again.
HARNESS_RUN_AGAIN = 'print(f"n at last run = {n.value}")'


def _write_notebook(folder: Path, name: str, *sources: str) -> str:
    folder.mkdir(exist_ok=True)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {name}")]
    nb.cells += [nbformat.v4.new_code_cell(source) for source in sources]
    nbformat.write(nb, folder / f"{name}.ipynb")
    return f"{folder.name}/{name}.ipynb"


@pytest.mark.ui
def test_harness_moves_every_kind_of_control(lab, notebook, record) -> None:
    relative = _write_notebook(
        lab.root_dir / "_harness",
        "controls",
        HARNESS_CONTROLS,
        HARNESS_SAME_LABEL,
        HARNESS_RUN_AGAIN,
    )
    notebook.open(relative, "_harness_controls")
    notebook.run_all(timeout_s=60)
    notebook.assert_no_errors()
    record(notebook.screenshot())
    assert sorted(notebook.controls()) == sorted(
        [
            ("slider", "n"),
            ("slider", "x"),
            ("slider", "rate"),
            ("slider", "d"),
            ("checkbox", "scaled"),
            ("toggle", "mask"),
            ("toggle", "off"),
            ("toggle", "on"),
            ("dropdown", "kind"),
            ("text", "size"),
            ("button", "again"),
            ("button", "again"),
            ("slider", "idle"),
        ]
    )
    moves_and_results = [
        (
            Interaction("n", "slider", "ArrowRight", line("n squared"), "increases"),
            "n squared = 16",
        ),
        (Interaction("n", "slider", "End", line("n squared"), "increases"), "n squared = 100"),
        (Interaction("n", "slider", "ArrowLeft", IMAGE), "1 image(s)"),
        (Interaction("x", "slider", "type:0.5", line("inverse x"), "increases"), "inverse x = 2"),
        (Interaction("rate", "slider", "End", line("rate"), "increases"), "rate = 1e-01"),
        (Interaction("d", "slider", "End", line("d"), "increases"), "d = 8"),
        (Interaction("scaled", "checkbox", "click", r"flags = \w+ \w+"), "flags = True False"),
        (Interaction("mask", "toggle", "click", r"flags = \w+ \w+"), "flags = True True"),
        (Interaction("on", "toggle", "click", r"mode = \w+"), "mode = on"),
        (Interaction("kind", "dropdown", "max", r"kind = \w+"), "kind = max"),
        (Interaction("size", "text", "10", line("size cubed"), "increases"), "size cubed = 1,000"),
        (
            Interaction(
                "again", "button", "click", line("clicks"), "increases", cell="on_click(click)"
            ),
            "clicks = 1",
        ),
        (
            Interaction("again", "button", "click", line("presses"), "increases", cell="again_too"),
            "presses = 1",
        ),
        (
            Interaction("n at last run = {", RUN_CELL, "run", line("n at last run"), "increases"),
            "n at last run = 9",
        ),
    ]
    for index, (move, expected) in enumerate(moves_and_results):
        result = notebook.perform(move, index)
        record(result)
        assert result.after.startswith(expected)
        assert 0 < result.seconds < 15

    with pytest.raises(AssertionError, match="did not change"):
        notebook.perform(Interaction("idle", "slider", "End", line("n squared")), 90, timeout_s=2)
    with pytest.raises(AssertionError, match="should make"):
        notebook.perform(Interaction("n", "slider", "Home", line("n squared"), "increases"), 91)
    with pytest.raises(AssertionError, match="expected one slider labelled 'absent'"):
        notebook.control("slider", "absent")
    with pytest.raises(AssertionError, match="expected one button labelled 'again', found 2"):
        notebook.control("button", "again")


@pytest.mark.ui
def test_harness_reports_a_failing_cell(lab, notebook) -> None:
    relative = _write_notebook(
        lab.root_dir / "_harness", "failing", "print('before')", "1 / 0", "print('never')"
    )
    notebook.open(relative, "_harness_failing")
    notebook.run_all(timeout_s=60)
    with pytest.raises(AssertionError, match="ZeroDivisionError"):
        notebook.assert_no_errors()


@pytest.mark.ui
def test_lab_serves_a_copy_without_autosave(lab) -> None:
    assert lab.root_dir.resolve() != NOTEBOOKS.parent.resolve()
    # the student's copies of the workbook, as `make lab` makes them; not the solved edition
    work = lab.root_dir / SERVED_AS[WORKBOOK]
    assert sorted(p.name for p in work.glob("*.ipynb")) == sorted(
        p.name for p in WORKBOOK.glob("*.ipynb")
    )
    for copy in work.glob("*.ipynb"):
        assert copy.read_bytes() == (WORKBOOK / copy.name).read_bytes(), copy.name
    assert not (lab.root_dir / "notebooks").exists()
    assert lab.setting("@jupyterlab/docmanager-extension:plugin", "autosave") is False
    assert lab.setting("@jupyterlab/extensionmanager-extension:plugin", "enabled") is False
    assert "Extension Manager is 'readonly'" in lab.log(last_chars=100_000)
