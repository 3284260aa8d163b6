"""The course website (book/): launch-link formats, the course map read from the notebooks and
their measured run times, the link checker, and the real build (`python -m book.build`, what
`make site` runs: Jupyter Book with warnings as errors, then every internal link checked).

The build runs once per session (the `built_site` fixture in conftest.py); the browser test of
the built pages is tests/ui/test_site.py.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import html as html_text
import json
import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import parse_qs, quote, urlsplit

import nbformat
import pytest

pytest.importorskip("jupyter_book", reason='the website\'s tools: pip install -e ".[site]"')

from docutils import nodes  # noqa: E402

from book import course  # noqa: E402
from book._ext.course_site import (  # noqa: E402
    describe_figures,
    figure_descriptions,
    installs_from,
    launch_box,
)
from book.build import (  # noqa: E402
    GUARD_PROMPTS,
    GUARD_TAG,
    SOLUTION_PROMPTS,
    fold_cells,
    install_address_warning,
    stage,
)
from book.check_links import Image, check_site, site_images, undescribed_images  # noqa: E402
from book.launch import (  # noqa: E402
    Repository,
    binder_url,
    colab_url,
    jupyterhub_url,
    launch_path,
    local_commands,
    my_work_path,
    public_repo_url,
    workbook_path,
)
from tests.scripts import load_script  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = "notebooks/02_scaled_dot_product_attention.ipynb"
WORKBOOK = "workbook/02_scaled_dot_product_attention.ipynb"
MY_WORK = "my-work/02_scaled_dot_product_attention.ipynb"  # make lab copies WORKBOOK there
UNDER_THE_HOOD = "docs/under_the_hood.ipynb"  # the maintainers' notebook: a guide, no workbook


run_notebooks = load_script("run_notebooks")
editions = load_script("editions")


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
    assert local_commands(UNDER_THE_HOOD) == (
        f"make lab NOTEBOOK={UNDER_THE_HOOD}",
        f"jupyter lab {UNDER_THE_HOOD}",
    )


def test_make_lab_opens_the_students_copy_of_a_workbook_in_my_work():
    """make lab copies the workbook into my-work/ first (scripts/editions.py open), so that the
    path exists once it runs; plain jupyter lab opens the workbook itself."""
    assert my_work_path(WORKBOOK) == MY_WORK
    assert my_work_path(NOTEBOOK) is None and my_work_path(UNDER_THE_HOOD) is None
    assert local_commands(WORKBOOK) == (f"make lab NOTEBOOK={MY_WORK}", f"jupyter lab {WORKBOOK}")
    assert Path(MY_WORK).parent == editions.MY_WORK.relative_to(editions.ROOT)
    assert Path(WORKBOOK).parent == editions.WORKBOOK.relative_to(editions.ROOT)
    with pytest.raises(ValueError, match="relative to the repository root"):
        local_commands("/abs/workbook/02_x.ipynb")


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


@pytest.mark.parametrize("link", [binder_url, colab_url])
@pytest.mark.parametrize("path", ["/home/me/notebooks/01.ipynb", "notebooks\\01.ipynb", ""])
def test_launch_rejects_a_path_outside_the_repository(link, path):
    with pytest.raises(ValueError, match="relative to the repository root"):
        link(Repository("https://github.com/org/repo"), path)


def test_colab_url_for_a_github_repository():
    url = colab_url(Repository("https://github.com/example-org/gptlib-notebooks", "main"), WORKBOOK)
    assert url == (
        "https://colab.research.google.com/github/example-org/gptlib-notebooks/blob/main/"
        "workbook/02_scaled_dot_product_attention.ipynb"
    )


@pytest.mark.parametrize(
    "url",
    [
        "https://gitlab.com/group/course",
        "https://git.example.org/team/gptlib-notebooks",
        "https://github.com/org/sub/repo",
    ],
)
def test_no_colab_url_outside_github(url):
    assert colab_url(Repository(url), WORKBOOK) is None


def test_colab_url_escapes_the_ref_and_the_path():
    repo = Repository("https://github.com/example-org/gptlib-notebooks", "release/2026-11")
    url = colab_url(repo, "workbook/03 the #mask?.ipynb")
    assert url == (
        "https://colab.research.google.com/github/example-org/gptlib-notebooks/blob/"
        "release%2F2026-11/workbook/03%20the%20%23mask%3F.ipynb"
    )


def test_workbook_path_is_the_notebook_in_the_workbook_folder():
    assert workbook_path(NOTEBOOK) == WORKBOOK
    for not_a_course_notebook in ("docs/guide.ipynb", "notebooks/sub/01_x.ipynb", "notebooks/x.py"):
        with pytest.raises(ValueError, match="give a course notebook"):
            workbook_path(not_a_course_notebook)


def _repository_with(tmp_path: Path, paths: list[str]) -> Path:
    for path in paths:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("{}")
    return tmp_path


def _workbook_installing_from(root: Path, url: str) -> None:
    """Write WORKBOOK under `root` with the first code cell a workbook gets for `url`."""
    setup = editions.setup_source(url)
    nb = {"cells": [{"cell_type": "markdown", "source": "# title"},
                    {"cell_type": "code", "source": setup}]}  # fmt: skip
    (root / WORKBOOK).write_text(json.dumps(nb))


def test_colab_is_linked_only_for_a_workbook_that_installs_from_this_repository(tmp_path):
    repo = Repository("https://github.com/example-org/gptlib-notebooks", "main")
    root = _repository_with(tmp_path, [NOTEBOOK, WORKBOOK])
    for url, linked in ((repo.url, True), ("", False), ("https://github.com/other/fork", False)):
        _workbook_installing_from(root, url)
        assert installs_from(root / WORKBOOK, repo) == linked
        labels = [ref.astext() for ref in _launch_box(root, NOTEBOOK, repo, "").findall(
            nodes.reference)]  # fmt: skip
        assert labels == (["Binder", "Colab"] if linked else ["Binder"]), url


def test_launch_path_is_the_workbook_where_there_is_one(tmp_path):
    root = _repository_with(tmp_path, [NOTEBOOK, WORKBOOK, "notebooks/03_x.ipynb", UNDER_THE_HOOD])
    assert launch_path(NOTEBOOK, root) == WORKBOOK
    assert launch_path("notebooks/03_x.ipynb", root) == "notebooks/03_x.ipynb"  # no workbook
    assert launch_path(UNDER_THE_HOOD, root) == UNDER_THE_HOOD


def _launch_box(root: Path, notebook: str, repo: Repository, hub: str) -> nodes.admonition:
    """The launch box as the site's build makes it, for a notebook of the repository `root`."""
    theme = {"repository_url": repo.url, "repository_branch": repo.ref}
    config = SimpleNamespace(
        html_theme_options=theme,
        course_binderhub_url="https://mybinder.org",
        course_jupyterhub_url=hub,
    )
    return launch_box(SimpleNamespace(config=config), notebook, root)


