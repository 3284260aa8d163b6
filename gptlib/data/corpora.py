"""Text corpora (notebooks 07 and 08): Tiny Shakespeare, packaged with gptlib; the embedded
sonnets; and any text files in the folder named by ``$GPTLIB_DATA_DIR``.

Tiny Shakespeare is the corpus of Karpathy's char-rnn: 1,115,394 characters from Shakespeare's
plays, whose text is in the public domain. gptlib ships it gzip-compressed beside this module and
checks its SHA-256 every time it is read, so nothing is ever downloaded.

``$GPTLIB_DATA_DIR`` may name a folder of UTF-8 ``.txt`` files: each is a corpus named by its
file name without the suffix (``mytext.txt`` → ``load_corpus("mytext")``). A
``tinyshakespeare.txt`` there is read instead of the packaged copy, after the same checksum check.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import zlib
from importlib import resources
from pathlib import Path

from gptlib.data.sonnets import SONNETS

DATA_DIR_ENV = "GPTLIB_DATA_DIR"
TINY_SHAKESPEARE_FILE = "tinyshakespeare.txt"
PACKAGED_TINY_SHAKESPEARE = resources.files(__package__) / "tinyshakespeare.txt.gz"
TINY_SHAKESPEARE_SOURCE = "https://github.com/karpathy/char-rnn (data/tinyshakespeare/input.txt)"
TINY_SHAKESPEARE_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
TINY_SHAKESPEARE_CHARS = 1_115_394
CORPUS_NAMES = ("tinyshakespeare", "sonnets")


def _data_dir() -> Path | None:
    """The folder named by ``$GPTLIB_DATA_DIR``, or None when the variable is unset or empty."""
    value = os.environ.get(DATA_DIR_ENV)
    return Path(value).expanduser() if value else None


def _verified(data: bytes, source: str, fix: str) -> str:
    """`data` decoded, if its SHA-256 is Tiny Shakespeare's; else ValueError naming both."""
    digest = hashlib.sha256(data).hexdigest()
    if digest != TINY_SHAKESPEARE_SHA256:
        raise ValueError(
            f"{source} is not Tiny Shakespeare: its SHA-256 is {digest}, expected "
            f"{TINY_SHAKESPEARE_SHA256} ({len(data):,} bytes; the real text has "
            f"{TINY_SHAKESPEARE_CHARS:,} characters). {fix}"
        )
    return data.decode("utf-8")


def tiny_shakespeare() -> str:
    """Tiny Shakespeare, 1,115,394 characters (notebook 08), checksum-verified on every call.

    Reads ``$GPTLIB_DATA_DIR/tinyshakespeare.txt`` if there is one, else the copy packaged with
    gptlib. Raises ValueError, with both checksums, for a copy that is not the real text.
    """
    folder = _data_dir()
    if folder is not None and (folder / TINY_SHAKESPEARE_FILE).is_file():
        override = folder / TINY_SHAKESPEARE_FILE
        return _verified(
            override.read_bytes(),
            str(override),
            f"Remove it from {DATA_DIR_ENV} to use the copy packaged with gptlib, or replace it "
            f"with the original from {TINY_SHAKESPEARE_SOURCE}",
        )
    reinstall = "Reinstall gptlib (or restore the file with git) to get an intact copy"
    try:
        data = gzip.decompress(PACKAGED_TINY_SHAKESPEARE.read_bytes())
    except (OSError, EOFError, zlib.error) as exc:
        raise ValueError(
            f"the copy of Tiny Shakespeare packaged with gptlib ({PACKAGED_TINY_SHAKESPEARE}) is "
            f"damaged: {exc}. {reinstall}"
        ) from exc
    return _verified(data, f"the packaged copy {PACKAGED_TINY_SHAKESPEARE}", reinstall)


def _data_dir_corpora() -> dict[str, Path]:
    """Corpus name → file, for the .txt files in ``$GPTLIB_DATA_DIR`` (none if it is unset)."""
    folder = _data_dir()
    if folder is None or not folder.is_dir():
        return {}
    return {path.stem: path for path in sorted(folder.glob("*.txt")) if path.is_file()}


def load_corpus(name: str) -> str:
    """A corpus by name or path, as text (notebook 08, the command line).

    `name` is "tinyshakespeare", "sonnets", the name of a ``.txt`` file in ``$GPTLIB_DATA_DIR``
    (without the suffix; the two built-in names take precedence) or the path of a UTF-8 file.
    """
    if name == "tinyshakespeare":
        return tiny_shakespeare()
    if name == "sonnets":
        return SONNETS
    in_data_dir = _data_dir_corpora()
    if name in in_data_dir:
        return in_data_dir[name].read_text(encoding="utf-8")
    path = Path(name).expanduser()
    if path.is_file():
        return path.read_text(encoding="utf-8")
    names = ", ".join([*CORPUS_NAMES, *(n for n in in_data_dir if n not in CORPUS_NAMES)])
    folder = _data_dir()
    if folder is None:
        hint = f"(or set {DATA_DIR_ENV} to a folder of .txt files and use their names)"
    elif not folder.is_dir():
        hint = f"({DATA_DIR_ENV}={folder} is not a folder)"
    else:
        hint = f"({DATA_DIR_ENV}={folder} provides its .txt files by name)"
    raise ValueError(
        f"unknown corpus {name!r}: use one of {names} or the path of a text file {hint}"
    )


def default_corpus() -> tuple[str, str]:
    """(name, text) of the corpus the command line trains on by default: Tiny Shakespeare."""
    return "tinyshakespeare", tiny_shakespeare()
