import keras
import numpy as np
import pytest

from keras_bert.layers import BertFeatures
from keras_bert.models import BertEncoder
from tests.models.conftest import tiny_config
from tests.test_case import run_model_saving_test

X = {
    "token_ids": np.array([[2, 5, 7, 3, 0, 0], [2, 9, 4, 8, 6, 3]], dtype="int32"),
    "segment_ids": np.zeros((2, 6), dtype="int32"),
    "padding_mask": np.array([[1, 1, 1, 1, 0, 0], [1] * 6], dtype="int32"),
}


@pytest.fixture
def encoder():
    return BertEncoder(**tiny_config(num_layers=5).to_dict())


def inputs():
    return {k: keras.Input((None,), dtype="int32", name=k) for k in X}


def test_concat_last_four_equals_encoder_outputs(encoder):
    features = np.asarray(BertFeatures(encoder, layers="concat_last_four")(X))
    hidden = [np.asarray(h) for h in encoder(X)["encoder_outputs"]]
    assert features.shape == (2, 6, 4 * 16)
    np.testing.assert_allclose(features, np.concatenate(hidden[-4:], -1), atol=1e-6)
    summed = np.asarray(BertFeatures(encoder, layers="sum_last_four")(X))
    np.testing.assert_allclose(summed, sum(hidden[-4:]), atol=1e-5)
    second_to_last = np.asarray(BertFeatures(encoder, layers=-2)(X))
    np.testing.assert_allclose(second_to_last, hidden[-2], atol=1e-6)


def test_pooling_uses_only_real_tokens(encoder):
    tokens = np.asarray(encoder(X)["sequence_output"])
    mean = np.asarray(BertFeatures(encoder, pooling="mean")(X))
    np.testing.assert_allclose(mean[0], tokens[0, :4].mean(0), atol=1e-5)
    maxed = np.asarray(BertFeatures(encoder, pooling="max")(X))
    np.testing.assert_allclose(maxed[0], tokens[0, :4].max(0), atol=1e-6)
    cls = np.asarray(BertFeatures(encoder, pooling="cls")(X))
    np.testing.assert_allclose(cls, tokens[:, 0], atol=1e-6)


@pytest.mark.slow
def test_weighted_sum_starts_as_the_mean_and_learns(encoder, tmp_path):
    layer = BertFeatures(encoder, layers="weighted_sum", pooling="mean")
    hidden = [np.asarray(h) for h in encoder(X)["encoder_outputs"]]
    token_mean = sum(hidden) / len(hidden)
    mask = X["padding_mask"][:, :, None]
    expected = (token_mean * mask).sum(1) / mask.sum(1)
    np.testing.assert_allclose(np.asarray(layer(X)), expected, atol=1e-5)

    x = inputs()
    model = keras.Model(x, keras.layers.Dense(2)(layer(x)))
    assert len(model.trainable_weights) == 2 + 2  # layer weights + scale, Dense
    encoder_before = [w.numpy().copy() for w in encoder.weights]
    model.compile(optimizer=keras.optimizers.Adam(1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(X, np.array([0, 1]), epochs=3, verbose=0)
    assert all(np.array_equal(b, w.numpy()) for b, w in zip(encoder_before, encoder.weights))
    assert np.abs(layer.layer_weights.numpy()).max() > 0
    run_model_saving_test(model, X, tmp_path)


def test_bad_arguments_are_named(encoder):
    with pytest.raises(ValueError, match="layers=7 is out of range"):
        BertFeatures(encoder, layers=7)
    with pytest.raises(ValueError, match="pooling='sum'"):
        BertFeatures(encoder, pooling="sum")
    small = BertEncoder(**tiny_config(num_layers=2).to_dict())
    with pytest.raises(ValueError, match="needs at least 4 encoder layers"):
        BertFeatures(small, layers="concat_last_four")