def test_every_launch_link_of_a_notebook_with_a_workbook_opens_the_workbook(tmp_path):
    root = _repository_with(tmp_path, [NOTEBOOK, WORKBOOK])
    repo = Repository("https://github.com/example-org/gptlib-notebooks", "main")
    _workbook_installing_from(root, repo.url)
    hub = "https://hub.example.edu"
    box = _launch_box(root, NOTEBOOK, repo, hub)
    links = {ref["refuri"] for ref in box.findall(nodes.reference)}
    assert links == {
        binder_url(repo, WORKBOOK),
        jupyterhub_url(repo, WORKBOOK, hub),
        colab_url(repo, WORKBOOK),
    }
    commands = tuple(block.astext() for block in box.findall(nodes.literal_block))
    assert commands == local_commands(WORKBOOK)
    assert commands == (f"make lab NOTEBOOK={MY_WORK}", f"jupyter lab {WORKBOOK}")
    for target in (*links, *commands):
        assert NOTEBOOK not in target and quote(NOTEBOOK, safe="") not in target, target
    assert "exercises unsolved" in box.astext() and "solved edition" in box.astext()
    assert "copies the workbook into my-work/" in box.astext()


def test_a_notebook_without_a_workbook_opens_itself_and_gets_no_colab_link(tmp_path):
    root = _repository_with(tmp_path, [NOTEBOOK])
    repo = Repository("https://github.com/example-org/gptlib-notebooks", "main")
    box = _launch_box(root, NOTEBOOK, repo, "")
    assert [ref["refuri"] for ref in box.findall(nodes.reference)] == [binder_url(repo, NOTEBOOK)]
    commands = tuple(block.astext() for block in box.findall(nodes.literal_block))
    assert commands == local_commands(NOTEBOOK)
    assert "workbook" not in box.astext()


