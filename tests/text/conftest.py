"""Fixtures shared by the text tests: the real uncased vocabulary."""

import os

import pytest

from tests.conftest import minilm_dir

# A small vocabulary for hand-made examples.
TINY_VOCAB = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    "the", "qu", "##ick", "fox", "!", ",", "jump", "##s", "##ed", "over",
    "lazy", "dog", ".", "a", "b", "[unused0]",
]


def uncased_vocab_path():
    """Path of the real uncased BERT vocab.txt (MiniLM-L6's), or None if not installed."""
    folder = minilm_dir()
    return None if folder is None else os.path.join(folder, "vocab.txt")


@pytest.fixture(scope="session")
def vocab_path(minilm_source):
    return os.path.join(minilm_source, "vocab.txt")


@pytest.fixture(scope="session")
def tokenizer(vocab_path):
    from keras_bert.text import BertTokenizer

    return BertTokenizer(vocab_path)


@pytest.fixture(scope="session")
def reference(vocab_path):
    from tests.text.reference_tokenizer import ReferenceTokenizer

    return ReferenceTokenizer(vocab_path)
