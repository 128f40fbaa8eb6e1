"""The whole pipeline with every path on TF's in-memory ram:// file system (issue 38
item 4): corpus -> pretraining data -> pretrain -> fine-tune -> export -> predict.

ram:// is this process' memory, so everything runs in process through the Python
APIs (no tool subprocesses). Every artifact on the way is a remote one: written
by the object-store protocol (keras_bert.storage, a commit marker last) and read
back only when committed.
"""

import secrets

import numpy as np
import pytest
import tensorflow as tf

from keras_bert import storage
from keras_bert.data import PretrainingDataConfig, create_pretraining_data, read_metadata
from keras_bert.training import PretrainingConfig, run_pretraining
from tests.training.finetune_fixtures import make_vocab, sentiment_rows

WORDS = ("good great love lovely happy nice bad awful hate sad terrible boring "
         "the movie film plot was a is city").split()


def corpus_text(rng, documents=24, sentences=4):
    return "\n\n".join("\n".join(" ".join(rng.choice(WORDS, 6)) for _ in range(sentences))
                       for _ in range(documents)) + "\n"


def put(path, text):
    with tf.io.gfile.GFile(path, "w") as f:
        f.write(text)
    return path


def pipeline(root, tmp_path):
    """corpus -> pretraining data -> pretrain -> fine-tune -> export -> predictions, every
    path under `root`; returns the exported classifier's probabilities for two texts."""
    from keras_bert.export import export_model
    from keras_bert.export.predict import load_export
    from keras_bert.tasks.classification.options import ClassificationOptions
    from keras_bert.training.finetune import FinetuneOptions, finetune, read_task_data
    from tests.conftest import tiny_config

    tmp_path.mkdir()
    local_vocab = str(tmp_path / "vocab.txt")
    tokens = make_vocab(local_vocab, extra_words=WORDS)
    vocab = put(f"{root}/vocab.txt", open(local_vocab, encoding="utf-8").read())
    corpus = put(f"{root}/corpus.txt", corpus_text(np.random.default_rng(0)))

    data = f"{root}/data"
    create_pretraining_data([corpus], data, vocab, PretrainingDataConfig(
        max_seq_length=32, max_predictions_per_seq=5, dupe_factor=2, document_pool_size=8),
        num_shards=2)
    assert read_metadata(data)["num_shards"] == 2

    config = PretrainingConfig(num_train_steps=6, batch_size=8, learning_rate=1e-3,
                               warmup_steps=2, checkpoint_every=3, log_every=3,
                               jit_compile="off")
    result = run_pretraining(data, f"{root}/pretrain", config, bert_config=tiny_config(
        vocab_size=len(tokens), max_position_embeddings=32), verbose=0, tensorboard=False)
    pretrained = result["model_dir"]
    assert pretrained.startswith(root)

    for name, rows in (("train", sentiment_rows(48, 0)), ("dev", sentiment_rows(16, 1))):
        put(f"{root}/{name}.csv", "text,label\n" + "".join(f"{t},{y}\n" for t, y in rows))
    task_options = ClassificationOptions(label_names=["neg", "pos"])
    train = read_task_data("classification", f"{root}/train.csv", training=True,
                           task_options=task_options)
    dev = read_task_data("classification", f"{root}/dev.csv", training=False,
                         task_options=task_options)
    tuned = f"{root}/models/sentiment"
    finetune("classification", pretrained, tuned, train, dev,
             FinetuneOptions(epochs=2, batch_size=8, learning_rate=1e-3, max_seq_length=16,
                             jit_compile="off", log_every=100),
             task_options=task_options, progress="lines")
    # What finetune wrote for resuming is gone once it is done.
    assert not storage.exists(f"{tuned}.checkpoints")

    exports = f"{root}/exports/sentiment"
    export_model(tuned, exports)
    served = load_export(exports)
    outputs = served.signatures["serving_default"](
        text=tf.constant(["a great lovely movie", "an awful boring plot"]))
    return {"pretrained": pretrained, "tuned": tuned, "version": f"{exports}/1",
            "probabilities": outputs["probabilities"].numpy()}


@pytest.mark.slow  # Pretraining, fine-tuning and an export of a tiny model, twice: about 30 s.
def test_the_whole_pipeline_on_ram_commits_every_artifact_and_equals_the_local_run(tmp_path):
    ram = pipeline(f"ram://pipeline-{secrets.token_hex(4)}", tmp_path / "a")
    # Each folder on the store is committed: its marker lists every file, sizes match.
    for key in ("pretrained", "tuned", "version"):
        manifest = storage.committed_manifest(ram[key])
        assert manifest and ({"model.weights.h5", "saved_model.pb"} & set(manifest["files"])), key
    (tmp_path / "local").mkdir()
    local = pipeline(str(tmp_path / "local"), tmp_path / "b")
    assert not storage.exists(str(tmp_path / "local" / "models" / "sentiment" / storage.MARKER))
    np.testing.assert_allclose(ram["probabilities"], local["probabilities"], atol=1e-6)
    assert ram["probabilities"].shape == (2, 2)
