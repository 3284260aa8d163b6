"""Corpora: env dir, cache, download, checksum, offline."""

import hashlib

import pytest

import gptlib.data.corpora as corpora
from gptlib.data import (
    SONNETS,
    CharTokenizer,
    CorpusUnavailableError,
    default_corpus,
    load_corpus,
    tiny_shakespeare,
)

TS_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """No data dir, an empty cache, and a network that fails the test if it is used."""
    monkeypatch.delenv("GPTLIB_DATA_DIR", raising=False)
    monkeypatch.setenv("GPTLIB_CACHE", str(tmp_path / "cache"))

    def no_network(url, timeout=30.0):
        raise AssertionError(f"unexpected download of {url}")

    monkeypatch.setattr(corpora, "_fetch", no_network)
    return tmp_path


@pytest.fixture
def fake_corpus(monkeypatch):
    """Pretend Tiny Shakespeare is a small text with a known checksum."""
    data = ("First Citizen:\nBefore we proceed any further, hear me speak.\n" * 40).encode()
    monkeypatch.setattr(corpora, "TINY_SHAKESPEARE_SHA256", hashlib.sha256(data).hexdigest())
    return data


def test_the_real_checksum_and_size_are_the_published_ones():
    assert corpora.TINY_SHAKESPEARE_SHA256 == TS_SHA256
    assert corpora.TINY_SHAKESPEARE_CHARS == 1_115_394
    assert corpora.TINY_SHAKESPEARE_URL.startswith("https://raw.githubusercontent.com/karpathy/")


def test_reads_from_the_data_dir(isolated, fake_corpus, monkeypatch):
    data_dir = isolated / "data"
    data_dir.mkdir()
    (data_dir / "tinyshakespeare.txt").write_bytes(fake_corpus)
    monkeypatch.setenv("GPTLIB_DATA_DIR", str(data_dir))
    assert tiny_shakespeare() == fake_corpus.decode()


def test_downloads_once_into_the_cache_then_reads_the_cache(isolated, fake_corpus, monkeypatch):
    calls = []

    def fetch(url, timeout=30.0):
        calls.append(url)
        return fake_corpus

    monkeypatch.setattr(corpora, "_fetch", fetch)
    assert tiny_shakespeare() == fake_corpus.decode()
    assert tiny_shakespeare() == fake_corpus.decode()
    assert calls == [corpora.TINY_SHAKESPEARE_URL]
    cached = isolated / "cache" / "tinyshakespeare.txt"
    assert cached.read_bytes() == fake_corpus
    assert [p.name for p in cached.parent.iterdir()] == ["tinyshakespeare.txt"]  # no temp files


def test_data_dir_without_the_file_falls_back_to_the_cache(isolated, fake_corpus, monkeypatch):
    monkeypatch.setenv("GPTLIB_DATA_DIR", str(isolated / "empty"))
    cache = isolated / "cache"
    cache.mkdir()
    (cache / "tinyshakespeare.txt").write_bytes(fake_corpus)
    assert tiny_shakespeare() == fake_corpus.decode()


def test_a_corrupt_copy_is_refused_with_both_checksums(isolated, fake_corpus, monkeypatch):
    data_dir = isolated / "data"
    data_dir.mkdir()
    (data_dir / "tinyshakespeare.txt").write_bytes(fake_corpus[:-1])
    monkeypatch.setenv("GPTLIB_DATA_DIR", str(data_dir))
    expected = hashlib.sha256(fake_corpus).hexdigest()
    got = hashlib.sha256(fake_corpus[:-1]).hexdigest()
    with pytest.raises(ValueError, match=f"SHA-256 is {got}, expected {expected}.*Delete it"):
        tiny_shakespeare()


def test_a_corrupt_download_is_not_cached(isolated, fake_corpus, monkeypatch):
    monkeypatch.setattr(corpora, "_fetch", lambda url, timeout=30.0: b"<html>rate limited</html>")
    with pytest.raises(ValueError, match="nothing was saved"):
        tiny_shakespeare()
    assert not (isolated / "cache" / "tinyshakespeare.txt").exists()


def test_offline_without_a_copy_says_where_it_looked_and_what_to_do(isolated, monkeypatch):
    monkeypatch.setenv("GPTLIB_DATA_DIR", str(isolated / "nowhere"))

    def offline(url, timeout=30.0):
        raise OSError("Temporary failure in name resolution")

    monkeypatch.setattr(corpora, "_fetch", offline)
    with pytest.raises(CorpusUnavailableError) as info:
        tiny_shakespeare()
    message = str(info.value)
    assert "could not download" in message and "name resolution" in message
    assert str(isolated / "nowhere" / "tinyshakespeare.txt") in message
    assert "set GPTLIB_DATA_DIR" in message
    with pytest.raises(CorpusUnavailableError, match="not on this machine"):
        tiny_shakespeare(download=False)


def test_load_corpus_by_name_or_path_and_default(isolated, tmp_path):
    assert load_corpus("sonnets") == SONNETS
    path = tmp_path / "mine.txt"
    path.write_text("to be or not to be", encoding="utf-8")
    assert load_corpus(str(path)) == "to be or not to be"
    with pytest.raises(ValueError, match="unknown corpus 'shakespear'.*tinyshakespeare, sonnets"):
        load_corpus("shakespear")
    assert default_corpus() == ("sonnets", SONNETS)  # offline and nothing cached: no download


def test_the_real_tiny_shakespeare_when_the_environment_provides_it():
    # CI and the test suite set GPTLIB_DATA_DIR to a directory holding the real file
    try:
        text = tiny_shakespeare(download=False)
    except CorpusUnavailableError:
        pytest.skip("Tiny Shakespeare is not available offline here (set GPTLIB_DATA_DIR)")
    assert len(text) == 1_115_394
    assert CharTokenizer.from_text(text).vocab_size == 65
    assert text.startswith("First Citizen:")


def test_embedded_sonnets_are_a_few_kilobytes_of_shakespeare():
    assert 4_000 < len(SONNETS) < 8_000
    assert SONNETS.startswith("XVIII\n\nShall I compare thee to a summer's day?")
    assert SONNETS.count("\n\n") == 15  # 8 sonnets: heading, blank, 14 lines each
