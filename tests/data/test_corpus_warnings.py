"""Pretraining corpora that cannot make what they claim to: warnings and errors (issue 23)."""

import gzip
import logging
import os

import pytest

from keras_bert.data import PretrainingDataConfig, create_pretraining_data, read_documents
from keras_bert.text import save_vocabulary

WORDS = "the cat sat on a mat and dog ran to park it was sunny day".split()
SENTENCES = [
    "the cat sat on a mat", "the dog ran to a park", "it was a sunny day",
    "a cat and a dog sat", "the mat was on the park", "it ran and it sat",
]
CONFIG = PretrainingDataConfig(max_seq_length=16, max_predictions_per_seq=3, dupe_factor=2,
                               document_pool_size=2, seed=1)


@pytest.fixture
def vocab(tmp_path):
    path = str(tmp_path / "vocab.txt")
    save_vocabulary(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS, path)
    return path


def _corpus(tmp_path, documents, name="corpus.txt"):
    path = tmp_path / name
    path.write_text("\n\n".join("\n".join(d) for d in documents) + "\n", encoding="utf-8")
    return str(path)


def _nsp_warnings(caplog):
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and "next-sentence prediction" in r.getMessage()]


def test_one_document_corpus_warns(tmp_path, vocab, caplog):
    corpus = _corpus(tmp_path, [SENTENCES])
    with caplog.at_level(logging.WARNING, logger="keras_bert.data"):
        metadata = create_pretraining_data([corpus], str(tmp_path / "out"), vocab, CONFIG)
    assert metadata["num_documents"] == 1
    warnings = _nsp_warnings(caplog)
    assert len(warnings) == 1
    assert warnings[0].startswith(f"{corpus}: the corpus is a single document")
    assert "Separate documents with a blank line" in warnings[0]


def test_more_shards_than_windows_warns_of_the_empty_shards(tmp_path, vocab, caplog):
    corpus = _corpus(tmp_path, [SENTENCES[:3], SENTENCES[3:]])
    with caplog.at_level(logging.WARNING, logger="keras_bert.data"):
        metadata = create_pretraining_data([corpus], str(tmp_path / "out"), vocab, CONFIG,
                                           num_shards=2)
    # The two documents are one window (document_pool_size 2): NotNext pairs have
    # another document, but shard 1 gets no window.
    assert _nsp_warnings(caplog) == []
    empty = [r.getMessage() for r in caplog.records if "hold no instances" in r.getMessage()]
    assert len(empty) == 1 and "--document-pool-size" in empty[0]
    assert "pretraining-00001-of-00002.tfrecord" in empty[0]
    assert "00000" not in empty[0].split(":", 1)[1]
    assert [s["num_instances"] > 0 for s in metadata["shards"]] == [True, False]


def test_several_documents_do_not_warn(tmp_path, vocab, caplog):
    corpus = _corpus(tmp_path, [SENTENCES[:3], SENTENCES[3:]])
    with caplog.at_level(logging.WARNING, logger="keras_bert.data"):
        metadata = create_pretraining_data([corpus], str(tmp_path / "out"), vocab, CONFIG)
    assert metadata["num_documents"] == 2
    assert _nsp_warnings(caplog) == []


@pytest.mark.parametrize("content,match", [
    (b"\x00\x01\x02binary\xff\xfe" * 50, "is a binary file"),
    (gzip.compress("\n".join(SENTENCES).encode()), "is gzip-compressed: decompress it"),
    ("\n".join(SENTENCES).encode("utf-16"), r"looks like UTF-16 \(byte-order mark\)"),
], ids=["binary", "gzip", "utf-16"])
def test_a_corpus_that_is_not_text_is_named_before_anything_is_written(
        tmp_path, vocab, content, match):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(content)
    out = tmp_path / "out"
    with pytest.raises(ValueError, match=f"^{corpus} {match}"):
        create_pretraining_data([str(corpus)], str(out), vocab, CONFIG)
    assert not out.exists()
    with pytest.raises(ValueError, match=f"^{corpus} {match}"):
        list(read_documents([str(corpus)]))


def test_a_corpus_directory_says_pass_a_file(tmp_path, vocab):
    folder = tmp_path / "texts"
    folder.mkdir()
    _corpus(folder, [SENTENCES])
    with pytest.raises(ValueError, match=f"^{folder} is a directory: pass a file"):
        create_pretraining_data([str(folder)], str(tmp_path / "out"), vocab, CONFIG)
    assert not os.path.exists(tmp_path / "out")
