"""Shared data for the training tests: pydoc_data.topics, a small vocabulary, TFRecords.

Built once per session (about 10 s): the corpus (every 8th document held
out), a 1000-token WordPiece vocabulary learnt on the training documents with
keras_bert.text, and a few pretraining data directories.
"""

import os

import pytest

from keras_bert.data import (
    PretrainingDataConfig,
    create_pretraining_data,
    pydoc_topics_documents,
    write_corpus,
)
from tests.conftest import tiny_config

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VOCAB_SIZE = 1000


def tiny_bert_config(max_position_embeddings, dropout=0.1, hidden=32, layers=1):
    """The suite's tiny config (tests/conftest.py) for the pydoc vocabulary: 1 layer, 32 wide."""
    return tiny_config(vocab_size=VOCAB_SIZE, hidden_size=hidden, num_layers=layers,
                       intermediate_size=2 * hidden,
                       max_position_embeddings=max_position_embeddings, dropout_rate=dropout,
                       attention_dropout_rate=dropout)


def subprocess_env(**extra):
    env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("TF_CONFIG", None)
    env.update(extra)
    return env


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    from keras_bert.text import build_vocabulary, count_words, save_vocabulary

    root = tmp_path_factory.mktemp("corpus")
    documents = [sentences for _, sentences in pydoc_topics_documents()]
    held = documents[::8]
    train = [d for i, d in enumerate(documents) if i % 8]
    write_corpus(train, root / "train.txt")
    write_corpus(held, root / "held.txt")
    tokens = build_vocabulary(count_words([" ".join(d) for d in train]), VOCAB_SIZE)
    save_vocabulary(tokens, root / "vocab.txt")
    return {"train": str(root / "train.txt"), "held": str(root / "held.txt"),
            "vocab": str(root / "vocab.txt"), "root": root}


def make_data(corpus, name, split, **config):
    """Writes pretraining data from the "train" or "held" corpus; returns its directory."""
    out = corpus["root"] / name
    num_shards = config.pop("num_shards", 1)
    create_pretraining_data([corpus[split]], str(out), corpus["vocab"],
                            PretrainingDataConfig(**config), num_shards=num_shards)
    return str(out)


@pytest.fixture(scope="session")
def mlm_data(corpus):
    """Static masks, seq 64: training (3 dupes, 2 shards) and held-out data."""
    common = dict(max_seq_length=64, max_predictions_per_seq=10)
    return {
        # Windows of 10 documents: the 69 make 7, 4 in shard 0 and 3 in shard 1.
        "train": make_data(corpus, "mlm_train", "train", dupe_factor=3, num_shards=2,
                           document_pool_size=10, **common),
        "held": make_data(corpus, "mlm_held", "held", dupe_factor=1, seed=7, **common),
    }


@pytest.fixture(scope="session")
def dynamic_data(corpus):
    """Dynamic masking, seq 32, 2 shards."""
    return make_data(corpus, "dynamic", "train", max_seq_length=32, max_predictions_per_seq=5,
                 masking="dynamic", dupe_factor=1, num_shards=2, document_pool_size=10)


@pytest.fixture(scope="session")
def replica_data(corpus):
    """One shard, static masks, full-length instances, 3 predictions each.

    With shuffling off, n workers reading every n-th record see the same
    global batches as one process reading them all.
    """
    return make_data(corpus, "replica", "train", max_seq_length=32, max_predictions_per_seq=3,
                 dupe_factor=1, short_seq_prob=0.0)

