"""decode / batch_decode against transformers' slow BertTokenizer (its Python `decode`).

Random id sequences over a vocabulary of words, "##" pieces, punctuation and
the special tokens, so that joining, "##" gluing (a leading "##" piece
included), the special-token skip and every clean-up rule are met.
"""

import random

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.text import BertPreprocessor, BertTokenizer
from keras_bert.text.vocab import SPECIAL_TOKENS

legacy = pytest.importorskip("transformers.models.bert.tokenization_bert_legacy")

WORDS = list(SPECIAL_TOKENS) + [
    "un", "##want", "##ed", "running", "i", "don", "n", "'", "t", "s", "m", "ve", "re",
    "##s", "##n't", ".", ",", "!", "?", "-", "the", "fox", "é", "##é", "日"]


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory):
    path = tmp_path_factory.mktemp("decode") / "vocab.txt"
    path.write_text("\n".join(WORDS) + "\n", encoding="utf-8")
    return BertTokenizer(WORDS), legacy.BertTokenizerLegacy(str(path))


def test_decode_matches_transformers(tokenizers):
    ours, reference = tokenizers
    rng = random.Random(0)
    rows = [[rng.randrange(len(WORDS)) for _ in range(rng.randrange(0, 12))] for _ in range(300)]
    for skip in (False, True):
        for clean in (False, True):
            want = [reference.decode(r, skip_special_tokens=skip,
                                     clean_up_tokenization_spaces=clean) for r in rows]
            assert ours.batch_decode(rows, skip, clean) == want, (skip, clean)
    # The defaults are transformers' slow BertTokenizer's (clean-up on, specials kept).
    assert [ours.decode(r) for r in rows] == [reference.decode(r) for r in rows]
    assert sum(ours.decode(r) != ours.decode(r, clean_up_tokenization_spaces=False)
               for r in rows) > 30


def test_decode_takes_what_the_tokenizer_and_preprocessor_return(tokenizers):
    ours, _ = tokenizers
    assert ours.decode(ours(["unwanted, running"])[0]) == "unwanted, running"
    assert ours.decode(ours(["unwanted, running"])[0],
                       clean_up_tokenization_spaces=False) == "unwanted , running"
    preprocessor = BertPreprocessor(ours, sequence_length=10)
    packed = preprocessor(["unwanted, running", "the fox!"])
    assert preprocessor.batch_decode(packed["token_ids"], skip_special_tokens=True) == [
        "unwanted, running", "the fox!"]
    assert preprocessor.decode(np.asarray(packed["token_ids"])[1]) == (
        "[CLS] the fox! [SEP] " + " ".join(["[PAD]"] * 5))
    assert ours.batch_decode(ours(["the fox", "running"])) == ["the fox", "running"]  # Ragged.
    assert ours.decode(tf.constant(WORDS.index("fox"))) == "fox"


def test_decode_refuses_what_is_not_ids(tokenizers):
    ours, _ = tokenizers
    with pytest.raises(ValueError, match="one sequence of int ids; for a batch, call batch_decode"):
        ours.decode([[5, 6], [7]])
    with pytest.raises(ValueError, match="a batch of sequences .* call decode"):
        ours.batch_decode([5, 6])
    with pytest.raises(ValueError, match=r"Received: token_ids=\['fox'\]"):
        ours.decode(["fox"])
    with pytest.raises(ValueError, match=r"an id in \[0, 30\)\. Received: token_id=99"):
        ours.decode([5, 99])
