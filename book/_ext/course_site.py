"""Sphinx extension of the course website (book/_config.yml loads it).

- Every notebook page opens with a "Run this notebook" box: Binder, JupyterHub and Colab links
  built by book/launch.py from the repository address (`repository.url` / `.branch` of the
  book's configuration) and the hosts `course_binderhub_url` / `course_jupyterhub_url` (an
  empty host leaves its link out; Colab is linked for GitHub repositories, and only for a
  workbook whose first cell installs gptlib from this repository), and the commands that open
  the notebook in a local JupyterLab. Where the repository has the notebook's workbook
  (workbook/NN_name.ipynb, its exercises unsolved), every one of them opens the workbook
  (`make lab`: the student's copy of it, my-work/NN_name.ipynb, which make lab makes first);
  the page shows the solved notebook.
  A notebook without a workbook (the maintainers' docs/under_the_hood.ipynb) opens itself.
- A live widget's output (a widget-view reference, which needs a kernel) becomes a short note;
  the static rendering the notebook draws beside each widget shows on the page.
- Every figure of a notebook (an image output) gets its description as its alt text: the
  `alt` that gptlib's plots put in the output's metadata (gptlib.lessons.engine.figures), which
  MyST-NB does not read itself. An image without one keeps the file path Sphinx writes, which
  tests/test_site.py counts.
- MathJax 3 is copied from the django-static-mathjax package (MathJax's own es5 build; the
  package needs no Django) into `_static/mathjax`, so that the pages typeset math with no
  network.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from binascii import a2b_base64
from pathlib import Path, PurePosixPath

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

from book.launch import (
    MY_WORK,
    ROOT,
    Repository,
    binder_url,
    colab_url,
    jupyterhub_url,
    launch_path,
    local_commands,
)

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# Image types of a notebook output: base64 text, and SVG (text as it is)
BASE64_IMAGES = ("image/png", "image/jpeg", "image/gif")
SVG = "image/svg+xml"
WIDGET_NOTE = (
    "Interactive widget: its controls need a running Python kernel. Open this notebook in "
    "JupyterLab (see “Run this notebook” at the top of the page) to move them."
)


def _repository(app: Sphinx) -> Repository | None:
    options = app.config.html_theme_options
    url = options.get("repository_url", "")
    return Repository(url, options.get("repository_branch") or "main") if url else None


def _text(*parts: str | nodes.Node) -> nodes.paragraph:
    paragraph = nodes.paragraph()
    for part in parts:
        paragraph += nodes.Text(part) if isinstance(part, str) else part
    return paragraph


def _command(command: str) -> nodes.literal_block:
    block = nodes.literal_block(command, command)
    block["language"] = "bash"
    return block


def installs_from(workbook: Path, repo: Repository) -> bool:
    """Whether the workbook's first code cell installs gptlib from `repo` (what Colab needs)."""
    cells = json.loads(workbook.read_text(encoding="utf-8"))["cells"]
    first = next(("".join(c["source"]) for c in cells if c["cell_type"] == "code"), "")
    return re.search(rf'"gptlib(\[[\w,]+\])? @ git\+{re.escape(repo.url)}"', first) is not None


def _online_links(
    app: Sphinx, repo: Repository, path: str, workbook: bool, root: Path
) -> list[tuple[str, str]]:
    """(label, url) of each online launch link that opens `path`; Colab only for a workbook
    that installs gptlib from this repository."""
    links = []
    if app.config.course_binderhub_url:
        links.append(("Binder", binder_url(repo, path, app.config.course_binderhub_url)))
    if app.config.course_jupyterhub_url:
        links.append(("JupyterHub", jupyterhub_url(repo, path, app.config.course_jupyterhub_url)))
    colab = colab_url(repo, path) if workbook and installs_from(root / path, repo) else None
    if colab:
        links.append(("Colab", colab))
    return links


def _online_note(repo: Repository, labels: list[str]) -> str:
    """What the online links start from, said after them."""
    notes = []
    builders = [label for label in labels if label != "Colab"]
    if builders:
        notes.append(
            f"{' and '.join(builders)}: the environment is built from environment.yml of "
            f"{repo.url} at {repo.ref}, and a first start can take a few minutes"
        )
    if "Colab" in labels:
        notes.append("Colab: the workbook's first cell installs gptlib")
    return f" ({'; '.join(notes)})."


