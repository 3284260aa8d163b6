"""Build the course website: `make site`, or `python -m book.build` in an environment with
`pip install -e ".[site]"`.

    python -m book.build                                   # -> book/_build/html/index.html
    python -m book.build --repo-url https://github.com/org/repo --ref main

Steps: stage the book's sources in book/_build/src (the committed notebooks with their outputs,
never re-executed; README.md; the guides, docs/*.md and the maintainers' notebook
docs/under_the_hood.ipynb; a landing page and table of contents generated from
notebooks/NN_*.ipynb and docs/ by book/course.py; book/_config.yml with the repository
address), build them with Jupyter Book 1 (Sphinx) with every warning an error, then check every
internal link and asset of the result (book/check_links.py) and count the figures without a
description (alt text that is words; tests/test_site.py fails on any). No step needs the
network.

In the staged copies of the notebooks (`fold_cells`), the code of nbgrader solution cells is
folded behind a "Show the solution" toggle, and the guard cells (tag `guard`: the assertions
that protect the results of the lesson cell above them, which the workbook leaves out) behind a
"Show the maintainers' checks" toggle; the committed notebooks are not changed. Repository
files that the pages link to (a script, a licence) are staged too, and served as downloads.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from book.check_links import check_site, site_images
from book.course import ROOT, guides, landing_page, notebooks, table_of_contents
from book.launch import public_repo_url

BOOK = ROOT / "book"
# the target of a markdown link or image: [text](target) / ![alt](target "title")
_LINK_TARGET = re.compile(r"\]\(\s*<?([^)\s>]+)")
SOLUTION_PROMPTS = {
    "code_prompt_show": "Show the solution",
    "code_prompt_hide": "Hide the solution",
}
# A guard cell (scripts/editions.py GUARD_TAG) holds the asserts under a lesson cell.
GUARD_TAG = "guard"
GUARD_PROMPTS = {
    "code_prompt_show": "Show the maintainers' checks",
    "code_prompt_hide": "Hide the maintainers' checks",
}


def git_origin() -> str:
    """The clone's `origin` remote ('' when there is none)."""
    result = subprocess.run(
        ["git", "remote", "get-url", "origin"], cwd=ROOT, capture_output=True, text=True
    )
    return result.stdout.strip() if result.returncode == 0 else ""


def repository_address(requested: str, configured: str) -> str:
    """The public https address the launch links use: the requested one (--repo-url), else
    book/_config.yml's repository.url, else the origin remote when it is a public address."""
    for source, url in (("--repo-url", requested), ("repository.url", configured)):
        if url:
            public = public_repo_url(url)
            if public is None:
                raise ValueError(
                    f"{source} {url!r} is not a public repository address; "
                    "give one like https://github.com/owner/repo"
                )
            return public
    return public_repo_url(git_origin()) or ""


def install_address_warning(requested: str, configured: str) -> str | None:
    """The warning for a --repo-url other than book/_config.yml's repository.url: the launch
    links then open that repository's workbooks, but each workbook's first cell installs gptlib
    from the configured address (where gptlib is missing, as in Colab)."""
    if not requested or public_repo_url(requested) == public_repo_url(configured):
        return None
    return (
        f"site: warning: the workbooks install gptlib (in Colab, or wherever it is missing) from "
        f"repository.url of book/_config.yml ({configured or 'not set'}), not from --repo-url "
        f"{requested}, so the pages get no Colab links; set repository.url to it and run "
        "make notebooks to regenerate the workbooks"
    )


def _fold(cell: dict, prompts: dict[str, str]) -> None:
    """Show the code of `cell` behind a toggle labelled by `prompts` (MyST-NB's hide-input)."""
    tags = cell["metadata"].setdefault("tags", [])
    if "hide-input" not in tags:
        tags.append("hide-input")
    cell["metadata"]["mystnb"] = dict(prompts)


def fold_solutions(notebook: dict) -> dict:
    """Mark nbgrader solution cells so that the page shows their code behind a toggle."""
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code" and cell["metadata"].get("nbgrader", {}).get("solution"):
            _fold(cell, SOLUTION_PROMPTS)
    return notebook


def fold_guards(notebook: dict) -> dict:
    """Mark guard cells (tag `guard`) so that the page shows their asserts behind a toggle."""
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code" and GUARD_TAG in cell["metadata"].get("tags", []):
            _fold(cell, GUARD_PROMPTS)
    return notebook


def fold_cells(notebook: dict) -> dict:
    """The staged copy of a notebook: solutions and guard cells folded behind their toggles."""
    return fold_guards(fold_solutions(notebook))


def stage_notebook(source: Path, staged: Path) -> None:
    """Write the staged copy (`fold_cells`) of the notebook file `source` to `staged`."""
    content = json.loads(source.read_text(encoding="utf-8"))
    staged.parent.mkdir(parents=True, exist_ok=True)
    staged.write_text(json.dumps(fold_cells(content)), encoding="utf-8")


