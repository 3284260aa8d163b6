"""Corpora: Tiny Shakespeare packaged and checksum-verified, offline; GPTLIB_DATA_DIR corpora."""

import gzip
import hashlib
import shutil
import socket
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import gptlib.data.corpora as corpora
from gptlib.data import SONNETS, CharTokenizer, default_corpus, load_corpus, tiny_shakespeare

ROOT = Path(__file__).resolve().parents[2]
PACKAGED = ROOT / "gptlib" / "data" / "tinyshakespeare.txt.gz"
# the published checksum of karpathy/char-rnn's data/tinyshakespeare/input.txt
TS_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """No network, an empty home and cache, and no GPTLIB_DATA_DIR: a fresh offline machine."""

    def no_network(*args, **kwargs):
        raise AssertionError("the corpus tried to use the network")

    monkeypatch.setattr(socket, "socket", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("GPTLIB_DATA_DIR", raising=False)
    return tmp_path


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    folder = tmp_path / "data"
    folder.mkdir()
    monkeypatch.setenv("GPTLIB_DATA_DIR", str(folder))
    return folder


def real_text() -> bytes:
    return gzip.decompress(PACKAGED.read_bytes())


def test_the_packaged_corpus_loads_offline_and_is_the_published_text(offline):
    text = tiny_shakespeare()
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == TS_SHA256
    assert len(text) == 1_115_394
    assert CharTokenizer.from_text(text).vocab_size == 65
    assert text.startswith("First Citizen:\nBefore we proceed any further, hear me speak.")
    assert default_corpus() == ("tinyshakespeare", text)
    assert load_corpus("tinyshakespeare") == text
    assert corpora.TINY_SHAKESPEARE_SHA256 == TS_SHA256
    assert corpora.TINY_SHAKESPEARE_CHARS == 1_115_394


def test_the_packaged_file_is_small():
    assert 300_000 < PACKAGED.stat().st_size < 500_000  # 1.1 MB of text, gzip -9


def test_a_corrupted_packaged_copy_is_refused_with_both_checksums(tmp_path, monkeypatch):
    text = real_text()
    corrupted = text.replace(b"First Citizen", b"First Citizan", 1)
    fake = tmp_path / "tinyshakespeare.txt.gz"
    fake.write_bytes(gzip.compress(corrupted))
    monkeypatch.setattr(corpora, "PACKAGED_TINY_SHAKESPEARE", fake)
    monkeypatch.delenv("GPTLIB_DATA_DIR", raising=False)
    got = hashlib.sha256(corrupted).hexdigest()
    with pytest.raises(ValueError, match=f"SHA-256 is {got}, expected {TS_SHA256}.*Reinstall"):
        tiny_shakespeare()
    fake.write_bytes(gzip.compress(text))  # the same file intact: accepted
    assert tiny_shakespeare() == text.decode()


def test_a_damaged_packaged_file_is_refused(tmp_path, monkeypatch):
    fake = tmp_path / "tinyshakespeare.txt.gz"
    monkeypatch.setattr(corpora, "PACKAGED_TINY_SHAKESPEARE", fake)
    monkeypatch.delenv("GPTLIB_DATA_DIR", raising=False)
    for damaged in (PACKAGED.read_bytes()[:100_000], b"not gzip at all"):
        fake.write_bytes(damaged)
        with pytest.raises(ValueError, match="packaged with gptlib .* is damaged.*Reinstall"):
            tiny_shakespeare()


def test_a_copy_in_the_data_dir_is_used_and_verified(data_dir, monkeypatch):
    text = real_text()
    monkeypatch.setattr(corpora, "PACKAGED_TINY_SHAKESPEARE", data_dir / "absent.gz")
    (data_dir / "tinyshakespeare.txt").write_bytes(text)
    assert tiny_shakespeare() == text.decode()  # read from the data dir, not the package
    (data_dir / "tinyshakespeare.txt").write_bytes(text[:-1])
    got = hashlib.sha256(text[:-1]).hexdigest()
    with pytest.raises(ValueError, match=f"SHA-256 is {got}, expected {TS_SHA256}.*Remove it"):
        tiny_shakespeare()


def test_other_corpora_by_name_from_the_data_dir(data_dir, monkeypatch):
    (data_dir / "psalms.txt").write_text("The Lord is my shepherd", encoding="utf-8")
    (data_dir / "notes.md").write_text("not a corpus", encoding="utf-8")
    assert load_corpus("psalms") == "The Lord is my shepherd"
    (data_dir / "sonnets.txt").write_text("not the sonnets", encoding="utf-8")
    assert load_corpus("sonnets") == SONNETS  # built-in names come first
    with pytest.raises(ValueError) as info:
        load_corpus("notes")
    message = str(info.value)
    assert "unknown corpus 'notes': use one of tinyshakespeare, sonnets, psalms " in message
    assert f"GPTLIB_DATA_DIR={data_dir} provides its .txt files by name" in message
    monkeypatch.setenv("GPTLIB_DATA_DIR", str(data_dir / "nowhere"))
    with pytest.raises(ValueError, match=r"GPTLIB_DATA_DIR=.*nowhere is not a folder\)"):
        load_corpus("psalms")


def test_load_corpus_by_path_and_unknown_names(offline, tmp_path):
    assert load_corpus("sonnets") == SONNETS
    path = tmp_path / "mine.txt"
    path.write_text("to be or not to be", encoding="utf-8")
    assert load_corpus(str(path)) == "to be or not to be"
    with pytest.raises(ValueError, match="unknown corpus 'shakespear'.*tinyshakespeare, sonnets"):
        load_corpus("shakespear")
    with pytest.raises(ValueError, match="or set GPTLIB_DATA_DIR to a folder of .txt files"):
        load_corpus("shakespear")


def test_embedded_sonnets_are_a_few_kilobytes_of_shakespeare():
    assert 4_000 < len(SONNETS) < 8_000
    assert SONNETS.startswith("XVIII\n\nShall I compare thee to a summer's day?")
    assert SONNETS.count("\n\n") == 15  # 8 sonnets: heading, blank, 14 lines each


@pytest.mark.slow
def test_the_wheel_and_the_sdist_carry_the_corpus(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    shutil.copy(ROOT / "pyproject.toml", source)
    shutil.copy(ROOT / "README.md", source)
    shutil.copytree(
        ROOT / "gptlib", source / "gptlib", ignore=shutil.ignore_patterns("__pycache__")
    )
    out = tmp_path / "dist"
    for hook in ("build_wheel", "build_sdist"):
        subprocess.run(
            [sys.executable, "-W", "ignore", "-c",
             f"import sys; from setuptools import build_meta; build_meta.{hook}(sys.argv[1])",
             str(out)],
            cwd=source, check=True, capture_output=True,
        )  # fmt: skip
    (wheel,) = out.glob("gptlib-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        assert archive.read("gptlib/data/tinyshakespeare.txt.gz") == PACKAGED.read_bytes()
    (sdist,) = out.glob("gptlib-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    assert f"{sdist.name.removesuffix('.tar.gz')}/gptlib/data/tinyshakespeare.txt.gz" in names
