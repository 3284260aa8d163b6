"""Tokenizer, corpora (env dir, cache, download, checksum, offline) and batch sampling."""

import hashlib

import pytest
import torch

import gptlib.data.corpora as corpora
from gptlib.data import (
    SONNETS,
    BatchSampler,
    CharTokenizer,
    CorpusUnavailableError,
    default_corpus,
    load_corpus,
    tiny_shakespeare,
    train_val_split,
)

# --- tokenizer ---------------------------------------------------------------------------


def test_tokenizer_round_trip_and_sorted_vocabulary():
    tok = CharTokenizer.from_text("hello, world")
    assert tok.chars == " ,dehlorw"
    assert tok.vocab_size == 9
    ids = tok.encode("hello")
    assert ids.dtype == torch.long
    assert ids.tolist() == [4, 3, 5, 5, 6]  # positions of h, e, l, l, o in " ,dehlorw"
    assert tok.decode(ids) == "hello"
    assert tok.decode([0, 1]) == " ,"


def test_encode_matches_a_python_dictionary_on_unicode_text():
    text = "naïve café — Ω≈ç √x ∫ 🙂 done 🙂"
    tok = CharTokenizer.from_text(text)
    stoi = {c: i for i, c in enumerate(sorted(set(text)))}
    assert tok.encode(text).tolist() == [stoi[c] for c in text]
    assert tok.decode(tok.encode(text)) == text


def test_unknown_characters_are_listed():
    tok = CharTokenizer.from_text("abc")
    with pytest.raises(ValueError, match=r"2 character\(s\) not in the vocabulary of 3: 'x', 'z'"):
        tok.encode("abzxa")
    with pytest.raises(ValueError, match="build the tokenizer from a text that contains them"):
        tok.encode("?")


def test_tokenizer_errors():
    with pytest.raises(ValueError, match="the text is empty"):
        CharTokenizer.from_text("")
    with pytest.raises(ValueError, match="sorted and free of repeats"):
        CharTokenizer("ba")
    tok = CharTokenizer.from_text("ab")
    with pytest.raises(ValueError, match=r"ids \[2, -1\] are not in the vocabulary"):
        tok.decode([0, 2, -1])
    with pytest.raises(ValueError, match="decode each row"):
        tok.decode(torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="encode takes a str"):
        tok.encode(["a"])


def test_tokenizer_dict_round_trip():
    tok = CharTokenizer.from_text(SONNETS)
    assert CharTokenizer.from_dict(tok.to_dict()) == tok
    with pytest.raises(ValueError, match="needs a 'chars' string"):
        CharTokenizer.from_dict({"stoi": {}})


# --- corpora -----------------------------------------------------------------------------

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


# --- split and batches -------------------------------------------------------------------


def test_split_is_first_90_percent_then_last_10_percent():
    ids = torch.arange(1000)
    train, val = train_val_split(ids)
    assert torch.equal(train, ids[:900]) and torch.equal(val, ids[900:])
    train, val = train_val_split(ids, val_fraction=0.25)
    assert len(train) == 750 and len(val) == 250


def test_split_errors():
    with pytest.raises(ValueError, match="the token stream is empty"):
        train_val_split(torch.zeros(0, dtype=torch.long))
    with pytest.raises(ValueError, match="too short to split"):
        train_val_split(torch.arange(5))
    with pytest.raises(ValueError, match="val_fraction must be between 0 and 1"):
        train_val_split(torch.arange(100), 1.0)
    with pytest.raises(ValueError, match="1-D torch.long tensor"):
        train_val_split(torch.arange(10.0))


def test_batches_are_windows_with_targets_shifted_by_one():
    ids = torch.arange(100)  # each id equals its position, so windows are easy to recognise
    x, y = BatchSampler(ids, batch_size=5, block_size=8, seed=0).sample()
    assert x.shape == y.shape == (5, 8)
    starts = x[:, 0]
    assert torch.equal(x, starts[:, None] + torch.arange(8))
    assert torch.equal(y, x + 1)
    assert int(starts.max()) <= 100 - 8 - 1


def test_batches_repeat_with_the_seed_and_cover_every_start():
    ids = torch.arange(20)
    a = BatchSampler(ids, 4, 5, seed=3)
    b = BatchSampler(ids, 4, 5, seed=3)
    for _ in range(5):
        assert all(torch.equal(u, v) for u, v in zip(a.sample(), b.sample(), strict=True))
    starts = torch.cat([a.sample()[0][:, 0] for _ in range(200)])
    assert set(starts.tolist()) == set(range(15))  # every start 0..N-T-1, no window past the end


def test_too_short_text_and_bad_sizes_are_explained():
    with pytest.raises(ValueError, match=r"has 10 tokens, too few for windows of block_size=10"):
        BatchSampler(torch.arange(10), 2, 10)
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        BatchSampler(torch.arange(10), 0, 2)
    with pytest.raises(ValueError, match="the token stream is empty"):
        BatchSampler(torch.zeros(0, dtype=torch.long), 2, 2)
