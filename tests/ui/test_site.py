"""The course website in headless Chromium: the landing page and every notebook page, served
on 127.0.0.1 from the site `make site` builds (the session's `built_site`, tests/conftest.py).

Each page: no console error, failed request or script error from the page's own assets; every
image loaded (naturalWidth > 0) and described (its alt text is words, not its file's path: what
a screen reader says for it); every piece of math typeset by the local MathJax, without a TeX
error. The course map links to every notebook page; each notebook page carries its launch
links, which open the notebook's workbook (`make lab`: the student's copy in my-work/). The
maintainers' notebook, docs/under_the_hood.ipynb, is a guide page whose links open itself.
Screenshots go to ui-screenshots/site__*.png.

Run: `PYTHONPATH=$PWD python -m pytest -m ui tests/ui/test_site.py`.
"""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path
from urllib.parse import urljoin

import pytest

pytest.importorskip("jupyter_book", reason='the website\'s tools: pip install -e ".[site]"')

from book import course  # noqa: E402
from book.check_links import Image  # noqa: E402
from book.launch import binder_url, launch_path, local_commands, my_work_path  # noqa: E402

pytestmark = pytest.mark.ui

# Screenshots of notebook pages: (file name prefix, what to scroll to, screenshot name)
SCREENSHOTS = (
    ("02_", ".course-launch", "site__02_top"),
    # a folded solution (guard cells, tag `guard`, fold behind "Show the maintainers' checks")
    ("02_", ".cell:not(.tag_guard) > details.hide", "site__02_exercise"),
    ("02_", ".tag_guard details.hide", "site__02_guard"),
    ("03_", ".cell_output img", "site__03_figure"),
    ("09_", ".course-widget", "site__09_widget"),
)

# Sphinx wraps each piece of math in span.math / div.math (with "notranslate"); MathJax 3 puts
# an mjx-container inside each, and an mjx-merror where TeX could not be read.
_MATH_STATE_JS = """async () => {
  if (window.MathJax && MathJax.startup) await MathJax.startup.promise;
  const boxes = Array.from(
      document.querySelectorAll('span.math.notranslate, div.math.notranslate'));
  return {
    mathjax: Boolean(window.MathJax && MathJax.startup),
    boxes: boxes.length,
    typeset: boxes.filter(box => box.querySelector('mjx-container')).length,
    errors: document.querySelectorAll('mjx-merror').length,
  };
}"""