def test_the_maintainers_notebook_opens_itself(tmp_path):
    root = _repository_with(tmp_path, [NOTEBOOK, WORKBOOK, UNDER_THE_HOOD])
    repo = Repository("https://github.com/example-org/gptlib-notebooks", "main")
    box = _launch_box(root, UNDER_THE_HOOD, repo, "")
    assert [ref["refuri"] for ref in box.findall(nodes.reference)] == [
        binder_url(repo, UNDER_THE_HOOD)
    ]
    commands = tuple(block.astext() for block in box.findall(nodes.literal_block))
    assert commands == (f"make lab NOTEBOOK={UNDER_THE_HOOD}", f"jupyter lab {UNDER_THE_HOOD}")
    assert "workbook" not in box.astext() and "my-work" not in box.astext()


def test_a_repo_url_other_than_the_configured_one_warns_where_gptlib_is_installed_from():
    configured = "https://github.com/example-org/gptlib-notebooks"
    assert install_address_warning("", configured) is None
    assert install_address_warning(f"{configured}.git", configured) is None
    warning = install_address_warning("https://github.com/fork/gptlib-notebooks", configured)
    assert (
        warning and configured in warning and "install gptlib" in warning and "no Colab" in warning
    )
    assert "not set" in install_address_warning(configured, "")


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
        "10_a_new_lesson.ipynb",
    ]
    root = _course_copy(tmp_path, names)
    (root / "docs").mkdir()
    for doc in ("zeta.md", "claims.md", "classroom.md"):
        (root / "docs" / doc).write_text(f"# {doc}\n")
    shutil.copy2(ROOT / "tests/fixtures/classroom_fixture.ipynb", root / UNDER_THE_HOOD)
    toc = course.table_of_contents(course.notebooks(root), course.guides(root))
    files = re.findall(r"- file: (\S+)", toc)
    # the maintainers' notebook is a guide, not a lesson of the numbered sequence
    assert files == [f"notebooks/{name.removesuffix('.ipynb')}" for name in names] + [
        "README",
        "docs/classroom",
        "docs/claims",
        "docs/under_the_hood",
        "docs/zeta",
    ]


def test_the_maintainers_notebook_is_a_guide_not_a_lesson():
    assert (ROOT / UNDER_THE_HOOD).is_file()
    assert UNDER_THE_HOOD in course.guides()
    assert all(n.path.startswith("notebooks/") for n in course.notebooks())
    page = course.landing_page(course.notebooks(), course.guides())
    assert f"]({UNDER_THE_HOOD})" in page
    course_map = page.split("## Course map", 1)[1].split("## What each notebook teaches")[0]
    assert UNDER_THE_HOOD not in course_map


def _code_cell(metadata: dict) -> dict:
    return {"cell_type": "code", "metadata": metadata, "source": "x = 1", "outputs": []}


def test_staging_folds_solutions_and_guard_cells_behind_their_toggles():
    assert GUARD_TAG == editions.GUARD_TAG  # the tag scripts/editions.py leaves out
    solution = _code_cell({"nbgrader": {"solution": True}, "tags": ["hide-input"]})
    guard = _code_cell({"tags": [GUARD_TAG, "nbval-ignore-output"]})
    lesson = _code_cell({"tags": ["nbval-ignore-output"]})
    prose = {"cell_type": "markdown", "metadata": {"tags": [GUARD_TAG]}, "source": "text"}
    notebook = {"cells": [copy.deepcopy(c) for c in (solution, guard, lesson, prose)]}
    staged = fold_cells(notebook)["cells"]
    assert staged[0]["metadata"]["tags"] == ["hide-input"]  # not doubled
    assert staged[0]["metadata"]["mystnb"] == SOLUTION_PROMPTS
    assert staged[1]["metadata"]["tags"] == [GUARD_TAG, "nbval-ignore-output", "hide-input"]
    assert staged[1]["metadata"]["mystnb"] == GUARD_PROMPTS
    assert GUARD_PROMPTS["code_prompt_show"] == "Show the maintainers' checks"
    assert staged[2:] == [lesson, prose]  # a lesson cell, and markdown, stay as they are


