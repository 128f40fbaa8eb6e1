import pytest

from keras_bert.text import save_vocabulary
from tests.models.conftest import VOCAB, batch, encoder, tiny_config  # noqa: F401

# A vocabulary of exactly VOCAB tokens for the tiny encoder.
WORDS = ["the", "a", "good", "bad", "movie", "film", "great", "awful", "is", "was",
         "not", "very", "i", "it", "love", "hate", "paris", "lives", "who", "where",
         "john", "in", ".", "?", "##s"]
TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS
assert len(TOKENS) == VOCAB


@pytest.fixture
def vocab_file(tmp_path):
    path = tmp_path / "vocab.txt"
    save_vocabulary(TOKENS, path)
    return str(path)
