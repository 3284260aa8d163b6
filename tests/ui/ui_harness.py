"""Drive JupyterLab in headless Chromium: run a notebook, move its widgets, time the updates.

The pieces, in the order a test uses them:

- `browser_missing()` says why the UI tests cannot run here (and how to enable them), or None;
  `when_browser_missing()` decides what then happens: a skip on a user's machine, a failure
  in CI.
- `serve_course` lays out, in a temporary folder, what a student's JupyterLab shows: `my-work/`,
  the student's copies of the workbook (`workbook/NN_name.ipynb`, the edition every route into
  the course opens), made by `scripts/editions.py open` as `make lab` makes them, and `docs/`
  with the maintainers' notebook (`docs/under_the_hood.ipynb`). The solved notebooks
  (`notebooks/`) are not served: no UI test needs their stored outputs (Run All clears them).
- `LabServer` starts JupyterLab on 127.0.0.1 on a free port with a random token, serving that
  folder, with autosave and the news check off, the extension manager read-only, and kernels
  on the CPU with the repo importable (so a workbook's setup cell does nothing).
- `NotebookSession` wraps one Playwright page: `open`, `run_all`, `assert_no_errors`,
  `controls` (every slider, toggle, dropdown... on the page, by label), `perform` (move one
  control, or run one cell again, and wait for its cell's output to change, timed in the
  browser), `screenshot`.
- `Interaction` and `NotebookSpec` are the rows of the per-notebook table in `test_widgets.py`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tests.scripts import load_script

REPO_ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO_ROOT / "notebooks"  # the solved edition, with stored outputs: not served
WORKBOOK = REPO_ROOT / "workbook"  # the student edition, served as my-work/ (`serve_course`)
DOCS = REPO_ROOT / "docs"  # the maintainers' notebook, docs/under_the_hood.ipynb
# Where each repository folder that a NotebookSpec may name is served: the student's copies of
# the workbook are in my-work/, as after `make lab`; docs/ as it is (its notebook runs there).
SERVED_AS = {WORKBOOK: "my-work", DOCS: "docs"}
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
HOW_TO_ENABLE = (
    "to enable the browser UI tests: `apt-get install chromium` and `pip install playwright` "
    "(or run scripts/install_browser.sh)"
)

# User settings of the served JupyterLab, one file per plugin (JUPYTERLAB_SETTINGS_DIR layout).
# Autosave off: nothing is written back, even into the temporary copy. No news or update
# checks (there is no network). Windowing off, so that every cell is in the DOM while we search.
LAB_SETTINGS = {
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
    "@jupyterlab/apputils-extension/notification": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    "@jupyterlab/extensionmanager-extension/plugin": {"enabled": False},
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
}

# What a UI test does when the browser is missing (see `when_browser_missing`).
Outcome = Literal["skip", "fail"]

CONTROL_KINDS = ("slider", "checkbox", "toggle", "dropdown", "text", "button", "answer")
# `Interaction.kind` that runs a code cell again instead of moving a control.
RUN_CELL = "cell"
# `Interaction.watch` for a control that redraws a figure: the images of its cell must change.
IMAGE = "<image>"


def browser_missing() -> str | None:
    """Why the UI tests cannot run on this machine (with how to fix it), or None if they can."""
    missing = []
    if not CHROMIUM.exists():
        missing.append(f"no Chromium at {CHROMIUM}")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("Python Playwright is not installed")
    return f"{' and '.join(missing)}; {HOW_TO_ENABLE}" if missing else None


def running_in_ci(environ: Mapping[str, str]) -> bool:
    """Whether `environ` is a CI run's: CI set to anything but empty, 0, false or no."""
    return environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def when_browser_missing(reason: str, environ: Mapping[str, str]) -> tuple[Outcome, str]:
    """What the UI tests do when they cannot run (`reason`, from `browser_missing`): skip with
    the reason on a user's machine; fail in CI, which must run them and would otherwise pass
    with every browser test skipped."""
    if running_in_ci(environ):
        return "fail", f"CI must run the browser UI tests, but {reason}"
    return "skip", reason