_IMAGES_JS = """async () => {
  const images = Array.from(document.images);
  await Promise.all(images.map(img => img.complete ? null :
      new Promise(done => { img.onload = img.onerror = done; })));
  return images.map(img => [img.getAttribute('src'), img.naturalWidth, img.getAttribute('alt')]);
}"""


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def site_url(built_site, ui_available):
    """The built site, served on a free port of 127.0.0.1 for this module's tests."""
    handler = functools.partial(_QuietHandler, directory=str(built_site.html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def site_page(browser_context, site_url):
    """A new page that records every console error, script error and failed request."""
    page = browser_context.new_page()
    page.problems = []
    page.on(
        "console",
        lambda msg: msg.type == "error" and page.problems.append(f"console: {msg.text}"),
    )
    page.on("pageerror", lambda error: page.problems.append(f"script error: {error}"))
    page.on(
        "requestfailed",
        lambda request: page.problems.append(f"failed: {request.url} ({request.failure})"),
    )
    page.on(
        "response",
        lambda response: (
            response.status >= 400
            and page.problems.append(f"HTTP {response.status}: {response.url}")
        ),
    )
    yield page
    page.close()


def _open(page, url: str) -> dict:
    """Load `url`, wait for its images and its math; the page's state for the assertions."""
    page.goto(url, wait_until="load")
    return {"images": page.evaluate(_IMAGES_JS), "math": page.evaluate(_MATH_STATE_JS)}


def _assert_clean(page, url: str, state: dict) -> None:
    assert not page.problems, f"{url}:\n" + "\n".join(page.problems)
    broken = [src for src, width, _ in state["images"] if width <= 0]
    assert not broken, f"{url}: images that did not load: {broken}"
    undescribed = [src for src, _, alt in state["images"] if not Image(url, src, alt).described()]
    assert not undescribed, f"{url}: images without a description: {undescribed}"
    math = state["math"]
    assert math["mathjax"] or not math["boxes"], f"{url}: math, but no MathJax: {math}"
    assert math["typeset"] == math["boxes"], f"{url}: math not typeset: {math}"
    assert math["errors"] == 0, f"{url}: TeX errors on the page: {math}"


def _screenshot(page, screenshot_dir: Path, name: str, record) -> None:
    path = screenshot_dir / f"{name}.png"
    page.screenshot(path=str(path))
    record(path)


def test_landing_page_maps_the_course(site_page, site_url, screenshot_dir, record):
    state = _open(site_page, site_url)
    _assert_clean(site_page, site_url, state)
    hrefs = site_page.eval_on_selector_all(
        "main a[href]", "links => links.map(a => a.getAttribute('href'))"
    )
    linked = {urljoin(site_url, href).split("#")[0] for href in hrefs}
    expected = {urljoin(site_url, f"{n.docname}.html") for n in course.notebooks()}
    assert expected <= linked, f"course map misses {sorted(expected - linked)}"
    _screenshot(site_page, screenshot_dir, "site__index", record)
    site_page.locator("#course-map").scroll_into_view_if_needed()
    _screenshot(site_page, screenshot_dir, "site__index_course_map", record)


@pytest.mark.parametrize("notebook", course.notebooks(), ids=lambda n: Path(n.path).stem)
def test_notebook_page(notebook, site_page, site_url, built_site, screenshot_dir, record):
    url = urljoin(site_url, f"{notebook.docname}.html")
    state = _open(site_page, url)
    _assert_clean(site_page, url, state)
    assert state["images"] or not _has_figures(notebook), f"{url}: the notebook's figures"

    _assert_launch_links(site_page, built_site, notebook.path)

    for prefix, selector, name in SCREENSHOTS:
        if Path(notebook.path).name.startswith(prefix):
            target = site_page.locator(selector).first
            assert target.count(), f"{url}: nothing matches {selector!r} for {name}.png"
            target.scroll_into_view_if_needed()
            _screenshot(site_page, screenshot_dir, name, record)


UNDER_THE_HOOD = "docs/under_the_hood.ipynb"


def test_the_maintainers_notebook_page(site_page, site_url, built_site, screenshot_dir, record):
    url = urljoin(site_url, UNDER_THE_HOOD.replace(".ipynb", ".html"))
    state = _open(site_page, url)
    _assert_clean(site_page, url, state)
    assert state["images"], f"{url}: its stored figure"
    _assert_launch_links(site_page, built_site, UNDER_THE_HOOD)
    assert "Colab" not in site_page.locator(".course-launch").inner_text()
    _screenshot(site_page, screenshot_dir, "site__under_the_hood", record)


def _assert_launch_links(page, built_site, notebook_path: str) -> None:
    """The page's one launch box opens what a student opens: the notebook's workbook where it
    has one (make lab: the copy in my-work/ it makes first), else the notebook itself."""
    opens = launch_path(notebook_path)
    launch = page.locator(".course-launch")
    assert launch.count() == 1
    binder = launch.locator("a.course-launch-link", has_text="Binder")
    assert binder.get_attribute("href") == binder_url(built_site.repo, opens)
    make_lab, jupyter_lab = local_commands(opens)
    if opens != notebook_path:
        assert make_lab == f"make lab NOTEBOOK={my_work_path(opens)}"
    text = launch.inner_text()
    assert make_lab in text and jupyter_lab in text, text


def _has_figures(notebook) -> bool:
    text = (Path(__file__).resolve().parents[2] / notebook.path).read_text(encoding="utf-8")
    return '"image/png"' in text
