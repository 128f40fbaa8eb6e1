"""vocab.txt files that are not UTF-8 with LF line ends: named, and what is wrong (issue 23)."""

import gzip

import pytest

from keras_bert.text import BertTokenizer, load_vocabulary

TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "caf\u00e9", "the", "##s"]


def _write(tmp_path, data):
    path = tmp_path / "vocab.txt"
    path.write_bytes(data)
    return str(path)


def test_latin1_vocab_names_the_file_line_and_encoding(tmp_path):
    path = _write(tmp_path, "\n".join(TOKENS).encode("latin-1") + b"\n")
    with pytest.raises(ValueError) as info:
        load_vocabulary(path)
    message = str(info.value)
    assert message.startswith(f"Vocabulary {path}: byte 0xe9 on line 6 is not UTF-8")
    assert "Latin-1" in message and "Save it as UTF-8" in message
    assert "\n" not in message


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_utf16_vocab_says_utf16(tmp_path, encoding):
    path = _write(tmp_path, "\n".join(TOKENS).encode(encoding))
    with pytest.raises(ValueError, match=f"^{path} looks like UTF-16.*save it as UTF-8"):
        load_vocabulary(path)


def test_cr_only_line_ends_are_named(tmp_path):
    path = _write(tmp_path, "\r".join(TOKENS).encode("utf-8") + b"\r")
    with pytest.raises(ValueError, match=f"^Vocabulary {path} has CR-only line ends"):
        load_vocabulary(path)


def test_crlf_line_ends_read_like_lf(tmp_path):
    # google-research/bert strips each line, so "\r" never reaches a token.
    path = _write(tmp_path, "\r\n".join(TOKENS).encode("utf-8") + b"\r\n")
    tokens, _ = load_vocabulary(path)
    assert tokens == TOKENS
    assert BertTokenizer(path).vocabulary == TOKENS


def test_gzip_vocab_and_directory(tmp_path):
    path = _write(tmp_path, gzip.compress("\n".join(TOKENS).encode()))
    with pytest.raises(ValueError, match=rf"^{path} is gzip-compressed: decompress it \(gunzip"):
        load_vocabulary(path)
    with pytest.raises(ValueError, match=f"^Vocabulary {tmp_path} is a directory"):
        load_vocabulary(str(tmp_path))


def test_build_vocabulary_from_a_gzip_corpus_names_it(tmp_path):
    from keras_bert.text.vocab import build_vocabulary_from_files

    corpus = tmp_path / "corpus.txt.gz"
    corpus.write_bytes(gzip.compress(b"the cat sat on the mat\n" * 20))
    with pytest.raises(ValueError, match=f"^{corpus} is gzip-compressed"):
        build_vocabulary_from_files([str(corpus)], vocab_size=30)
