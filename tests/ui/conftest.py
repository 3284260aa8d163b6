"""Fixtures of the browser UI tests: one JupyterLab and one Chromium for the whole session.

JupyterLab serves a temporary folder laid out as a student's (`serve_course`): my-work/, the
copies of the workbook that `make lab` makes (scripts/editions.py open), and docs/ with the
maintainers' notebook; never the repository itself (JupyterLab would write into the files it
opens). Screenshots go to ui-screenshots/ (git-ignored), emptied at the start of each session,
with a summary.txt of every widget update measured. Without Chromium or Playwright every UI
test skips and says how to enable them, except in CI (CI=true), where each of them fails and
says why: CI must not pass with the browser tests silently skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .ui_harness import (
    CHROMIUM,
    CHROMIUM_ARGS,
    REPO_ROOT,
    LabServer,
    Measurement,
    NotebookSession,
    browser_missing,
    clean_dir,
    serve_course,
    when_browser_missing,
)

SCREENSHOTS = REPO_ROOT / "ui-screenshots"
UPDATE_GOAL_S = 0.5

MEASUREMENTS: list[Measurement] = []
SCREENSHOTS_TAKEN: list[Path] = []
RUN_ALL_SECONDS: dict[str, float] = {}


@pytest.fixture(scope="session")
def ui_available() -> None:
    reason = browser_missing()
    if reason:
        outcome, message = when_browser_missing(reason, os.environ)
        if outcome == "fail":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


@pytest.fixture(scope="session")
def screenshot_dir(ui_available) -> Path:
    clean_dir(SCREENSHOTS)
    return SCREENSHOTS


@pytest.fixture(scope="session")
def lab(ui_available, tmp_path_factory):
    served = tmp_path_factory.mktemp("served")
    serve_course(served)
    server = LabServer(served, tmp_path_factory.mktemp("lab-state"), REPO_ROOT)
    try:
        server.wait_until_ready()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def browser_context(ui_available):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        # One context for the session, so JupyterLab's scripts are cached after the first page.
        context = browser.new_context(viewport={"width": 1280, "height": 1000})
        yield context
        browser.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    if report.when == "call" and report.failed:
        item.ui_failed = True


@pytest.fixture(scope="session")
def pages(browser_context):
    """The page that runs JupyterLab, kept from test to test; a failed test's page is closed
    and the next test gets a new one, so nothing a failure left behind leaks."""
    kept: list = []
    yield kept
    for page in kept:
        page.close()


@pytest.fixture
def notebook(request, lab, browser_context, pages, screenshot_dir):
    """A NotebookSession in the shared page; afterwards (with a screenshot if the test failed)
    its notebook is closed and every kernel the test started is shut down."""
    if not pages:
        pages.append(browser_context.new_page())
    session = NotebookSession(pages[0], lab, screenshot_dir)
    try:
        yield session
    finally:
        failed = getattr(request.node, "ui_failed", False)
        if failed and session.name:
            shot = screenshot_dir / f"{session.name}__failed.png"
            session.page.screenshot(path=str(shot))
            SCREENSHOTS_TAKEN.append(shot)
        if session.run_all_seconds is not None:
            RUN_ALL_SECONDS[session.name] = session.run_all_seconds
        if failed:
            pages.pop().close()
        else:
            session.close()
        lab.shut_down_kernels()


@pytest.fixture
def record():
    """Call with a Measurement or a screenshot path; both are listed in the session summary."""

    def add(item: Measurement | Path) -> None:
        if isinstance(item, Measurement):
            MEASUREMENTS.append(item)
            SCREENSHOTS_TAKEN.append(item.screenshot)
        else:
            SCREENSHOTS_TAKEN.append(item)

    return add


def _summary_lines() -> list[str]:
    lines = ["Run All (menu click -> every cell executed, kernel idle):"]
    lines += [f"  {seconds:z7.1f} s   {name}" for name, seconds in RUN_ALL_SECONDS.items()]
    lines.append(f"widget updates (browser input -> changed output; goal < {UPDATE_GOAL_S} s):")
    for m in sorted(MEASUREMENTS, key=lambda m: -m.seconds):
        flag = "" if m.seconds < UPDATE_GOAL_S else "  (over the goal)"
        lines.append(
            f"  {m.seconds * 1000:z7.1f} ms  {m.notebook}: {m.interaction.kind} "
            f"{m.interaction.control!r} {m.interaction.action}: {m.before!r} -> {m.after!r}{flag}"
        )
    lines.append(f"screenshots ({len(SCREENSHOTS_TAKEN)}) in {SCREENSHOTS}:")
    lines += [f"  {path.name}" for path in SCREENSHOTS_TAKEN]
    return lines


def pytest_terminal_summary(terminalreporter) -> None:
    if not MEASUREMENTS and not SCREENSHOTS_TAKEN:
        return
    lines = _summary_lines()
    terminalreporter.section("browser UI")
    for line in lines:
        terminalreporter.write_line(line)
    (SCREENSHOTS / "summary.txt").write_text("\n".join(lines) + "\n")
