"""Sphinx extension of the course website (book/_config.yml loads it).

- Every notebook page opens with a "Run this notebook" box: Binder and JupyterHub links built
  by book/launch.py from the repository address (`repository.url` / `.branch` of the book's
  configuration) and the hosts `course_binderhub_url` / `course_jupyterhub_url` (an empty host
  leaves its link out), and the commands that open the notebook in a local JupyterLab.
- A live widget's output (a widget-view reference, which needs a kernel) becomes a short note;
  the static rendering the notebook draws beside each widget shows on the page.
- MathJax 3 is copied from the django-static-mathjax package (MathJax's own es5 build; the
  package needs no Django) into `_static/mathjax`, so that the pages typeset math with no
  network.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

from book.launch import Repository, binder_url, jupyterhub_url, local_commands

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
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


def launch_box(app: Sphinx, path: str) -> nodes.admonition:
    """The "Run this notebook" box of the notebook at `path` (relative to the repository)."""
    box = nodes.admonition(classes=["course-launch"])
    box += nodes.title("", "Run this notebook")
    repo = _repository(app)
    links = []
    if repo and app.config.course_binderhub_url:
        links.append(("Binder", binder_url(repo, path, app.config.course_binderhub_url)))
    if repo and app.config.course_jupyterhub_url:
        links.append(("JupyterHub", jupyterhub_url(repo, path, app.config.course_jupyterhub_url)))
    if links:
        parts: list[str | nodes.Node] = ["Online, in JupyterLab: "]
        for i, (label, url) in enumerate(links):
            if i:
                parts.append(" · ")
            parts.append(nodes.reference(label, label, refuri=url, classes=["course-launch-link"]))
        parts.append(
            f" (the environment is built from environment.yml of {repo.url} at {repo.ref}; "
            "a first start can take a few minutes)."
        )
        box += _text(*parts)
    make_lab, jupyter_lab = local_commands(path)
    box += _text("On your machine, in a clone of the repository (creates .venv on first use):")
    box += _command(make_lab)
    box += _text("or, where gptlib and JupyterLab are installed:")
    box += _command(jupyter_lab)
    return box


def on_doctree_resolved(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    if not str(app.env.doc2path(docname)).endswith(".ipynb"):
        return
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
