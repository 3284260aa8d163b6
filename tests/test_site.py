"""The course website (book/): launch-link formats, the course map read from the notebooks and
their measured run times, the link checker, and the real build (`python -m book.build`, what
`make site` runs: Jupyter Book with warnings as errors, then every internal link checked).

The build runs once per session (the `built_site` fixture in conftest.py); the browser test of
the built pages is tests/ui/test_site.py.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import nbformat
import pytest

pytest.importorskip("jupyter_book", reason='the website\'s tools: pip install -e ".[site]"')

from book import course  # noqa: E402
from book.check_links import check_site  # noqa: E402
from book.launch import (  # noqa: E402
    Repository,
    binder_url,
    jupyterhub_url,
    local_commands,
    public_repo_url,
)

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = "notebooks/02_scaled_dot_product_attention.ipynb"


def _load_run_notebooks():
    spec = importlib.util.spec_from_file_location(
        "run_notebooks_under_test", ROOT / "scripts" / "run_notebooks.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


run_notebooks = _load_run_notebooks()


# --- launch links -------------------------------------------------------------------------


def test_binder_url_for_a_github_repository():
    url = binder_url(
        Repository("https://github.com/example-org/gptlib-notebooks", "main"), NOTEBOOK
    )
    assert url == (
        "https://mybinder.org/v2/gh/example-org/gptlib-notebooks/main"
        "?urlpath=lab%2Ftree%2Fnotebooks%2F02_scaled_dot_product_attention.ipynb"
    )
    assert parse_qs(urlsplit(url).query) == {"urlpath": [f"lab/tree/{NOTEBOOK}"]}


def test_binder_url_escapes_every_character_of_another_host_and_of_the_ref():
    repo = Repository("https://git.example.org:8443/team/sub/gptlib-notebooks", "release/2026-11")
    url = binder_url(repo, "notebooks/03_the_causal_mask.ipynb", "https://binder.example.edu/")
    assert url == (
        "https://binder.example.edu/v2/git/"
        "https%3A%2F%2Fgit.example.org%3A8443%2Fteam%2Fsub%2Fgptlib-notebooks/release%2F2026-11"
        "?urlpath=lab%2Ftree%2Fnotebooks%2F03_the_causal_mask.ipynb"
    )


def test_binder_url_for_gitlab_escapes_the_project_path():
    url = binder_url(Repository("https://gitlab.com/group/sub/course", "v1.0"), NOTEBOOK)
    assert urlsplit(url).path == "/v2/gl/group%2Fsub%2Fcourse/v1.0"


def test_nbgitpuller_url_clones_into_the_repository_folder_and_opens_the_notebook():
    repo = Repository("https://github.com/example-org/gptlib-notebooks", "main")
    url = jupyterhub_url(repo, NOTEBOOK, "https://hub.example.edu/")
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == (
        "https://hub.example.edu/hub/user-redirect/git-pull"
    )
    assert parse_qs(parts.query) == {
        "repo": ["https://github.com/example-org/gptlib-notebooks"],
        "branch": ["main"],
        "urlpath": [f"lab/tree/gptlib-notebooks/{NOTEBOOK}"],
    }
    assert "repo=https%3A%2F%2Fgithub.com%2Fexample-org%2Fgptlib-notebooks" in parts.query


def test_local_commands():
    assert local_commands(NOTEBOOK) == (f"make lab NOTEBOOK={NOTEBOOK}", f"jupyter lab {NOTEBOOK}")


@pytest.mark.parametrize(
    ("remote", "public"),
    [
        ("https://github.com/org/repo.git", "https://github.com/org/repo"),
        ("https://github.com/org/repo/", "https://github.com/org/repo"),
        ("git@github.com:org/repo.git", "https://github.com/org/repo"),
        ("gitlab.com:group/sub/repo", "https://gitlab.com/group/sub/repo"),
        ("/srv/git/gptlib-notebooks", None),
        ("../gptlib-notebooks", None),
        ("file:///srv/git/repo", None),
        ("https://github.com/", None),
        ("", None),
    ],
)
def test_public_repo_url(remote, public):
    assert public_repo_url(remote) == public


@pytest.mark.parametrize(
    ("url", "ref"),
    [("git@github.com:org/repo.git", "main"), ("https://github.com/org/repo", "my branch")],
)
def test_repository_rejects_what_a_link_cannot_carry(url, ref):
    with pytest.raises(ValueError, match="give"):
        Repository(url, ref)


def test_launch_rejects_a_path_outside_the_repository():
    with pytest.raises(ValueError, match="relative to the repository root"):
        binder_url(Repository("https://github.com/org/repo"), "/home/me/notebooks/01.ipynb")


# --- the course map -----------------------------------------------------------------------


def test_summary_is_the_opening_list_with_its_lead_in_sentence():
    opening = (
        "# 09 · Something\n\nA first sentence. In this notebook you will:\n\n"
        "1. count $N$ parameters;\n   across two lines;\n2. measure it.\n\nClosing words.\n"
    )
    assert course.summary_of(opening) == (
        "In this notebook you will:\n\n1. count $N$ parameters;\n   across two lines;\n"
        "2. measure it."
    )
    assert course.title_of(opening, "x.ipynb") == "Something"


def test_summary_without_a_list_is_the_first_paragraph():
    opening = "# 00 · Start\n\nWelcome to the **course**.\nSecond line.\n\n| a | b |\n|---|---|\n"
    assert course.summary_of(opening) == "Welcome to the **course**.\nSecond line."


def test_every_course_notebook_has_a_title_and_a_summary():
    notebooks = course.notebooks()
    names = [Path(n.path).name for n in notebooks]
    assert names == sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    for notebook in notebooks:
        assert notebook.title and not notebook.title[:2].isdigit(), notebook.path
        assert len(notebook.summary) > 40, f"{notebook.path}: summary {notebook.summary!r}"


@pytest.mark.parametrize(
    ("seconds", "shown"), [(0.3, "1 s"), (12.4, "12 s"), (59.6, "1 min"), (75, "1 min 15 s")]
)
def test_format_seconds(seconds, shown):
    assert course.format_seconds(seconds) == shown


def _course_copy(tmp_path: Path, names: list[str]) -> Path:
    """A repository-shaped folder with the fixture notebook under each of `names`."""
    fixture = nbformat.read(ROOT / "tests/fixtures/classroom_fixture.ipynb", as_version=4)
    (tmp_path / "notebooks").mkdir()
    for name in names:
        fixture.cells[0].source = f"# {name[:2]} · Title of {name}\n\nWhat {name} teaches, here."
        nbformat.write(fixture, tmp_path / "notebooks" / name)
    return tmp_path


def test_run_times_come_from_the_timings_run_notebooks_writes(tmp_path):
    root = _course_copy(tmp_path, ["00_start.ipynb", "01_next.ipynb", "02_new.ipynb"])
    timings = root / "notebooks" / "timings.json"
    nb0 = nbformat.read(root / "notebooks/00_start.ipynb", as_version=4)
    digest = run_notebooks.code_digest(nb0)
    run_notebooks.record_timings(
        {"00_start.ipynb": (12.34, digest), "01_next.ipynb": (75.0, "0" * 64)}, timings
    )
    run_notebooks.record_timings({"99_gone.ipynb": (1.0, digest)}, timings)  # no such notebook
    written = json.loads(timings.read_text())["notebooks"]
    assert sorted(written) == ["00_start.ipynb", "01_next.ipynb"]
    assert written["00_start.ipynb"]["seconds"] == 12.3

    first, second, third = course.notebooks(root)
    assert (first.timing.seconds, first.timing.current) == (12.3, True)
    assert course.run_time(first) == "12 s"
    assert second.timing.current is False  # its code is not the code that was timed
    assert course.run_time(second) == "1 min 15 s, measured on an earlier version of its code"
    assert third.timing is None and course.run_time(third).startswith("not measured yet")
    page = course.landing_page([first, second, third], [])
    assert "| [00 · Title of 00_start.ipynb](notebooks/00_start.ipynb) | 12 s |" in page
    assert written["00_start.ipynb"]["machine"] in page


def test_code_digest_changes_with_code_only():
    nb = nbformat.read(ROOT / "tests/fixtures/classroom_fixture.ipynb", as_version=4)
    before = run_notebooks.code_digest(nb)
    nb.cells[0].source += "\nmore prose"
    assert run_notebooks.code_digest(nb) == before
    code = next(c for c in nb.cells if c.cell_type == "code")
    code.source += "\nx = 1"
    assert run_notebooks.code_digest(nb) != before


def test_renumbered_notebooks_need_no_edit(tmp_path):
    names = [
        "07_build_the_gpt.ipynb",
        "08_train_and_sample.ipynb",
        "09_cost_accounting.ipynb",
        "10_appendix_timings.ipynb",
    ]
    root = _course_copy(tmp_path, names)
    (root / "docs").mkdir()
    for doc in ("zeta.md", "claims.md", "classroom.md"):
        (root / "docs" / doc).write_text(f"# {doc}\n")
    toc = course.table_of_contents(course.notebooks(root), course.guides(root))
    files = re.findall(r"- file: (\S+)", toc)
    assert files == [f"notebooks/{name.removesuffix('.ipynb')}" for name in names] + [
        "README",
        "docs/classroom",
        "docs/claims",
        "docs/zeta",
    ]


def test_committed_timings_look_like_measurements():
    """A notebook without a figure shows 'not measured yet', and a figure of a renamed notebook
    is ignored until `make notebooks` drops it; but every figure must be a real measurement."""
    for name, entry in course.load_timings().items():
        assert re.fullmatch(r"\d\d_[a-z0-9_]+\.ipynb", name), name
        assert 0 < entry["seconds"] < 3600, name
        assert re.fullmatch(r"[0-9a-f]{64}", entry["code_sha256"]), name
        assert re.fullmatch(r"\d{4}-\d\d-\d\d", entry["measured"]), name
        assert "CPUs" in entry["machine"], name


def test_linked_repository_files_are_found_for_staging():
    from book.build import linked_files

    markdown = (
        "Run [the script](../scripts/classroom.py#L3) or ![a picture](<../README.md>); "
        "see [a site](https://example.org/x.py), [a section](#grading), "
        "[gone](../scripts/no_such_script.py) and [outside](../../etc/passwd)."
    )
    assert linked_files(markdown, ROOT / "docs" / "classroom.md") == {
        ROOT / "scripts" / "classroom.py",
        ROOT / "README.md",
    }


# --- the link checker ---------------------------------------------------------------------


def test_check_links_finds_broken_files_anchors_and_remote_assets(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "img.png").write_bytes(b"png")
    (tmp_path / "index.html").write_text(
        '<a id="top" href="sub/page.html#part">ok</a> <a href="#top">ok</a>'
        ' <img src="img.png"> <a href="https://mybinder.org/v2/gh/a/b/main">external link, ok</a>'
        ' <a href="sub/">folder, ok</a> <a href="mailto:x@example.org">ok</a>'
    )
    (tmp_path / "sub" / "index.html").write_text('<p id="x">')
    (tmp_path / "sub" / "page.html").write_text(
        '<h2 id="part">Part</h2> <a href="../index.html#nowhere">bad anchor</a>'
        ' <img src="../missing.png"> <script src="https://cdn.example.com/x.js"></script>'
        ' <link rel="stylesheet" href="//cdn.example.com/x.css"> <a href="/abs.html">abs</a>'
    )
    problems = check_site(tmp_path)
    assert len(problems) == 5, problems
    assert all(p.startswith("sub/page.html") for p in problems)
    text = "\n".join(problems)
    for fragment in ("no id 'nowhere'", "missing.png", "cdn.example.com/x.js", "x.css", "abs"):
        assert fragment in text
    (tmp_path / "sub" / "page.html").write_text('<h2 id="part">Part</h2>')
    assert check_site(tmp_path) == []


# --- the build ----------------------------------------------------------------------------


def test_the_site_builds_with_warnings_as_errors_and_every_link_resolves(built_site):
    assert (built_site.html / "index.html").is_file()
    assert check_site(built_site.html) == []


def _text(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html)


def test_every_notebook_is_a_page_with_its_launch_links_and_folded_solutions(built_site):
    for notebook in course.notebooks():
        page = built_site.html / f"{notebook.docname}.html"
        html = page.read_text(encoding="utf-8")
        expected = binder_url(built_site.repo, notebook.path).replace("&", "&amp;")
        assert f'href="{expected}"' in html, f"{page.name}: no Binder link {expected}"
        assert f"make lab NOTEBOOK={notebook.path}" in _text(html), page.name
        assert f"jupyter lab {notebook.path}" in _text(html), page.name

        cells = nbformat.read(ROOT / notebook.path, as_version=4).cells
        solutions = [c for c in cells if c.metadata.get("nbgrader", {}).get("solution")]
        assert html.count("Show the solution") == len(solutions), page.name
        widgets = sum(
            "application/vnd.jupyter.widget-view+json" in output.get("data", {})
            for cell in cells
            for output in cell.get("outputs", [])
        )
        assert "application/vnd.jupyter.widget-view+json" not in html, page.name
        assert html.count('class="course-widget') == widgets, page.name


def test_math_is_served_by_the_local_mathjax(built_site):
    assert (built_site.html / "_static/mathjax/tex-chtml.js").is_file()
    page = (built_site.html / f"{NOTEBOOK.removesuffix('.ipynb')}.html").read_text()
    assert re.search(r'<script[^>]* src="\.\./_static/mathjax/tex-chtml\.js"', page)
    assert '<span class="math notranslate nohighlight">' in page


def test_landing_page_links_every_notebook_and_its_run_time(built_site):
    html = (built_site.html / "index.html").read_text(encoding="utf-8")
    for notebook in course.notebooks():
        assert f'href="{notebook.docname}.html"' in html, notebook.path
    assert "notebooks/timings.json" in html


@pytest.mark.skipif(not shutil.which("git"), reason="needs git")
def test_the_build_output_is_ignored_by_git():
    for generated in ("book/_build/html/index.html", "book/_build/src/_toc.yml"):
        result = subprocess.run(["git", "check-ignore", "-q", generated], cwd=ROOT)
        assert result.returncode == 0, f"{generated} is not ignored by git"
