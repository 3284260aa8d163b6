"""Text corpora: Tiny Shakespeare (downloaded once, checksum-verified) and the embedded sonnets.

Introduced in notebook 07. Where Tiny Shakespeare comes from, in order:

1. the directory named by the environment variable ``GPTLIB_DATA_DIR`` (offline use, tests, CI),
   holding ``tinyshakespeare.txt``;
2. the cache, ``$GPTLIB_CACHE`` or ``~/.cache/gptlib``;
3. a download from the char-rnn repository into the cache.

Every copy is checked against its SHA-256 before use.
"""

from __future__ import annotations

import hashlib
import os
import urllib.request
from pathlib import Path

from gptlib._atomic import atomic_path
from gptlib.data.sonnets import SONNETS

DATA_DIR_ENV = "GPTLIB_DATA_DIR"
CACHE_ENV = "GPTLIB_CACHE"
TINY_SHAKESPEARE_FILE = "tinyshakespeare.txt"
TINY_SHAKESPEARE_URL = (
    "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
)
TINY_SHAKESPEARE_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
TINY_SHAKESPEARE_CHARS = 1_115_394
CORPUS_NAMES = ("tinyshakespeare", "sonnets")


class CorpusUnavailableError(RuntimeError):
    """Tiny Shakespeare is neither on disk nor downloadable; the message says where we looked."""


def cache_dir() -> Path:
    """Where downloads are kept: ``$GPTLIB_CACHE`` if set, else ``~/.cache/gptlib``."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "gptlib").expanduser()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_verified(path: Path) -> str:
    data = path.read_bytes()
    digest = _sha256(data)
    if digest != TINY_SHAKESPEARE_SHA256:
        raise ValueError(
            f"{path} is not Tiny Shakespeare: its SHA-256 is {digest}, expected "
            f"{TINY_SHAKESPEARE_SHA256} ({len(data):,} bytes; the real file has "
            f"{TINY_SHAKESPEARE_CHARS:,} characters). Delete it and run again to download a "
            f"fresh copy, or replace it with the file from {TINY_SHAKESPEARE_URL}"
        )
    return data.decode("utf-8")


def _fetch(url: str, timeout: float = 30.0) -> bytes:
    """The bytes at `url` (raises OSError on network trouble)."""
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read()


def tiny_shakespeare(download: bool = True) -> str:
    """Tiny Shakespeare, 1,115,394 characters (notebook 07).

    Looks in ``$GPTLIB_DATA_DIR``, then the cache, then (if `download`) fetches it into the
    cache. Raises ValueError for a copy whose checksum is wrong and CorpusUnavailableError,
    listing the places tried, when there is no copy to be had.
    """
    tried = []
    data_dir = os.environ.get(DATA_DIR_ENV)
    if data_dir:
        path = Path(data_dir).expanduser() / TINY_SHAKESPEARE_FILE
        if path.is_file():
            return _read_verified(path)
        tried.append(f"{path} (from {DATA_DIR_ENV}; no such file)")
    cached = cache_dir() / TINY_SHAKESPEARE_FILE
    if cached.is_file():
        return _read_verified(cached)
    tried.append(f"{cached} (the cache; not downloaded yet)")
    offline_fix = (
        f"To work offline, put {TINY_SHAKESPEARE_FILE} in a directory and set {DATA_DIR_ENV} "
        f"to it, or copy it to {cached}"
    )
    if not download:
        raise CorpusUnavailableError(
            f"Tiny Shakespeare is not on this machine; looked in: {'; '.join(tried)}. "
            f"Allow a download, or: {offline_fix}"
        )
    try:
        data = _fetch(TINY_SHAKESPEARE_URL)
    except OSError as exc:
        raise CorpusUnavailableError(
            f"could not download Tiny Shakespeare from {TINY_SHAKESPEARE_URL} ({exc}); also "
            f"looked in: {'; '.join(tried)}. {offline_fix}"
        ) from exc
    digest = _sha256(data)
    if digest != TINY_SHAKESPEARE_SHA256:
        raise ValueError(
            f"the download from {TINY_SHAKESPEARE_URL} has SHA-256 {digest}, expected "
            f"{TINY_SHAKESPEARE_SHA256}; nothing was saved. Try again later. {offline_fix}"
        )
    with atomic_path(cached) as tmp:
        tmp.write_bytes(data)
    return data.decode("utf-8")


def load_corpus(name: str, download: bool = True) -> str:
    """A corpus by name ("tinyshakespeare" or "sonnets") or the path of a UTF-8 text file."""
    if name == "tinyshakespeare":
        return tiny_shakespeare(download=download)
    if name == "sonnets":
        return SONNETS
    path = Path(name).expanduser()
    if path.is_file():
        return path.read_text(encoding="utf-8")
    raise ValueError(
        f"unknown corpus {name!r}: use one of {', '.join(CORPUS_NAMES)} or the path of a text file"
    )


def default_corpus() -> tuple[str, str]:
    """(name, text) of the best corpus available without a network: Tiny Shakespeare if it is
    in ``$GPTLIB_DATA_DIR`` or the cache, else the embedded sonnets."""
    try:
        return "tinyshakespeare", tiny_shakespeare(download=False)
    except CorpusUnavailableError:
        return "sonnets", SONNETS
