"""Shared data for the training tests: pydoc_data.topics, a small vocabulary, TFRecords.

Built once per run (about 10 s; `built_once`): the corpus (every 8th document held
out), a 1000-token WordPiece vocabulary learnt on the training documents with
keras_bert.text, a few pretraining data directories, and the one-process
reference runs that several modules compare with (`single`, `uninterrupted`).
"""

import os

import pytest

from keras_bert.data import (
    PretrainingDataConfig,
    create_pretraining_data,
    pydoc_topics_documents,
    write_corpus,
)
from tests.conftest import built_once, tiny_config

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
    """The corpus files, built once per run (`built_once`: both xdist workers read them), and
    a folder of this worker's own (`root`) for the data that tests write from them."""
    from keras_bert.text import build_vocabulary, count_words, save_vocabulary

    def build(root):
        documents = [sentences for _, sentences in pydoc_topics_documents()]
        files = {name: os.path.join(root, f"{name}.txt") for name in ("train", "held", "vocab")}
        train = [d for i, d in enumerate(documents) if i % 8]
        write_corpus(train, files["train"])
        write_corpus(documents[::8], files["held"])
        save_vocabulary(build_vocabulary(count_words([" ".join(d) for d in train]), VOCAB_SIZE),
                        files["vocab"])
        return files

    return {**built_once(tmp_path_factory, "training-corpus", build),
            "root": tmp_path_factory.mktemp("corpus")}


def make_data(corpus, name, split, root=None, **config):
    """Writes pretraining data from the "train" or "held" corpus into `root`/`name` (default
    root: corpus["root"]); returns its directory."""
    out = os.path.join(root or corpus["root"], name)
    num_shards = config.pop("num_shards", 1)
    create_pretraining_data([corpus[split]], out, corpus["vocab"],
                            PretrainingDataConfig(**config), num_shards=num_shards)
    return out


def shared_data(tmp_path_factory, corpus, name, split, **config):
    """`make_data`, built once per run (`built_once`) for both xdist workers."""
    return built_once(tmp_path_factory, f"training-{name}",
                      lambda root: make_data(corpus, name, split, root=root, **config))


@pytest.fixture(scope="session")
def mlm_data(corpus, tmp_path_factory):
    """Static masks, seq 64: training (3 dupes, 2 shards) and held-out data."""
    common = dict(max_seq_length=64, max_predictions_per_seq=10)
    return {
        # Windows of 10 documents: the 69 make 7, 4 in shard 0 and 3 in shard 1.
        "train": shared_data(tmp_path_factory, corpus, "mlm_train", "train", dupe_factor=3,
                             num_shards=2, document_pool_size=10, **common),
        "held": shared_data(tmp_path_factory, corpus, "mlm_held", "held", dupe_factor=1, seed=7,
                            **common),
    }


@pytest.fixture(scope="session")
def dynamic_data(corpus, tmp_path_factory):
    """Dynamic masking, seq 32, 2 shards."""
    return shared_data(tmp_path_factory, corpus, "dynamic", "train", max_seq_length=32,
                       max_predictions_per_seq=5, masking="dynamic", dupe_factor=1, num_shards=2,
                       document_pool_size=10)


@pytest.fixture(scope="session")
def replica_data(corpus, tmp_path_factory):
    """One shard, static masks, full-length instances, 3 predictions each.

    With shuffling off, n workers reading every n-th record see the same
    global batches as one process reading them all.
    """
    return shared_data(tmp_path_factory, corpus, "replica", "train", max_seq_length=32,
                       max_predictions_per_seq=3, dupe_factor=1, short_seq_prob=0.0)


def distributed_settings(replica_data, out, strategy, **extra):
    """tests/training/distributed_worker.py's settings: its pretraining run on `replica_data`."""
    # No dropout: replicas would draw other masks than one process.
    config = tiny_bert_config(32, dropout=0.0)
    return {"out": str(out), "data_dir": replica_data, "strategy": strategy,
            "bert_config": config.to_dict(), **extra}


def load_dump(out, task_id=0):
    """(weights, {"losses", "replicas"}) that distributed_worker.py's worker `task_id` wrote."""
    import json

    import numpy as np

    weights = np.load(os.path.join(out, f"weights-{task_id}.npz"))
    with open(os.path.join(out, f"losses-{task_id}.json")) as f:
        record = json.load(f)
    return [weights[k] for k in weights.files], record


@pytest.fixture(scope="session")
def single(replica_data, tmp_path_factory):
    """distributed_worker.py's run in one process, no strategy: the reference of
    test_distribute's and test_ray_train's multi-device runs, built once per run."""
    from tests.training.distributed_worker import train_and_dump

    def build(root):
        train_and_dump(distributed_settings(replica_data, root, "auto"))
        return root

    return load_dump(built_once(tmp_path_factory, "training-single", build))


@pytest.fixture(scope="session")
def uninterrupted(dynamic_data, tmp_path_factory):
    """The weights of test_trainer's pretraining run (SETTINGS), never stopped: what its
    killed and resumed runs (test_trainer, test_checkpoint_units) must end with. Built once
    per run."""
    import numpy as np

    from tests.training import test_trainer

    def build(root):
        result, first = test_trainer._run(dynamic_data, os.path.join(root, "run"))
        assert first == 0 and result["step"] == 30
        path = os.path.join(root, "weights.npz")
        np.savez(path, *[w.numpy() for w in result["model"].weights])
        return path

    weights = np.load(built_once(tmp_path_factory, "training-uninterrupted", build))
    return [weights[k] for k in weights.files]
