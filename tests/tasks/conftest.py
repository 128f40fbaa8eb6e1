import keras
import pytest

from keras_bert.models import BertEncoder
from keras_bert.text import save_vocabulary
from tests.models.conftest import VOCAB, batch, tiny_config  # noqa: F401

# A vocabulary of exactly VOCAB tokens for the tiny encoder.
WORDS = ["the", "a", "good", "bad", "movie", "film", "great", "awful", "is", "was",
         "not", "very", "i", "it", "love", "hate", "paris", "lives", "who", "where",
         "john", "in", ".", "?", "##s"]
TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS
assert len(TOKENS) == VOCAB


def task_encoder(**overrides):
    """The tasks' seeded tiny encoder: one layer (the task tests check heads, data and
    plumbing, which a second layer only makes slower to build, trace and fit), no dropout,
    so that fit tests are deterministic."""
    keras.utils.set_random_seed(0)
    return BertEncoder(**tiny_config(num_layers=1, dropout_rate=0.0, attention_dropout_rate=0.0,
                                     **overrides).to_dict())


@pytest.fixture
def encoder():
    return task_encoder()


@pytest.fixture
def vocab_file(tmp_path):
    path = tmp_path / "vocab.txt"
    save_vocabulary(TOKENS, path)
    return str(path)