@dataclass(frozen=True)
class Interaction:
    """One move of one control (or one re-run of a cell), and the change it must make to the
    output of the control's cell.

    control: the widget's description exactly as shown (plain text, not LaTeX); for kind
        RUN_CELL, a piece of the source of the code cell to run (e.g. "guess.reveal(").
    kind: one of CONTROL_KINDS, or RUN_CELL.
    action: slider: a key pressed on the handle ("ArrowRight", "End", "Home", "PageUp") or
        "type:VALUE" typed into the readout; dropdown: the option's label; text: the value
        typed (then Enter); checkbox, toggle, button: "click"; answer (a `Question`, found by
        its button's description): the answer typed into its box before the button is pressed;
        RUN_CELL: "run".
    watch: regex (valid in both Python and JavaScript) searched in the text of the widget
        outputs of the control's cell (for RUN_CELL, in all of the cell's output); group 1,
        when present, is read as a number ("1,234", "8.1e22" and "0.912" all parse). The
        match must change after the action. Or IMAGE: the images in the cell's output must
        change (a redrawn figure).
    expect: "changes", "increases" or "decreases" (the last two need a number in group 1).
    cell: a piece of the source of the code cell that holds the control, when its description
        alone is not unique on the page (two predictions each have a "commit" button).
    """

    control: str
    kind: str
    action: str
    watch: str
    expect: str = "changes"
    cell: str = ""

    def __post_init__(self) -> None:
        if self.kind not in (*CONTROL_KINDS, RUN_CELL):
            raise ValueError(f"kind={self.kind!r}; use one of {CONTROL_KINDS} or {RUN_CELL!r}")
        if self.kind == RUN_CELL and (self.action != "run" or self.cell):
            raise ValueError(
                "a RUN_CELL interaction has action 'run' and names its cell in control"
            )
        if self.expect not in ("changes", "increases", "decreases"):
            raise ValueError(f"expect={self.expect!r}; use changes, increases or decreases")
        if self.expect != "changes" and (self.watch == IMAGE or re.compile(self.watch).groups < 1):
            raise ValueError(f"expect={self.expect!r} needs a number captured by group 1 of watch")


@dataclass(frozen=True)
class NotebookSpec:
    """What to do with one notebook: its file pattern in `folder` and the moves to make.

    ignored: labels of controls on the page that are deliberately not moved, with the reason.
    folder: the repository folder the pattern is matched in, one of SERVED_AS: WORKBOOK (a
        lesson, driven where a student drives it: in the copy `make lab` makes in my-work/)
        or DOCS (the maintainers' notebook).
    """

    pattern: str
    interactions: tuple[Interaction, ...]
    ignored: dict[str, str] = field(default_factory=dict)
    run_timeout_s: float = 120.0
    folder: Path = WORKBOOK

    def __post_init__(self) -> None:
        if self.folder not in SERVED_AS:
            raise ValueError(
                f"folder={self.folder}: the UI tests serve {sorted(map(str, SERVED_AS))} only; "
                "add the folder to SERVED_AS and to serve_course"
            )

    def paths(self) -> list[Path]:
        """The repository's files that the pattern matches (one, when the spec is right)."""
        return sorted(self.folder.glob(self.pattern))

    def served_path(self, path: Path) -> str:
        """Where the served folder holds `path` (one of `paths()`), relative to its root."""
        return f"{SERVED_AS[self.folder]}/{path.name}"

    def where(self) -> str:
        """The pattern with its repository folder, for messages: 'workbook/02_*.ipynb'."""
        return f"{self.folder.relative_to(REPO_ROOT).as_posix()}/{self.pattern}"


@dataclass(frozen=True)
class Measurement:
    """The outcome of one `Interaction`: watched text before/after and the browser-side latency."""

    notebook: str
    interaction: Interaction
    before: str
    after: str
    seconds: float
    screenshot: Path


