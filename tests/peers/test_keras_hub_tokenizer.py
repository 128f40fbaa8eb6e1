"""keras-hub's keras_hub/src/models/bert/bert_tokenizer_test.py, on keras_bert's BertTokenizer.

Same vocabulary and texts. One deliberate difference: keras-hub's
BertTokenizer is cased unless told (`lowercase=False`), keras_bert's is
uncased (`lowercase=True`, BERT's uncased checkpoints and vocab.txt files);
the tests that rely on keras-hub's default pass `lowercase=False`.
"""

import pytest

from keras_bert.text import BertTokenizer
from tests.peers.peer_case import run_preprocessing_layer_test, to_lists

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
         "THE", "QUICK", "BROWN", "FOX", "the", "quick", "brown", "fox"]
INPUT = ["THE QUICK BROWN FOX", "THE FOX"]


@pytest.fixture(scope="module")
def cased():
    return BertTokenizer(VOCAB, lowercase=False)


def test_tokenizer_basics(cased):
    """bert_tokenizer_test.py test_tokenizer_basics (run_preprocessing_layer_test):
    config round trip, detokenize back to the text, tf.data per example and per batch."""
    run_preprocessing_layer_test(cased, INPUT, expected_output=[[5, 6, 7, 8], [5, 8]])


def test_default_casing_is_uncased():
    """Deliberate difference with bert_tokenizer_test.py's init_kwargs: keras_bert's
    default is BERT's uncased rule, so keras-hub's default output needs
    lowercase=False (above); the default gives test_lowercase's ids."""
    assert to_lists(BertTokenizer(VOCAB)(INPUT)) == [[9, 10, 11, 12], [9, 12]]


def test_lowercase():
    """bert_tokenizer_test.py test_lowercase."""
    tokenizer = BertTokenizer(VOCAB, lowercase=True)
    assert to_lists(tokenizer(INPUT)) == [[9, 10, 11, 12], [9, 12]]


def test_tokenizer_special_tokens():
    """bert_tokenizer_test.py test_tokenizer_special_tokens: special tokens written in
    the text are their ids with special_tokens_in_strings=True."""
    tokenizer = BertTokenizer(VOCAB, lowercase=False, special_tokens_in_strings=True)
    assert to_lists(tokenizer(["[CLS] THE [MASK] FOX [SEP] [PAD]"])) == [[2, 5, 4, 8, 3, 0]]
    # keras_bert's default (google-research/bert's): they are text, "[" "MASK" "]".
    assert to_lists(BertTokenizer(VOCAB, lowercase=False)(["[MASK]"])) == [[1, 1, 1]]


def test_errors_missing_special_tokens():
    """bert_tokenizer_test.py test_errors_missing_special_tokens; the error names them."""
    with pytest.raises(ValueError, match=r"\[PAD\]"):
        BertTokenizer(["a", "b", "c"])