def linked_files(markdown: str, page: Path) -> set[Path]:
    """Files of the repository that relative links in `markdown` (of the file `page`) name."""
    found = set()
    for target in _LINK_TARGET.findall(markdown):
        path = target.split("#", 1)[0]
        if not path or re.match(r"^[a-z][a-z0-9+.-]*:", path, re.IGNORECASE):
            continue
        file = (page.parent / path).resolve()
        if file.is_file() and file.is_relative_to(ROOT):
            found.add(file)
    return found


def copy_linked_files(src: Path) -> None:
    """Stage the repository files that the staged pages link to (scripts, data, licences...):
    the site serves them as downloads instead of failing the build on a missing target."""
    pages = list(src.glob("*.md")) + list(src.glob("docs/**/*.md"))
    texts = [(page, page.read_text(encoding="utf-8")) for page in pages]
    for notebook in [*src.glob("notebooks/*.ipynb"), *src.glob("docs/**/*.ipynb")]:
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        markdown = (c for c in cells if c["cell_type"] == "markdown")
        texts.append((notebook, "\n".join("".join(c["source"]) for c in markdown)))
    for page, text in texts:
        in_repo = ROOT / page.relative_to(src)
        for file in linked_files(text, in_repo):
            staged = src / file.relative_to(ROOT)
            if not staged.exists():
                staged.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(file, staged)


def stage(src: Path, repo_url: str, ref: str) -> None:
    """Write the book's sources into `src` (emptied first), laid out like the repository."""
    shutil.rmtree(src, ignore_errors=True)
    (src / "notebooks").mkdir(parents=True)
    course = notebooks()
    for notebook in course:
        stage_notebook(ROOT / notebook.path, src / notebook.path)
    shutil.copy2(ROOT / "README.md", src / "README.md")
    guide_paths = guides()
    if (ROOT / "docs").is_dir():
        shutil.copytree(ROOT / "docs", src / "docs")
        for guide in guide_paths:  # a notebook among the guides: its cells folded, as above
            if guide.endswith(".ipynb"):
                stage_notebook(ROOT / guide, src / guide)
    copy_linked_files(src)
    (src / "index.md").write_text(landing_page(course, guide_paths), encoding="utf-8")
    (src / "_toc.yml").write_text(table_of_contents(course, guide_paths), encoding="utf-8")

    for folder in ("_ext", "_static"):
        shutil.copytree(BOOK / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__"))
    config = yaml.safe_load((BOOK / "_config.yml").read_text(encoding="utf-8"))
    config["repository"]["url"] = repo_url
    config["repository"]["branch"] = ref or config["repository"].get("branch") or "main"
    (src / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


def jupyter_book() -> str:
    beside_python = Path(sys.executable).with_name("jupyter-book")
    found = str(beside_python) if beside_python.exists() else shutil.which("jupyter-book")
    if not found:
        raise SystemExit('jupyter-book is not installed: pip install -e ".[site]" (or make site)')
    return found


def build(out: Path = BOOK, repo_url: str = "", ref: str = "") -> Path:
    """Stage into out/_build/src, build into out/_build/html, check links; the HTML folder."""
    configured = yaml.safe_load((BOOK / "_config.yml").read_text(encoding="utf-8"))
    configured_url = configured["repository"].get("url") or ""
    address = repository_address(repo_url, configured_url)
    warning = install_address_warning(repo_url, configured_url)
    if warning:
        print(warning, file=sys.stderr)
    if not address:
        print(
            "site: no public repository address (set REPO_URL, or repository.url in "
            "book/_config.yml): the notebook pages get no Binder, JupyterHub or Colab links",
            file=sys.stderr,
        )
    src, html = out / "_build" / "src", out / "_build" / "html"
    stage(src, address, ref)
    shutil.rmtree(html, ignore_errors=True)
    env = dict(os.environ)
    # the Sphinx extension imports book.launch from this checkout
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    command = [jupyter_book(), "build", str(src), "--path-output", str(out)]
    command += ["--warningiserror", "--keep-going", "--all"]
    result = subprocess.run(command, env=env)
    if result.returncode != 0:
        raise SystemExit(f"site: the build failed (warnings are errors); see above ({result})")
    problems = check_site(html)
    if problems:
        raise SystemExit("site: broken links or remote assets:\n" + "\n".join(problems))
    images = site_images(html)
    undescribed = [image for image in images if not image.described()]
    for image in undescribed:  # tests/test_site.py fails on these
        print(f"site: warning: {image.page}: a figure without a description", file=sys.stderr)
    print(f"site: {len(images)} figures, {len(undescribed)} without a description")
    return html


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=BOOK, help="builds into OUT/_build/html")
    parser.add_argument("--repo-url", default="", help="the repository's public https address")
    parser.add_argument("--ref", default="", help="the branch, tag or commit to launch")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    html = build(args.out.resolve(), args.repo_url, args.ref)
    seconds = time.perf_counter() - start
    print(f"site: {html / 'index.html'} (built and checked in {seconds:z.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
