"""Launch links of the course website: open one notebook in JupyterLab (or Colab), online or
locally.

A student opens the notebook's workbook, `workbook/NN_name.ipynb` (its exercises unsolved),
wherever the repository has one for `notebooks/NN_name.ipynb` (`launch_path`); the website's
pages show the solved notebooks with their outputs. Formats (each notebook page shows them;
`repo_url` is the repository's public https address, `ref` a branch, tag or commit, `path` the
path in the repository of the notebook a student opens):

- Binder, which builds the environment from the repository's `environment.yml`:
  GitHub: `{binderhub}/v2/gh/{owner}/{repo}/{ref}?urlpath=lab%2Ftree%2F{path}`;
  GitLab: `{binderhub}/v2/gl/{owner}%2F{repo}/{ref}?urlpath=...`;
  any other git host: `{binderhub}/v2/git/{repo_url, every character escaped}/{ref}?urlpath=...`.
- A JupyterHub with nbgitpuller (its image built from `environment.yml`), which clones or
  updates the repository into the user's home and opens the notebook:
  `{hub}/hub/user-redirect/git-pull?repo={repo_url}&branch={ref}&urlpath=lab%2Ftree%2F{repo}%2F{path}`
  (query values urlencoded; nbgitpuller clones into a folder named after the repository).
- Google Colab, GitHub repositories only, which opens the one file without the repository (a
  workbook's first cell installs gptlib when it is missing):
  `https://colab.research.google.com/github/{owner}/{repo}/blob/{ref, escaped}/{path, escaped}`.
- Locally, from a clone: `make lab NOTEBOOK={path}`, or `jupyter lab {path}` where gptlib and
  JupyterLab are installed. For a workbook, `make lab` opens the student's own copy,
  `make lab NOTEBOOK=my-work/NN_name.ipynb`: it first copies the workbook into `my-work/`
  (`scripts/editions.py open`, which never overwrites a copy the student changed), so that path
  exists once it runs; `jupyter lab workbook/NN_name.ipynb` opens the workbook itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import quote, urlencode, urlsplit

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = "notebooks"
WORKBOOK = "workbook"
MY_WORK = "my-work"  # the student's copies of the workbook (`make lab` makes them)
COLAB = "https://colab.research.google.com"
_SCP_LIKE = re.compile(r"^(?:[\w.-]+@)?(?P<host>[\w.-]+):(?P<path>(?!//)[\w./~-]+)$")


def public_repo_url(url: str) -> str | None:
    """The https address of a git remote, or None when it has none (a local path, empty).

    'git@github.com:org/repo.git' -> 'https://github.com/org/repo';
    'https://host/org/repo.git/' -> 'https://host/org/repo'.
    """
    url = url.strip()
    match = _SCP_LIKE.match(url)
    if match and "/" in match["path"]:
        url = f"https://{match['host']}/{match['path']}"
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        return None
    path = parts.path.rstrip("/").removesuffix(".git").rstrip("/")
    if not path.strip("/"):
        return None
    return f"{parts.scheme}://{parts.netloc}{path}"


@dataclass(frozen=True)
class Repository:
    """Where the notebooks live: a public https address and the ref to launch."""

    url: str
    ref: str = "main"

    def __post_init__(self) -> None:
        if public_repo_url(self.url) != self.url:
            raise ValueError(
                f"repository url {self.url!r} is not a public https repository address; "
                "give one like 'https://github.com/owner/repo' (no trailing '.git' or '/')"
            )
        if not self.ref or any(c.isspace() for c in self.ref):
            raise ValueError(f"ref={self.ref!r}: give a branch, tag or commit, without spaces")

    @property
    def name(self) -> str:
        """The repository's folder name, e.g. 'gptlib-notebooks' (nbgitpuller clones into it)."""
        return self.url.rsplit("/", 1)[-1]


