import keras
import numpy as np
import pytest

from keras_bert.models import BertEncoder
from tests.conftest import TINY, tiny_config  # noqa: F401 (re-exported: the suite's one tiny config)

VOCAB = TINY["vocab_size"]


def seeded_encoder():
    """A seeded tiny encoder without dropout, so that fit tests are deterministic."""
    keras.utils.set_random_seed(0)
    return BertEncoder(**tiny_config(dropout_rate=0.0, attention_dropout_rate=0.0).to_dict())


@pytest.fixture
def encoder():
    return seeded_encoder()


@pytest.fixture
def batch():
    """A padded batch: row 0 has 2 padded positions, row 1 is a pair."""
    token_ids = np.array([[2, 5, 7, 9, 3, 0, 0], [2, 11, 12, 3, 13, 14, 3]], dtype="int32")
    segment_ids = np.array([[0] * 7, [0, 0, 0, 0, 1, 1, 1]], dtype="int32")
    return {"token_ids": token_ids, "segment_ids": segment_ids,
            "padding_mask": (token_ids > 0).astype("int32")}
