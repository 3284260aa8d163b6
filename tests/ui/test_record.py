"""The student's record in a real browser: in a copy of workbook 02 in my-work/ (as `make lab`
makes it), a wrong softmax is checked, the lesson's last cell shows the misconception and what
to revisit; after a kernel restart the fixed softmax is checked and the same cell shows it
solved at try 2, the first try's misconception still listed.

Run: `CI=true python -m pytest tests/ui/test_record.py` (JupyterLab and headless Chromium, see
ui_harness.py).
"""

from __future__ import annotations

import pytest

from .ui_harness import _KERNEL_IDLE_JS, NotebookSession

pytestmark = pytest.mark.ui

LESSON = "my-work/02_scaled_dot_product_attention.ipynb"
IMPORTS = "from gptlib.lessons.engine.checks import check"
STUB = "def softmax_rows(scores):"
CHECK = 'check("softmax-rows", softmax_rows)'
RECORD = 'show("02")'
WRONG = f"{STUB}\n    e = scores.exp()\n    return e / e.sum(dim=-1, keepdim=True)"
RIGHT = (
    f"{STUB}\n    e = (scores - scores.max(dim=-1, keepdim=True).values).exp()\n"
    "    return e / e.sum(dim=-1, keepdim=True)"
)

_SET_SOURCE_JS = """
([piece, text]) => {
  const cells = window.jupyterapp.shell.currentWidget.content.widgets;
  const found = cells.filter(c => c.model.sharedModel.getSource().includes(piece));
  if (found.length !== 1) return found.length;
  found[0].model.sharedModel.setSource(text);
  return 1;
}
"""
_RESTART_JS = "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart()"


def _write(notebook: NotebookSession, piece: str, text: str) -> None:
    """Type `text` into the one code cell holding `piece`, as a student replaces a stub."""
    assert notebook.page.evaluate(_SET_SOURCE_JS, [piece, text]) == 1, piece


def _run(notebook: NotebookSession, piece: str) -> str:
    """Run the one code cell holding `piece` (its editor, Ctrl+Enter) and return the text of
    its output once the kernel is idle again."""
    cell = notebook.code_cell(piece)
    cell.scroll_into_view_if_needed()
    cell.locator(".jp-InputArea-editor").click()
    notebook.page.keyboard.press("Control+Enter")
    prompt = cell.locator(".jp-InputPrompt")
    notebook.page.wait_for_function(
        f"([p]) => /^\\[\\d+\\]:$/.test(p.textContent.trim()) && ({_KERNEL_IDLE_JS})()",
        arg=[prompt.element_handle()],
        timeout=60_000,
        polling=100,
    )
    return "\n".join(cell.locator(".jp-OutputArea-output").all_inner_texts())


def test_the_record_shows_a_wrong_try_and_survives_a_kernel_restart(lab, notebook, record):
    notebook.open(LESSON, "record-02")
    _write(notebook, STUB, WRONG)
    for piece in (IMPORTS, STUB):
        _run(notebook, piece)
    assert "exp overflows" in _run(notebook, CHECK)
    shown = _run(notebook, RECORD)
    assert "Scaled dot-product attention" in shown and "softmax-rows" in shown
    assert "not solved yet (1 try)" in shown and "no-max-subtraction" in shown
    assert "2. Write it yourself › Exercise 1: a softmax that does not overflow" in shown
    table = notebook.code_cell(RECORD).locator("table.gptlib-record")
    assert table.count() == 1
    revisit = table.locator("a", has_text="Exercise 1: a softmax")
    href = revisit.get_attribute("href")  # JupyterLab resolves it against the notebook's folder
    assert f"/{LESSON}" in href and href.endswith("#Exercise-1:-a-softmax-that-does-not-overflow")

    notebook.page.evaluate(_RESTART_JS)
    notebook.page.wait_for_function(_KERNEL_IDLE_JS, timeout=60_000, polling=100)
    _write(notebook, STUB, RIGHT)
    for piece in (IMPORTS, STUB):
        _run(notebook, piece)
    assert "✔ softmax-rows" in _run(notebook, CHECK)
    shown = _run(notebook, RECORD)
    assert "solved at try 2" in shown, shown
    assert "no-max-subtraction" in shown  # the first kernel's try, read back from the file
    notebook.assert_no_errors()
    notebook.code_cell(RECORD).locator(".jp-Cell-outputArea").evaluate(
        "e => e.scrollIntoView({block: 'end'})"
    )
    shot = notebook.screenshot_dir / "record-02__after-restart.png"
    notebook.page.screenshot(path=str(shot))
    record(shot)
