"""Launch links of the course website: open one notebook in JupyterLab, online or locally.

Formats (each notebook page shows them; `repo_url` is the repository's public https address,
`ref` a branch, tag or commit, `path` the notebook's path in the repository):

- Binder, which builds the environment from the repository's `environment.yml`:
  GitHub: `{binderhub}/v2/gh/{owner}/{repo}/{ref}?urlpath=lab%2Ftree%2F{path}`;
  GitLab: `{binderhub}/v2/gl/{owner}%2F{repo}/{ref}?urlpath=...`;
  any other git host: `{binderhub}/v2/git/{repo_url, every character escaped}/{ref}?urlpath=...`.
- A JupyterHub with nbgitpuller (its image built from `environment.yml`), which clones or
  updates the repository into the user's home and opens the notebook:
  `{hub}/hub/user-redirect/git-pull?repo={repo_url}&branch={ref}&urlpath=lab%2Ftree%2F{repo}%2F{path}`
  (query values urlencoded; nbgitpuller clones into a folder named after the repository).
- Locally, from a clone: `make lab NOTEBOOK={path}`, or `jupyter lab {path}` where gptlib and
  JupyterLab are installed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, urlencode, urlsplit

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


def _lab_urlpath(path: str) -> str:
    if not path or path.startswith("/") or "\\" in path:
        raise ValueError(f"notebook path {path!r}: give it relative to the repository root")
    return f"lab/tree/{path}"


def binder_url(repo: Repository, path: str, binderhub: str = "https://mybinder.org") -> str:
    """A Binder link that builds `repo` at its ref and opens `path` in JupyterLab."""
    parts = urlsplit(repo.url)
    owner_repo = parts.path.strip("/")
    host = parts.netloc.lower()
    if host == "github.com" and owner_repo.count("/") == 1:
        spec = f"gh/{quote(owner_repo, safe='/')}/{quote(repo.ref, safe='')}"
    elif host == "gitlab.com":
        spec = f"gl/{quote(owner_repo, safe='')}/{quote(repo.ref, safe='')}"
    else:
        spec = f"git/{quote(repo.url, safe='')}/{quote(repo.ref, safe='')}"
    query = urlencode({"urlpath": _lab_urlpath(path)}, quote_via=quote)
    return f"{binderhub.rstrip('/')}/v2/{spec}?{query}"


def jupyterhub_url(repo: Repository, path: str, hub: str) -> str:
    """An nbgitpuller link: `hub` pulls `repo` at its ref into the user's home, opens `path`."""
    query = urlencode(
        {
            "repo": repo.url,
            "branch": repo.ref,
            "urlpath": _lab_urlpath(f"{repo.name}/{path}"),
        },
        quote_via=quote,
    )
    return f"{hub.rstrip('/')}/hub/user-redirect/git-pull?{query}"


def local_commands(path: str) -> tuple[str, str]:
    """(from a fresh clone, where gptlib is installed): the two ways to open `path` locally."""
    _lab_urlpath(path)
    return f"make lab NOTEBOOK={path}", f"jupyter lab {path}"
