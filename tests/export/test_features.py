import functools
import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.export.features import extract_features
from keras_bert.layers import BertFeatures
from keras_bert.models import BertEncoder
from keras_bert.text import BertPreprocessor
from tests.conftest import run_tool, tiny_config

WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "##s", "."]
LINES = ["the cat sat on the mat .", "", "a dog ran", "cats ran on a mat . " * 20, "dog"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("features")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS
    (tmp / "vocab.txt").write_text("\n".join(vocab) + "\n")
    encoder = BertEncoder(**tiny_config(vocab_size=len(vocab), num_layers=4,
                                        max_position_embeddings=64).to_dict())
    encoder.save_pretrained(tmp / "model", vocab_file=str(tmp / "vocab.txt"))
    (tmp / "input.txt").write_text("\n".join(LINES) + "\n")
    return tmp


@functools.lru_cache(maxsize=None)  # The same rows for every parametrization.
def reference(model_dir, layers, pooling):
    encoder = BertEncoder.from_pretrained(model_dir / "model")
    pre = BertPreprocessor.from_vocab_file(encoder.vocab_file, sequence_length=None,
                                           max_seq_length=32)
    layer = BertFeatures(encoder, layers=layers, pooling=pooling)
    return [np.asarray(layer(pre(tf.constant([line]))))[0] for line in LINES]


@pytest.mark.parametrize("batch_size, sort_window", [(2, 16), (2, 1), (1, 2), (2, 2)])
def test_npy_rows_match_line_by_line_features(model_dir, batch_size, sort_window):
    # Lines are batched by length within windows; rows must come back in line order.
    out = str(model_dir / "f.npy")
    n = extract_features(str(model_dir / "model"), str(model_dir / "input.txt"), out,
                         layers="concat_last_four", pooling="mean", batch_size=batch_size,
                         max_seq_length=32, verbose=False, sort_window=sort_window)
    assert n == len(LINES)
    array = np.load(out)
    assert array.shape == (5, 64)
    np.testing.assert_allclose(array, np.stack(reference(model_dir, "concat_last_four", "mean")),
                               atol=1e-5)


def test_tfrecord_token_features_keep_real_tokens_only(model_dir):
    out = str(model_dir / "f.tfrecord")
    extract_features(str(model_dir / "model"), str(model_dir / "input.txt"), out,
                     layers=-2, pooling=None, batch_size=3, max_seq_length=32, verbose=False)
    expected = reference(model_dir, -2, None)
    rows = []
    for record in tf.data.TFRecordDataset(out):
        example = tf.train.Example.FromString(record.numpy())
        shape = list(example.features.feature["shape"].int64_list.value)
        rows.append(np.array(example.features.feature["features"].float_list.value).reshape(shape))
    assert [r.shape[0] for r in rows] == [9, 2, 5, 32, 3]  # [CLS] ... [SEP], capped at 32
    for row, ref in zip(rows, expected):
        np.testing.assert_allclose(row, ref[: len(row)], atol=1e-5)


def test_bad_requests_are_explained(model_dir):
    with pytest.raises(ValueError, match="write them to a .tfrecord"):
        extract_features(str(model_dir / "model"), str(model_dir / "input.txt"),
                         str(model_dir / "x.npy"), pooling=None, verbose=False)
    with pytest.raises(ValueError, match=r"must end in .npy or .tfrecord"):
        extract_features(str(model_dir / "model"), str(model_dir / "input.txt"),
                         str(model_dir / "x.csv"), verbose=False)
    assert not os.path.exists(model_dir / "x.npy")
    with pytest.raises(ValueError, match="sort_window"):
        extract_features(str(model_dir / "model"), str(model_dir / "input.txt"),
                         str(model_dir / "x.npy"), sort_window=0, verbose=False)


def test_cli(model_dir):
    out = model_dir / "cli.npy"
    status, stdout, stderr = run_tool(
        "extract_features", "--model", model_dir / "model", "--input", model_dir / "input.txt",
        "--output", out, "--pooling", "cls", "--max-seq-length", "32")
    assert status == 0, stderr[-2000:]
    assert "wrote features for 5 lines" in stdout
    assert "\x1b" not in stdout + stderr  # No colour codes into a pipe.
    assert np.load(out).shape == (5, 16)
