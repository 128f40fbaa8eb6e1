"""keras_bert.layers.Dropout: Keras' dropout with 16-bit draws."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.layers import Dropout
from tests.test_case import run_layer_test

KEPT_SCALE = 65536 / (65536 - round(0.1 * 65536))


def test_round_trip(tmp_path):
    run_layer_test(Dropout, dict(rate=0.1, seed=3), (np.ones((2, 5, 7), "float32"),),
                   (2, 5, 7), tmp_path)


def test_inference_is_identity():
    x = np.random.default_rng(0).normal(size=(4, 9)).astype("float32")
    np.testing.assert_array_equal(Dropout(0.1)(x, training=False), x)
    np.testing.assert_array_equal(Dropout(0.0)(x, training=True), x)


@pytest.mark.parametrize("shape", [(200_001,), (3, 257, 131)])
def test_drops_the_rate_and_keeps_the_expectation(shape):
    x = np.full(shape, 2.0, "float32")
    y = np.asarray(Dropout(0.1, seed=1)(x, training=True))
    dropped = np.mean(y == 0)
    assert abs(dropped - 0.1) < 0.005, dropped
    # Kept elements are scaled so the expected output is the input exactly.
    np.testing.assert_allclose(np.unique(y[y != 0]), [2.0 * KEPT_SCALE], rtol=1e-6)
    assert abs(y.mean() - 2.0) < 0.02


def test_masks_differ_between_calls_and_repeat_with_the_seed():
    x = np.ones((64, 64), "float32")
    first, second = Dropout(0.5, seed=11), Dropout(0.5, seed=11)
    a, b = np.asarray(first(x, training=True)), np.asarray(first(x, training=True))
    assert np.mean((a == 0) != (b == 0)) > 0.3  # a fresh mask per call
    np.testing.assert_array_equal(np.asarray(second(x, training=True)), a)
    # Both halves of each 32-bit draw are used: neighbours are independent.
    drops = (a == 0).reshape(-1)
    assert abs(np.mean(drops[0::2] == drops[1::2]) - 0.5) < 0.05


@pytest.mark.parametrize("jit", [False, True])
def test_gradient_is_the_mask_under_xla_and_bfloat16(jit):
    layer = Dropout(0.2, seed=5, dtype="mixed_bfloat16")
    x = tf.constant(np.random.default_rng(1).uniform(1, 2, (8, 33)).astype("float32"))

    @tf.function(jit_compile=jit)
    def forward_and_grad(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.cast(layer(x, training=True), tf.float32)
            total = tf.reduce_sum(y)
        return y, tape.gradient(total, x)

    y, grad = forward_and_grad(x)
    assert y.dtype == tf.float32 and layer.compute_dtype == "bfloat16"
    kept = np.asarray(y) != 0
    assert 0.6 < kept.mean() < 0.95
    scale = 65536 / (65536 - round(0.2 * 65536))
    np.testing.assert_allclose(np.asarray(grad)[kept], scale, rtol=1e-2)
    np.testing.assert_array_equal(np.asarray(grad)[~kept], 0)


def test_noise_shape_falls_back_to_keras():
    x = np.ones((4, 6, 8), "float32")
    y = np.asarray(Dropout(0.5, noise_shape=(4, 1, 8), seed=2)(x, training=True))
    # The same mask along the broadcast axis.
    assert (y == y[:, :1, :]).all()
    assert isinstance(Dropout(0.1), keras.layers.Dropout)