def launch_box(app: Sphinx, notebook_path: str, root: Path = ROOT) -> nodes.admonition:
    """The "Run this notebook" box of the notebook at `notebook_path` (relative to the
    repository `root`): its links open the notebook's workbook where `root` has one."""
    box = nodes.admonition(classes=["course-launch"])
    box += nodes.title("", "Run this notebook")
    path = launch_path(notebook_path, root)
    workbook = path != notebook_path
    if workbook:
        box += _text(
            "These open the workbook, ",
            nodes.literal(path, path),
            ": this notebook with its exercises unsolved, for you to solve. "
            "This page shows the solved edition, with its outputs.",
        )
    repo = _repository(app)
    links = _online_links(app, repo, path, workbook, root) if repo else []
    if links:
        parts: list[str | nodes.Node] = ["Online: "]
        for i, (label, url) in enumerate(links):
            if i:
                parts.append(" · ")
            parts.append(nodes.reference(label, label, refuri=url, classes=["course-launch-link"]))
        parts.append(_online_note(repo, [label for label, _ in links]))
        box += _text(*parts)
    make_lab, jupyter_lab = local_commands(path)
    if workbook:
        box += _text(
            "On your machine, in a clone of the repository: make lab creates .venv on first "
            "use, copies the workbook into ",
            nodes.literal(MY_WORK, f"{MY_WORK}/"),
            " (your copies; one you changed is never overwritten) and opens yours:",
        )
    else:
        box += _text("On your machine, in a clone of the repository (creates .venv on first use):")
    box += _command(make_lab)
    if workbook:
        box += _text(
            "or, where gptlib and JupyterLab are installed, the workbook itself (not a copy):"
        )
    else:
        box += _text("or, where gptlib and JupyterLab are installed:")
    box += _command(jupyter_lab)
    return box


def figure_descriptions(notebook: dict) -> dict[str, str]:
    """Each described image output of `notebook` (its JSON): the sha256 of the image's bytes,
    the name MyST-NB gives the image's file, mapped to the output's `alt` metadata."""
    found = {}
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            for mime, content in output.get("data", {}).items():
                alt = output.get("metadata", {}).get(mime, {}).get("alt")
                if not alt or mime not in (*BASE64_IMAGES, SVG):
                    continue
                text = "".join(content) if isinstance(content, list) else content
                if mime == SVG:  # as MyST-NB writes it
                    data = os.linesep.join(text.splitlines()).encode("utf-8")
                else:
                    data = a2b_base64(text)
                found[hashlib.sha256(data).hexdigest()] = alt
    return found


def describe_figures(doctree: nodes.document, notebook: Path) -> None:
    """Give every image of the notebook's page the description its output carries."""
    descriptions = figure_descriptions(json.loads(notebook.read_text(encoding="utf-8")))
    for image in doctree.findall(nodes.image):
        alt = descriptions.get(PurePosixPath(image["uri"]).stem)
        if alt:
            image["alt"] = alt


def on_doctree_resolved(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    source = Path(app.env.doc2path(docname))
    if source.suffix != ".ipynb":
        return
    describe_figures(doctree, source)
    for raw in list(doctree.findall(nodes.raw)):
        if WIDGET_VIEW in raw.astext():
            raw.replace_self(nodes.container("", _text(WIDGET_NOTE), classes=["course-widget"]))
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is None or not isinstance(section[0], nodes.title):
        raise ExtensionError(f"{docname}: a notebook page needs a '# title' to put its links under")
    section.insert(1, launch_box(app, f"{docname}.ipynb"))


def mathjax_source() -> Path:
    """The es5 folder of MathJax 3 (tex-chtml.js and the pieces it loads on demand)."""
    try:
        import mathjax
    except ImportError as error:
        raise ExtensionError(
            "the site's offline MathJax comes from django-static-mathjax: "
            'pip install -e ".[site]" (make site does it)'
        ) from error
    return Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"


def copy_mathjax(app: Sphinx, exception: Exception | None) -> None:
    if exception is None and app.builder.format == "html":
        target = Path(app.outdir) / "_static" / "mathjax"
        shutil.copytree(mathjax_source(), target, dirs_exist_ok=True)


def setup(app: Sphinx) -> dict:
    app.add_config_value("course_binderhub_url", "https://mybinder.org", "html")
    app.add_config_value("course_jupyterhub_url", "", "html")
    app.connect("doctree-resolved", on_doctree_resolved)
    app.connect("build-finished", copy_mathjax)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
