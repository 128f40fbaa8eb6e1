"""Dropout that draws 16 random bits per element instead of a 32-bit float."""

import keras
import tensorflow as tf
from keras import ops

_LEVELS = 65536  # distinct values of a 16-bit draw


@keras.saving.register_keras_serializable(package="keras_bert")
class Dropout(keras.layers.Dropout):
    """`keras.layers.Dropout` with half the random numbers.

    An element is dropped when a uniform 16-bit integer is below
    `round(rate * 65536)`, so the rate is `rate` to the nearest 1/65536
    (0.1 -> 0.1000061) and kept values are scaled by 1 / (1 - that rate):
    the expected output equals the input exactly. One 32-bit draw of
    TensorFlow's counter-based Philox generator covers two elements. BERT
    applies dropout to every attention matrix and hidden state, so its
    random numbers are a visible part of a training step (BENCHMARKS.md,
    "Measurements behind code choices").

    Seeds come from the layer's `keras.random.SeedGenerator`, as in Keras.
    With `noise_shape` it falls back to Keras' dropout.

    Args:
        rate: float in [0, 1), fraction of the inputs to drop.
        noise_shape, seed, **kwargs: as `keras.layers.Dropout`.

    Example:
    >>> layer = Dropout(0.1)
    >>> layer(np.ones((2, 3)), training=True).shape
    (2, 3)
    """

    def call(self, inputs, training=False):
        if not training or self.rate == 0 or self.noise_shape is not None:
            return super().call(inputs, training=training)
        threshold = round(self.rate * _LEVELS)
        if threshold == 0:
            return inputs
        seed = self.seed_generator.next()
        seed = tf.cast(tf.math.floormod(seed, tf.int32.max - 1), tf.int32)
        size = tf.size(inputs)
        bits = tf.random.stateless_uniform(
            [(size + 1) // 2], seed=seed, minval=None, maxval=None, dtype=tf.uint32
        )
        halves = tf.reshape(tf.bitcast(bits, tf.uint16), [-1])[:size]
        keep = tf.reshape(halves >= threshold, tf.shape(inputs))
        scale = ops.cast(_LEVELS / (_LEVELS - threshold), inputs.dtype)
        return tf.where(keep, inputs * scale, ops.zeros_like(inputs))
