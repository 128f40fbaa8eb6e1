import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.checkpoints import (
    CheckpointError,
    convert_checkpoint,
    detect_format,
    read_google_checkpoint,
    write_google_checkpoint,
)
from keras_bert.checkpoints.google import config_from_google
from keras_bert.checkpoints.reference import numpy_forward
from keras_bert.config import BertConfig
from keras_bert.models import BertPretrainer
from tests.checkpoints.conftest import (
    google_config,
    random_weights,
    tiny_config,
    write_google,
)


@pytest.fixture
def release(tmp_path):
    """A Google pretraining checkpoint with optimizer slots and a stray classifier."""
    config = tiny_config()
    weights = random_weights(config)
    tensors = dict(weights)
    for name in ("bert/pooler/dense/kernel", "cls/predictions/output_bias"):
        tensors[name + "/adam_m"] = np.zeros_like(weights[name])
        tensors[name + "/adam_v"] = np.zeros_like(weights[name])
    tensors["global_step"] = np.int64(1000)
    tensors["output_weights"] = np.zeros((3, config.hidden_size), np.float32)
    tensors["output_bias"] = np.zeros((3,), np.float32)
    folder = write_google(str(tmp_path / "uncased_L-2_H-16_A-2"), tensors, google_config(config))
    return folder, config, weights


def test_converts_release_with_heads_to_pretrainer(release, tmp_path, batch):
    folder, config, weights = release
    out = str(tmp_path / "model")
    report = convert_checkpoint(folder, out, check=True)

    assert report.format == "google"
    assert report.loaded_parts == ["encoder", "pooler", "mlm_head", "nsp_head"]
    assert report.missing_parts == []
    assert report.unused == ["output_bias", "output_weights"]
    assert sorted(report.ignored) == [
        "bert/pooler/dense/kernel/adam_m",
        "bert/pooler/dense/kernel/adam_v",
        "cls/predictions/output_bias/adam_m",
        "cls/predictions/output_bias/adam_v",
        "global_step",
    ]
    assert report.num_source_tensors == len(weights) + 7
    assert report.max_abs_diff["sequence_output"] < 1e-4
    assert sorted(os.listdir(out)) == ["config.json", "model.weights.h5", "task.json", "vocab.txt"]
    # Google's "gelu" is the tanh approximation; no epsilon in its config.
    assert BertConfig.from_json_file(os.path.join(out, "config.json")) == config

    model = BertPretrainer.from_pretrained(out)
    positions = np.array([[1, 4, 6], [2, 5, 9]], np.int32)
    got = model({**batch, "masked_positions": positions})
    encoded = model.encoder(batch)
    want = numpy_forward(weights, config, **batch)
    real = batch["padding_mask"].astype(bool)
    np.testing.assert_allclose(
        np.asarray(encoded["sequence_output"])[real], want["sequence_output"][real], atol=1e-4
    )
    np.testing.assert_allclose(encoded["pooled_output"], want["pooled_output"], atol=1e-4)
    want_mlm = np.take_along_axis(want["mlm_logits"], positions[:, :, None], axis=1)
    np.testing.assert_allclose(got["mlm_logits"], want_mlm, atol=1e-4)
    np.testing.assert_allclose(got["nsp_logits"], want["nsp_logits"], atol=1e-4)


def test_reads_checkpoint_prefix(release):
    folder, config, weights = release
    prefix = os.path.join(folder, "bert_model.ckpt")
    assert detect_format(prefix) == "google"
    assert detect_format(folder) == "google"
    source = read_google_checkpoint(prefix)
    assert source.config == config
    assert source.lowercase is True  # "uncased_" in the folder name
    assert sorted(source.weights) == sorted(weights)
    np.testing.assert_array_equal(
        source.weights["cls/seq_relationship/output_weights"],
        weights["cls/seq_relationship/output_weights"],
    )


def test_write_google_checkpoint_round_trip(tmp_path):
    # Exact-erf GELU has no Google name: it is written as "gelu_exact" so it
    # reads back unchanged instead of silently becoming the tanh approximation.
    config = tiny_config(hidden_act="gelu")
    weights = random_weights(config, heads=False)
    vocab = tmp_path / "vocab_in.txt"
    vocab.write_text("\n".join(f"w{i}" for i in range(config.vocab_size)) + "\n")
    folder = str(tmp_path / "out")
    write_google_checkpoint(folder, weights, config, vocab_file=str(vocab))

    reader = tf.train.load_checkpoint(os.path.join(folder, "bert_model.ckpt"))
    np.testing.assert_array_equal(
        reader.get_tensor("bert/embeddings/word_embeddings"),
        weights["bert/embeddings/word_embeddings"],
    )
    source = read_google_checkpoint(folder)
    assert source.config == config
    assert source.config.hidden_act == "gelu"
    assert all(np.array_equal(source.weights[k], weights[k]) for k in weights)


@pytest.mark.parametrize(
    "google_act, expected", [("gelu", "gelu_approx"), ("relu", "relu"), ("gelu_exact", "gelu")]
)
def test_config_activation_names(google_act, expected):
    values = google_config(tiny_config())
    values["hidden_act"] = google_act
    assert config_from_google(values).hidden_act == expected


def test_config_rejects_unknown_activation_and_keys():
    values = google_config(tiny_config())
    values["hidden_act"] = "swish"
    with pytest.raises(CheckpointError, match="hidden_act='swish'"):
        config_from_google(values)
    values = google_config(tiny_config())
    values["layer_norm_eps"] = 1e-12  # a Hugging Face key
    with pytest.raises(CheckpointError, match="--format huggingface"):
        config_from_google(values)
