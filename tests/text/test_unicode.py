"""keras_bert.text._unicode: the Unicode lookup tables and their disk cache."""

import os
import subprocess
import sys
import textwrap
import unicodedata

import numpy as np
import pytest

from keras_bert.text import _unicode

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def fake_build(monkeypatch):
    """Replaces the (seconds-long) build with small arrays; counts calls."""
    calls = []
    tables = {
        name: np.arange(index, index + 3, dtype=np.int32)
        for index, name in enumerate(_unicode._TABLE_NAMES)
    }

    def build(normalization=_unicode.DEFAULT_NORMALIZATION):
        calls.append(normalization)
        return tables

    monkeypatch.setattr(_unicode, "build_unicode_tables", build)
    return tables, calls


def _assert_tables_equal(actual, expected):
    assert sorted(actual) == sorted(expected)
    for name in expected:
        np.testing.assert_array_equal(actual[name], expected[name], err_msg=name)
        assert actual[name].dtype == np.int32


def test_cache_path_follows_the_environment_and_unicode_version(
    monkeypatch, tmp_path
):
    monkeypatch.setenv("KERAS_BERT_CACHE_DIR", str(tmp_path / "mine"))
    path = _unicode.tables_cache_path()
    assert os.path.dirname(path) == str(tmp_path / "mine")
    name = os.path.basename(path)
    assert name.startswith(f"unicode-{unicodedata.unidata_version}-")
    assert name.endswith(".npz") and len(name) > len("unicode--.npz") + 16
    monkeypatch.delenv("KERAS_BERT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert os.path.dirname(_unicode.tables_cache_path()) == str(
        tmp_path / "xdg" / "keras_bert"
    )


def test_tables_are_built_once_then_read_from_disk(fake_build, tmp_path):
    tables, calls = fake_build
    path = str(tmp_path / "new_dir" / "unicode-test.npz")
    _assert_tables_equal(_unicode.load_or_build_tables(path), tables)
    assert len(calls) == 1
    assert os.listdir(tmp_path / "new_dir") == ["unicode-test.npz"]  # No temp file.
    _assert_tables_equal(_unicode.load_or_build_tables(path), tables)
    assert len(calls) == 1  # Read, not built.


def test_damaged_cache_is_rebuilt_and_unwritable_one_is_skipped(
    fake_build, tmp_path
):
    tables, calls = fake_build
    path = tmp_path / "unicode-test.npz"
    path.write_bytes(b"PK\x03\x04 truncated")
    _assert_tables_equal(_unicode.load_or_build_tables(str(path)), tables)
    assert len(calls) == 1
    _assert_tables_equal(_unicode.load_or_build_tables(str(path)), tables)
    assert len(calls) == 1  # The rebuilt file replaced the damaged one.
    # A "directory" that is a file: nothing can be written, the tables come anyway.
    (tmp_path / "a_file").write_text("")
    blocked = str(tmp_path / "a_file" / "unicode-test.npz")
    _assert_tables_equal(_unicode.load_or_build_tables(blocked), tables)
    assert len(calls) == 2


def test_cached_tables_equal_a_fresh_build(tmp_path):
    fresh = _unicode.build_unicode_tables()
    path = str(tmp_path / "unicode-test.npz")
    assert _unicode._write_tables(path, fresh)
    _assert_tables_equal(_unicode._read_tables(path), fresh)
    # What this process uses (maybe read from the user's cache) is current.
    _assert_tables_equal(_unicode.unicode_tables(), fresh)


@pytest.mark.slow
def test_import_builds_nothing_and_the_first_tokenizer_fills_the_cache(tmp_path):
    script = textwrap.dedent("""
        import os
        import keras_bert, keras_bert.text
        from keras_bert.text import BertTokenizer, _unicode
        assert _unicode.unicode_tables.cache_info().currsize == 0
        assert not os.listdir(os.environ["KERAS_BERT_CACHE_DIR"])
        BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the"])
        print(sorted(os.listdir(os.environ["KERAS_BERT_CACHE_DIR"])))
    """)
    env = dict(os.environ, KERAS_BERT_CACHE_DIR=str(tmp_path),
               TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=REPO)
    result = subprocess.run([sys.executable, "-c", script], env=env, cwd=REPO,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    name = os.path.basename(_unicode.tables_cache_path())  # Same in any dir.
    assert result.stdout.strip().splitlines()[-1] == str([name])