def test_stage_writes_the_lessons_and_the_maintainers_notebook_with_their_outputs(tmp_path):
    src = tmp_path / "src"
    stage(src, "https://github.com/example-org/gptlib-notebooks", "main")
    toc = (src / "_toc.yml").read_text()
    files = re.findall(r"- file: (\S+)", toc)
    lessons = [n.docname for n in course.notebooks()]
    assert files[: len(lessons)] == lessons and len(lessons) == 10
    assert "docs/under_the_hood" in files[len(lessons) :]
    assert not any("10_appendix" in f for f in files)
    for path in [*(n.path for n in course.notebooks()), UNDER_THE_HOOD]:
        committed = nbformat.read(ROOT / path, as_version=4)
        staged = nbformat.read(src / path, as_version=4)
        assert len(staged.cells) == len(committed.cells), path
        for before, after in zip(committed.cells, staged.cells, strict=True):
            # (whether a cell has outputs, not their text: `make notebooks` may be rewriting
            # them while this runs)
            assert after.source == before.source, path
            assert bool(after.get("outputs")) == bool(before.get("outputs")), path
            if GUARD_TAG in before.metadata.get("tags", []):
                assert "hide-input" in after.metadata.tags, path
                assert after.metadata.mystnb == GUARD_PROMPTS, path
    hood = nbformat.read(src / UNDER_THE_HOOD, as_version=4)
    assert any(c.get("outputs") for c in hood.cells), "the maintainers' notebook's outputs"


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


# --- figure descriptions ------------------------------------------------------------------


def _image_output(png: bytes, alt: str | None) -> dict:
    metadata = {"image/png": {"alt": alt}} if alt else {}
    data = {"image/png": base64.b64encode(png).decode(), "text/plain": "<Figure>"}
    return {"output_type": "display_data", "data": data, "metadata": metadata}


def test_each_figure_of_a_page_gets_the_description_its_output_carries(tmp_path):
    outputs = [_image_output(b"first png", "Bars of two runs."), _image_output(b"other", None)]
    notebook = {"cells": [{"cell_type": "code", "source": "", "metadata": {}, "outputs": outputs}]}
    first = hashlib.sha256(b"first png").hexdigest()
    assert figure_descriptions(notebook) == {first: "Bars of two runs."}
    path = tmp_path / "page.ipynb"
    path.write_text(json.dumps(notebook))
    doctree = nodes.section()
    # MyST-NB names an image's file by the sha256 of its bytes
    doctree += nodes.image(uri=f"../_build/jupyter_execute/{first}.png")
    doctree += nodes.image(uri=f"{hashlib.sha256(b'other').hexdigest()}.png")
    describe_figures(doctree, path)
    described, plain = doctree.findall(nodes.image)
    assert described["alt"] == "Bars of two runs." and "alt" not in plain