def workbook_path(notebook_path: str) -> str:
    """The workbook of a course notebook: 'notebooks/02_x.ipynb' -> 'workbook/02_x.ipynb'."""
    notebook = PurePosixPath(notebook_path)
    if notebook.parent != PurePosixPath(NOTEBOOKS) or notebook.suffix != ".ipynb":
        raise ValueError(f"{notebook_path!r}: give a course notebook, {NOTEBOOKS}/NN_name.ipynb")
    return f"{WORKBOOK}/{notebook.name}"


def launch_path(notebook_path: str, root: Path = ROOT) -> str:
    """The notebook a student opens for `notebook_path`: its workbook where `root` (the
    repository) has one, else the notebook itself."""
    try:
        workbook = workbook_path(notebook_path)
    except ValueError:  # not a course notebook, so it has no workbook
        return notebook_path
    return workbook if (root / workbook).is_file() else notebook_path


def _checked(path: str) -> str:
    if not path or path.startswith("/") or "\\" in path:
        raise ValueError(f"notebook path {path!r}: give it relative to the repository root")
    return path


def _lab_urlpath(path: str) -> str:
    return f"lab/tree/{_checked(path)}"


def _github_owner_repo(repo: Repository) -> str | None:
    """'owner/repo' of a repository on github.com, None for any other host."""
    parts = urlsplit(repo.url)
    owner_repo = parts.path.strip("/")
    github = parts.netloc.lower() == "github.com" and owner_repo.count("/") == 1
    return owner_repo if github else None


def binder_url(repo: Repository, path: str, binderhub: str = "https://mybinder.org") -> str:
    """A Binder link that builds `repo` at its ref and opens `path` in JupyterLab."""
    parts = urlsplit(repo.url)
    github = _github_owner_repo(repo)
    ref = quote(repo.ref, safe="")
    if github:
        spec = f"gh/{quote(github, safe='/')}/{ref}"
    elif parts.netloc.lower() == "gitlab.com":
        spec = f"gl/{quote(parts.path.strip('/'), safe='')}/{ref}"
    else:
        spec = f"git/{quote(repo.url, safe='')}/{ref}"
    query = urlencode({"urlpath": _lab_urlpath(path)}, quote_via=quote)
    return f"{binderhub.rstrip('/')}/v2/{spec}?{query}"


def jupyterhub_url(repo: Repository, path: str, hub: str) -> str:
    """An nbgitpuller link: `hub` pulls `repo` at its ref into the user's home, opens `path`."""
    query = urlencode(
        {
            "repo": repo.url,
            "branch": repo.ref,
            "urlpath": _lab_urlpath(f"{repo.name}/{_checked(path)}"),
        },
        quote_via=quote,
    )
    return f"{hub.rstrip('/')}/hub/user-redirect/git-pull?{query}"


def colab_url(repo: Repository, path: str) -> str | None:
    """A Colab link that opens `path` of `repo` at its ref; None where `repo` is not on GitHub
    (Colab opens notebooks from GitHub only)."""
    path = _checked(path)
    github = _github_owner_repo(repo)
    if github is None:
        return None
    ref = quote(repo.ref, safe="")  # a '/' of a branch name must not read as part of the path
    return f"{COLAB}/github/{quote(github, safe='/')}/blob/{ref}/{quote(path, safe='/')}"


def my_work_path(path: str) -> str | None:
    """The student's copy of a workbook, which `make lab` makes and opens:
    'workbook/02_x.ipynb' -> 'my-work/02_x.ipynb'; None for a path outside the workbook."""
    notebook = PurePosixPath(_checked(path))
    if notebook.parent != PurePosixPath(WORKBOOK) or notebook.suffix != ".ipynb":
        return None
    return f"{MY_WORK}/{notebook.name}"


def local_commands(path: str) -> tuple[str, str]:
    """(from a fresh clone, where gptlib is installed): the two ways to open `path` (the
    notebook a student opens, `launch_path`) locally. `make lab` opens a workbook's copy in
    my-work/, which it makes first; `jupyter lab` opens `path` itself."""
    return f"make lab NOTEBOOK={my_work_path(path) or path}", f"jupyter lab {_checked(path)}"
