"""keras-hub's keras_hub/src/models/bert/bert_text_embedder_test.py, on keras_bert's BertTextEmbedder.

keras-hub's BertTextEmbedder(backbone, preprocessor, pooling_mode, normalize) is
BertTextEmbedder(encoder, preprocessor=..., pooling=..., normalize=...).
keras-hub's test fits the embedding on class labels with a mean squared error;
keras_bert's embedder fits on text pairs (in-batch negatives, or scored pairs with
a cosine loss) and refuses that compile with the way out (docs/peers.md).
Its test_litert_export (raw text in, predict's embeddings out) is
tests/export/test_embedding_export.py's test_litert_export_embeds_as_predict,
on the session's embedder export.
"""

import keras
import numpy as np
import pytest

from keras_bert import BertEncoder, BertTextEmbedder
from keras_bert.tasks.text_embedding.layers import EmbeddingPooling
from keras_bert.text import BertPreprocessor, BertTokenizer
from tests.peers.peer_case import run_serialization_test
from tests.test_case import run_model_saving_test

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "quick", "brown", "fox", "."]
TEXTS = ["the quick brown fox.", "the slow brown fox."]


@pytest.fixture(scope="module")
def parts():
    keras.utils.set_random_seed(0)
    preprocessor = BertPreprocessor(BertTokenizer(VOCAB), sequence_length=5)
    encoder = BertEncoder(vocab_size=preprocessor.tokenizer.vocab_size, num_layers=2,
                          num_heads=2, hidden_size=2, intermediate_size=4,
                          max_position_embeddings=preprocessor.sequence_length)
    inputs = {k: v.numpy() for k, v in preprocessor(TEXTS).items()}
    return encoder, preprocessor, inputs


def embedder(parts, **kwargs):
    encoder, preprocessor, _ = parts
    return BertTextEmbedder(encoder, preprocessor=preprocessor, **kwargs)


def norms(output):
    return np.linalg.norm(np.asarray(output), axis=-1)


def test_output_is_normalized(parts):
    """bert_text_embedder_test.py test_output_is_normalized."""
    model = embedder(parts)
    run_serialization_test(model)
    output = model(parts[2])
    assert tuple(output.shape) == (2, 2)
    np.testing.assert_allclose(norms(output), 1.0, atol=1e-5)


def test_output_not_normalized(parts):
    """bert_text_embedder_test.py test_output_not_normalized: the mean of the sequence
    output itself (whose rows are not unit vectors)."""
    output = np.asarray(embedder(parts, normalize=False)(parts[2]))
    assert output.shape == (2, 2)
    sequence = np.asarray(parts[0](parts[2])["sequence_output"])
    np.testing.assert_allclose(output, sequence.mean(axis=1), atol=1e-5)
    assert np.abs(norms(output) - 1).max() > 1e-3


def test_cls_pooling(parts):
    """bert_text_embedder_test.py test_cls_pooling: unit rows along [CLS]'s vector."""
    output = np.asarray(embedder(parts, pooling="cls")(parts[2]))
    assert output.shape == (2, 2)
    np.testing.assert_allclose(norms(output), 1.0, atol=1e-5)
    cls = np.asarray(parts[0](parts[2])["sequence_output"])[:, 0]
    np.testing.assert_allclose(output, cls / norms(cls)[:, None], atol=1e-5)


def test_max_pooling(parts):
    """bert_text_embedder_test.py test_max_pooling."""
    output = np.asarray(embedder(parts, pooling="max", normalize=False)(parts[2]))
    assert output.shape == (2, 2)
    sequence = np.asarray(parts[0](parts[2])["sequence_output"])
    np.testing.assert_allclose(output, sequence.max(axis=1), atol=1e-6)


def test_invalid_pooling_mode(parts):
    """bert_text_embedder_test.py test_invalid_pooling_mode; the error names the value."""
    with pytest.raises(ValueError, match="pooling='invalid'"):
        embedder(parts, pooling="invalid")


def test_mean_pooling_respects_mask():
    """bert_text_embedder_test.py test_mean_pooling_respects_mask (keras_bert's pooling
    is the EmbeddingPooling layer)."""
    sequence = np.array([[[1.0, 2.0], [3.0, 4.0], [10.0, 20.0]]], "float32")
    pooling = EmbeddingPooling("mean")
    partial = np.asarray(pooling(sequence, np.array([[1, 1, 0]], "int32")))
    full = np.asarray(pooling(sequence, np.array([[1, 1, 1]], "int32")))
    np.testing.assert_allclose(partial, [[2.0, 3.0]], atol=1e-6)
    np.testing.assert_allclose(full, [[14.0 / 3, 26.0 / 3]], atol=1e-5)


def test_label_regression_is_refused(parts):
    """Deliberate difference with bert_text_embedder_test.py test_embedder_basics'
    compile(loss="mean_squared_error") and fit(texts, class labels): keras_bert's
    embedder fits on pairs, and says so."""
    model = embedder(parts)
    model.compile(loss="mean_squared_error")
    with pytest.raises(ValueError, match="MultipleNegativesRankingLoss or CosineSimilarityLoss"):
        model.fit(TEXTS, [1, 0], verbose=0)


@pytest.mark.slow
def test_embedder_basics(parts):
    """bert_text_embedder_test.py test_embedder_basics (run_task_test, as keras_bert's
    embedder trains): predict on texts and a dataset; fit on pairs with no compile call."""
    import tensorflow as tf

    model = embedder(parts)
    output = model.predict(TEXTS, verbose=0)
    assert output.shape == (2, 2)
    dataset = tf.data.Dataset.from_tensor_slices(TEXTS).batch(2)
    np.testing.assert_allclose(model.predict(dataset, verbose=0), output, atol=1e-6)
    history = model.fit((TEXTS, TEXTS[::-1]), verbose=0).history
    assert np.isfinite(history["loss"]).all()


@pytest.mark.slow
def test_saved_model(parts, tmp_path):
    """bert_text_embedder_test.py test_saved_model (run_model_saving_test)."""
    run_model_saving_test(embedder(parts), parts[2], tmp_path)