def test_an_image_is_described_by_words_not_by_its_file(tmp_path):
    (tmp_path / "index.html").write_text(
        '<img src="_images/a.png" alt="Bars of two runs, one per seed."> <img src="b.png">'
        ' <img src="_images/c.png" alt="_images/c.png"> <img src="d.png" alt="  ">'
        ' <img src="e.svg" alt="../_images/e.svg">'
    )
    images = site_images(tmp_path)
    assert [image.src for image in images] == ["_images/a.png", "b.png", "_images/c.png",
                                               "d.png", "e.svg"]  # fmt: skip
    assert [image.src for image in undescribed_images(tmp_path)] == [
        "b.png",
        "_images/c.png",
        "d.png",
        "e.svg",
    ]
    assert Image("p.html", "x.png", "A ratio of 4/3 and a file, x.png.").described()


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
        opens = launch_path(notebook.path)
        expected = binder_url(built_site.repo, opens).replace("&", "&amp;")
        assert f'href="{expected}"' in html, f"{page.name}: no Binder link {expected}"
        colab = colab_url(built_site.repo, opens)
        if opens != notebook.path and installs_from(ROOT / opens, built_site.repo):
            assert f'href="{colab}"' in html, f"{page.name}: no Colab link {colab}"
        else:  # the committed workbooks install from repository.url, unset: no Colab link
            assert "colab.research.google.com" not in html, page.name
        make_lab, jupyter_lab = local_commands(opens)
        if opens != notebook.path:  # make lab opens the student's copy, my-work/NN_name.ipynb
            assert make_lab == f"make lab NOTEBOOK={my_work_path(opens)}", page.name
        assert make_lab in _text(html), page.name
        assert jupyter_lab in _text(html), page.name

        cells = nbformat.read(ROOT / notebook.path, as_version=4).cells
        solutions = [c for c in cells if c.metadata.get("nbgrader", {}).get("solution")]
        assert html.count("Show the solution") == len(solutions), page.name
        guards = [c for c in cells if GUARD_TAG in c.metadata.get("tags", [])]
        folded_guards = html.count(html_text.escape(GUARD_PROMPTS["code_prompt_show"]))
        assert folded_guards == len(guards), page.name
        widgets = sum(
            "application/vnd.jupyter.widget-view+json" in output.get("data", {})
            for cell in cells
            for output in cell.get("outputs", [])
        )
        assert "application/vnd.jupyter.widget-view+json" not in html, page.name
        assert html.count('class="course-widget') == widgets, page.name


def test_the_maintainers_notebook_is_a_guide_page_with_its_outputs(built_site):
    page = built_site.html / f"{UNDER_THE_HOOD.removesuffix('.ipynb')}.html"
    html = page.read_text(encoding="utf-8")
    cells = nbformat.read(ROOT / UNDER_THE_HOOD, as_version=4).cells
    with_outputs = [c for c in cells if c.cell_type == "code" and c.outputs]
    assert html.count('class="cell_output') == len(with_outputs), page.name
    assert "<img" in html, f"{page.name}: its stored figure"
    # its launch links open the notebook itself: it has no workbook
    expected = binder_url(built_site.repo, UNDER_THE_HOOD).replace("&", "&amp;")
    assert f'href="{expected}"' in html, f"{page.name}: no Binder link {expected}"
    assert f"make lab NOTEBOOK={UNDER_THE_HOOD}" in _text(html)
    assert "colab.research.google.com" not in html and "my-work/" not in _text(html)
    index = (built_site.html / "index.html").read_text(encoding="utf-8")
    assert f'href="{UNDER_THE_HOOD.removesuffix(".ipynb")}.html"' in index


def test_every_figure_on_the_site_says_what_it_shows(built_site):
    """Issue 44: each figure's alt text is the description its notebook output carries (set by
    the gptlib plot that drew it), not the image's file path."""
    images = site_images(built_site.html)
    stored: dict[str, list[str | None]] = {}
    for path in [*(n.path for n in course.notebooks()), UNDER_THE_HOOD]:
        page = f"{path.removesuffix('.ipynb')}.html"
        for cell in nbformat.read(ROOT / path, as_version=4).cells:
            for output in cell.get("outputs", []):
                if "image/png" in output.get("data", {}):
                    alt = output.get("metadata", {}).get("image/png", {}).get("alt")
                    stored.setdefault(page, []).append(alt)
    assert len(images) == sum(len(alts) for alts in stored.values()), "a figure went missing"
    undescribed = [image for image in images if not image.described()]
    assert undescribed == [], (
        f"{len(undescribed)} of {len(images)} figures without a description (regenerate the "
        "notebooks; a figure drawn in a cell needs describe(fig, ...)):\n"
        + "\n".join(f"{image.page}: alt={image.alt!r}" for image in undescribed)
    )
    for page, alts in stored.items():
        assert [image.alt for image in images if image.page == page] == alts, page


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