def parse_number(text: str) -> float:
    """'6,738,415,616' -> 6738415616.0; '8.1e22' -> 8.1e22; '0.912' -> 0.912."""
    return float(text.replace(",", "").replace("_", ""))


def serve_course(served: Path) -> list[str]:
    """Lay out in `served` what a student's JupyterLab shows (see the module docstring): the
    copies of the workbook in my-work/, made by the code `make lab` runs, and docs/'s notebooks.
    Returns what `scripts/editions.py open` said it did."""
    done = load_script("editions").open_workbook(WORKBOOK, served / SERVED_AS[WORKBOOK])
    (served / SERVED_AS[DOCS]).mkdir(parents=True, exist_ok=True)
    for notebook in DOCS.glob("*.ipynb"):
        shutil.copy2(notebook, served / SERVED_AS[DOCS] / notebook.name)
    return done


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LabServer:
    """A JupyterLab process serving `root_dir`, with its settings and state under `state_dir`."""

    def __init__(self, root_dir: Path, state_dir: Path, repo_root: Path) -> None:
        self.root_dir = root_dir
        self.state_dir = state_dir
        self.token = secrets.token_hex(16)
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log_path = state_dir / "jupyterlab.log"
        settings_dir = state_dir / "user-settings"
        for plugin, values in LAB_SETTINGS.items():
            path = settings_dir / f"{plugin}.jupyterlab-settings"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
        env = dict(os.environ)
        env.update(
            PYTHONPATH=str(repo_root),
            GPTLIB_DEVICE="cpu",
            JUPYTERLAB_SETTINGS_DIR=str(settings_dir),
            JUPYTERLAB_WORKSPACES_DIR=str(state_dir / "workspaces"),
            JUPYTER_CONFIG_DIR=str(state_dir / "config"),
            JUPYTER_RUNTIME_DIR=str(state_dir / "runtime"),
            IPYTHONDIR=str(state_dir / "ipython"),
        )
        command = [
            sys.executable,
            "-m",
            "jupyter",
            "lab",
            "--no-browser",
            "--allow-root",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={root_dir}",
            "--LabApp.extension_manager=readonly",
            # window.jupyterapp: later notebooks open in the running app, not a page reload
            "--LabApp.expose_app_in_browser=True",
        ]
        self._background = ThreadPoolExecutor(max_workers=1)
        self._shutdowns: list[Future] = []
        self._log = self.log_path.open("w")
        # Own process group: teardown ends the server and the kernels it started, and only them.
        self.process = subprocess.Popen(
            command,
            cwd=state_dir,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_until_ready(self, timeout_s: float = 90.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"JupyterLab exited with {self.process.returncode}:\n{self.log()}"
                )
            try:
                self.request("GET", "api/status")
                return
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.25)
        raise RuntimeError(f"JupyterLab did not answer within {timeout_s:z.0f} s:\n{self.log()}")

    def log(self, last_chars: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-last_chars:]

    def request(self, method: str, path: str) -> object:
        """Call the server's REST API at `path` (e.g. "api/sessions"); the decoded JSON reply."""
        request = urllib.request.Request(
            f"{self.base_url}/{path}",
            method=method,
            headers={"Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def notebook_url(self, relative_path: str) -> str:
        # `reset` starts from an empty workspace, so no tab of an earlier test is restored.
        quoted = urllib.parse.quote(relative_path)
        return f"{self.base_url}/lab/tree/{quoted}?token={self.token}&reset"

    def shut_down_kernels(self) -> None:
        """Ask the server to end every open session's kernel, without waiting for the kernels
        to exit (seconds each, which the next notebook's start can overlap); `stop` waits."""
        for session in self.request("GET", "api/sessions"):
            self._shutdowns.append(self._background.submit(self._end_session, session["id"]))

    def _end_session(self, session_id: str) -> None:
        try:
            self.request("DELETE", f"api/sessions/{session_id}")
        except urllib.error.HTTPError as error:
            # 404: already gone (an earlier call asked for it while its kernel was still ending)
            if error.code != 404:
                raise

    def setting(self, plugin_id: str, key: str) -> object:
        """The value JupyterLab's front end gets for one setting of one plugin."""
        return self.request("GET", f"lab/api/settings/{plugin_id}")["settings"][key]

    def stop(self) -> None:
        for shutdown in self._shutdowns:
            shutdown.result()
        self._background.shutdown()
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self._log.close()


# The status bar's kernel item reads e.g. "Python 3 (ipykernel) | Idle" once a kernel is up; the
# notebook toolbar's indicator alone says "idle" while there is no kernel yet.
_KERNEL_STATUS_ITEM = "#jp-main-statusbar .jp-StatusBar-TextItem[title^='Change kernel']"
_KERNEL_IDLE_JS = (
    "() => /^(?!No Kernel).+ [|] Idle$/.test("
    f"document.querySelector(\"{_KERNEL_STATUS_ITEM}\")?.textContent.trim() ?? '')"
)

# Every code cell (with code) shows an execution count and none is queued, and either all ran
# or Run All stopped at an error; and the kernel is idle.
_RUN_FINISHED_JS = """
() => {
  const panel = document.querySelector('.jp-NotebookPanel');
  if (!panel || !(KERNEL_IDLE)()) return false;
  const prompts = [...panel.querySelectorAll('.jp-CodeCell')]
    .filter(cell => (cell.querySelector('.cm-content')?.textContent ?? '').trim() !== '')
    .map(cell => cell.querySelector('.jp-InputPrompt').textContent.trim());
  if (prompts.some(p => p === '[*]:')) return false;
  const failed = [...panel.querySelectorAll('.jp-OutputArea-output')]
    .some(e => e.textContent.includes('Traceback'));
  return failed || prompts.every(p => /^\\[\\d+\\]:$/.test(p));
}
""".replace("KERNEL_IDLE", _KERNEL_IDLE_JS)

# Labels of every control on the page, as [kind, label] pairs.
_CONTROLS_JS = """
() => {
  const text = e => (e ? e.textContent.trim() : '');
  const found = [];
  const add = (kind, selector, label) =>
    document.querySelectorAll(selector).forEach(e => found.push([kind, label(e)]));
  add('slider', '.widget-slider', e => text(e.querySelector(':scope > label.widget-label')));
  add('checkbox', '.widget-checkbox', e => text(e.querySelector('.widget-label-basic span')));
  add('toggle', '.widget-toggle-button', e => text(e));
  add('dropdown', '.widget-dropdown', e => text(e.querySelector(':scope > label.widget-label')));
  add('text', '.widget-text', e => text(e.querySelector(':scope > label.widget-label')));
  add('button', '.widget-button', e => text(e));
  return found;
}
"""

# What a move must change in the control's cell: the first match of `pattern` in the text of its
# widget outputs (or, `everything` true, of all its outputs), or (pattern null) the sources of
# every image in its output area.
_WATCHED_JS = """
([cell, pattern, everything]) => {
  if (pattern === null) {
    const sources = [...cell.querySelectorAll('.jp-Cell-outputArea img')].map(img => img.src);
    return sources.length ? sources.join(' ') : null;
  }
  const outputs = everything ? '.jp-OutputArea-output' : '.widget-output';
  const text = [...cell.querySelectorAll(outputs)].map(e => e.innerText).join('\\n');
  const m = text.match(new RegExp(pattern));
  return m ? m[0] : null;
}
"""

# Record when the watched value first differs from `before`, and the times of user input
# (key, pointer, change), to measure from the last input before that moment.
_INSTALL_WATCH_JS = """
([cell, pattern, everything, before]) => {
  window.__uiWatch?.stop();
  const watched = WATCHED;
  const state = { inputs: [], changedAt: null };
  const onInput = () => state.inputs.push(performance.now());
  const inputTypes = ['keydown', 'pointerdown', 'change'];
  inputTypes.forEach(type => window.addEventListener(type, onInput, true));
  const observer = new MutationObserver(() => {
    const now = watched([cell, pattern, everything]);
    if (state.changedAt === null && now !== null && now !== before) {
      state.changedAt = performance.now();
      state.stop();
    }
  });
  state.stop = () => {
    observer.disconnect();
    inputTypes.forEach(type => window.removeEventListener(type, onInput, true));
  };
  observer.observe(cell, { subtree: true, childList: true, characterData: true, attributes: true });
  window.__uiWatch = state;
}
""".replace("WATCHED", _WATCHED_JS.strip())

_WATCH_LATENCY_JS = """
() => {
  const state = window.__uiWatch;
  const inputs = state.inputs.filter(t => t <= state.changedAt);
  if (state.changedAt === null || inputs.length === 0) return null;
  return (state.changedAt - inputs[inputs.length - 1]) / 1000;
}
"""


def _shown(watch: str, value: str) -> str:
    """A watched value for messages and the summary: the text, or a digest of image sources."""
    if watch != IMAGE:
        return value
    return f"{len(value.split())} image(s) #{hashlib.sha1(value.encode()).hexdigest()[:8]}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-") or "control"


class NotebookSession:
    """One notebook open in a browser page that runs JupyterLab.

    The first notebook loads JupyterLab with its URL; later ones open inside the running app
    (JupyterLab's `docmanager:open` command), which saves the app's start-up, about 2.5 s a
    notebook. `close` disposes the notebook's tab, so each test sees only its own notebook.
    """

    def __init__(self, page, lab: LabServer, screenshot_dir: Path) -> None:
        self.page = page
        self.lab = lab
        self.screenshot_dir = screenshot_dir
        self.name = ""
        self.run_all_seconds: float | None = None

    def open(self, relative_path: str, name: str) -> None:
        """Open a notebook (a path relative to the served folder, such as my-work/02_x.ipynb)
        and wait for its kernel."""
        self.name = name
        if self.page.evaluate("() => Boolean(window.jupyterapp?.started)"):
            self.page.evaluate(
                "path => window.jupyterapp.commands.execute('docmanager:open', {path})",
                relative_path,
            )
        else:
            self.page.goto(self.lab.notebook_url(relative_path))
        self.page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(timeout=60_000)
        self._kernel_idle(timeout_s=60)
        # Clicking the open tab of the left sidebar (the file browser) folds it: more room.
        open_tab = self.page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current")
        if open_tab.count():
            open_tab.click()

    def close(self) -> None:
        """Dispose every tab of the main area (no save dialog: autosave is off, nothing is
        written); the server's kernels are shut down separately (`LabServer.shut_down_kernels`)."""
        self.page.evaluate(
            "() => { for (const w of Array.from(window.jupyterapp?.shell.widgets('main') ?? []))"
            " w.dispose(); }"
        )
        self.name, self.run_all_seconds = "", None

    def _kernel_idle(self, timeout_s: float) -> None:
        self.page.wait_for_function(_KERNEL_IDLE_JS, timeout=timeout_s * 1000, polling=50)

    def _menu(self, menu: str, item: str) -> None:
        self.page.get_by_role("menuitem", name=menu, exact=True).click()
        self.page.get_by_role("menuitem", name=item, exact=True).click()

    def run_all(self, timeout_s: float) -> float:
        """Clear the stored outputs, Run All Cells from the menu, wait until done; seconds taken
        (also kept in `run_all_seconds`)."""
        self._menu("Edit", "Clear Outputs of All Cells")
        start = time.perf_counter()
        self._menu("Run", "Run All Cells")
        try:
            self.page.wait_for_function(_RUN_FINISHED_JS, timeout=timeout_s * 1000, polling=100)
        except Exception as error:  # Playwright's TimeoutError: say where the run stood
            shot = self.screenshot_dir / f"{self.name}__run-all-timeout.png"
            self.page.screenshot(path=str(shot))
            prompts = self.page.locator(".jp-NotebookPanel .jp-InputPrompt").all_inner_texts()
            raise AssertionError(
                f"{self.name}: Run All did not finish within {timeout_s} s; prompts {prompts}, "
                f"kernel {self._kernel_status()}; screenshot {shot}"
            ) from error
        self.run_all_seconds = time.perf_counter() - start
        return self.run_all_seconds

    def _kernel_status(self) -> str:
        return self.page.locator(_KERNEL_STATUS_ITEM).inner_text()

    def errors(self) -> list[str]:
        """Texts of tracebacks and widget render failures anywhere in the notebook."""
        texts = self.page.locator(".jp-NotebookPanel .jp-OutputArea-output").all_inner_texts()
        markers = ("Traceback", "Error displaying widget", "Failed to load model class")
        return [text for text in texts if any(marker in text for marker in markers)]

    def assert_no_errors(self) -> None:
        errors = self.errors()
        assert not errors, f"{self.name}: error output in the notebook:\n" + "\n---\n".join(errors)

    def controls(self) -> list[tuple[str, str]]:
        return [tuple(pair) for pair in self.page.evaluate(_CONTROLS_JS)]

    def code_cell(self, source: str):
        """The one code cell whose source contains `source`."""
        cell = self.page.locator(".jp-NotebookPanel .jp-CodeCell").filter(
            has=self.page.locator(".cm-content", has_text=source)
        )
        count = cell.count()
        if count != 1:
            raise AssertionError(
                f"{self.name}: expected one code cell with {source!r}, found {count}"
            )
        return cell

    def control(self, kind: str, label: str, cell: str = ""):
        """The element to act on for the control of this kind whose description is `label`
        (searched in the code cell whose source contains `cell`, if given)."""
        page = self.page
        scope = self.code_cell(cell) if cell else page
        exact = re.compile(rf"^\s*{re.escape(label)}\s*$")
        label_of = page.locator("label.widget-label", has_text=exact)
        if kind == "slider":
            box = scope.locator(".widget-slider").filter(has=label_of)
        elif kind == "checkbox":
            box = scope.locator(".widget-checkbox").filter(
                has=page.locator(".widget-label-basic span", has_text=exact)
            )
        elif kind == "toggle":
            box = scope.locator(".widget-toggle-button").filter(has_text=exact)
        elif kind == "dropdown":
            box = scope.locator(".widget-dropdown").filter(has=label_of)
        elif kind == "text":
            box = scope.locator(".widget-text").filter(has=label_of)
        else:  # a button, or the commit button of a question (kind "answer")
            box = scope.locator(".widget-button").filter(has_text=exact)
        count = box.count()
        if count != 1:
            raise AssertionError(
                f"{self.name}: expected one {kind} labelled {label!r}, found {count}; "
                f"controls on the page: {self.controls()}"
            )
        return box

    def cell_of(self, locator):
        return locator.locator("xpath=ancestor::div[contains(@class, 'jp-CodeCell')][1]")

    def widget_text(self, cell) -> str:
        return "\n".join(cell.locator(".widget-output").all_inner_texts())

    def _act(self, box, interaction: Interaction) -> None:
        kind, action = interaction.kind, interaction.action
        if kind == RUN_CELL:  # box is the cell: into its editor, then run it without advancing
            box.locator(".jp-InputArea-editor").click()
            self.page.keyboard.press("Control+Enter")
        elif kind == "slider" and action.startswith("type:"):
            readout = box.locator(".widget-readout")  # contenteditable; Enter submits it
            readout.fill(action.removeprefix("type:"))
            readout.press("Enter")
        elif kind == "slider":
            box.locator(".noUi-handle").first.press(action)
        elif kind == "checkbox":
            box.locator("input[type=checkbox]").click()
        elif kind == "dropdown":
            box.locator("select").select_option(label=action)
        elif kind == "text":
            field_ = box.locator("input")
            field_.fill(action)
            field_.press("Enter")
        elif kind == "answer":
            self.cell_of(box).locator(".widget-textarea textarea").fill(action)
            box.click()
        else:
            box.click()

    def watched(self, cell, watch: str, everything: bool = False) -> str | None:
        """The current value of `watch` (a regex, or IMAGE) in one cell's widget outputs (all
        of its outputs if `everything`); None if absent."""
        handle = cell.element_handle()
        return self.page.evaluate(
            _WATCHED_JS, [handle, None if watch == IMAGE else watch, everything]
        )

    def perform(self, interaction: Interaction, index: int, timeout_s: float = 15.0):
        """Move one control (or run one cell), wait for its cell's watched output to change;
        a `Measurement`."""
        if interaction.kind == RUN_CELL:
            box = cell = self.code_cell(interaction.control)
        else:
            box = self.control(interaction.kind, interaction.control, interaction.cell)
            # Found by its source, the cell stays found when the control's label changes
            # (a prediction's "commit" button reads "committed" once clicked).
            cell = self.code_cell(interaction.cell) if interaction.cell else self.cell_of(box)
        box.scroll_into_view_if_needed()
        watch, everything = interaction.watch, interaction.kind == RUN_CELL
        before = self.watched(cell, watch, everything)
        assert before is not None, (
            f"{self.name}: {watch!r} not found in the output of the cell holding "
            f"{interaction.control!r} before moving it; its widget output reads:\n"
            f"{self.widget_text(cell)}"
        )
        pattern = None if watch == IMAGE else watch
        self.page.evaluate(_INSTALL_WATCH_JS, [cell.element_handle(), pattern, everything, before])
        self._act(box, interaction)
        try:
            self.page.wait_for_function(
                "() => window.__uiWatch.changedAt !== null", timeout=timeout_s * 1000, polling=50
            )
        except Exception as error:  # Playwright's TimeoutError, with the page's state attached
            raise AssertionError(
                f"{self.name}: {interaction.kind} {interaction.control!r} ({interaction.action}) "
                f"did not change {_shown(watch, before)} within {timeout_s} s; the widget "
                f"output reads:\n{self.widget_text(cell)}\nerrors: {self.errors()}"
            ) from error
        seconds = self.page.evaluate(_WATCH_LATENCY_JS)
        assert seconds is not None, f"{self.name}: no key, pointer or change event was seen"
        self._kernel_idle(timeout_s=timeout_s)
        after = self.watched(cell, watch, everything)
        assert after is not None, (
            f"{self.name}: {watch!r} vanished; the widget output reads:\n{self.widget_text(cell)}"
        )
        self.assert_no_errors()
        self._check_direction(interaction, before, after)
        shot = self.screenshot_dir / (
            f"{self.name}__{index:02d}_{interaction.kind}-{_slug(interaction.control)}.png"
        )
        # The controls sit above their output: bring the output's end to the bottom of the view.
        cell.locator(".jp-Cell-outputArea").evaluate("e => e.scrollIntoView({block: 'end'})")
        self.page.screenshot(path=str(shot))
        return Measurement(
            self.name, interaction, _shown(watch, before), _shown(watch, after), seconds, shot
        )

    def _check_direction(self, interaction: Interaction, before: str, after: str) -> None:
        assert before != after, f"{self.name}: {interaction.watch!r} changed, then came back"
        if interaction.expect == "changes":
            return
        pattern = re.compile(interaction.watch)
        old = parse_number(pattern.search(before)[1])
        new = parse_number(pattern.search(after)[1])
        assert new > old if interaction.expect == "increases" else new < old, (
            f"{self.name}: moving {interaction.control!r} ({interaction.action}) should make "
            f"{interaction.watch!r} {interaction.expect[:-1]}, but it went {old} -> {new}"
        )

    def screenshot(self) -> Path:
        """The notebook after Run All, scrolled to its first widget when it has one."""
        first_widget = self.page.locator(".jp-NotebookPanel .jupyter-widgets").first
        if first_widget.count():
            first_widget.scroll_into_view_if_needed()
        path = self.screenshot_dir / f"{self.name}.png"
        self.page.screenshot(path=str(path))
        return path


def clean_dir(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
