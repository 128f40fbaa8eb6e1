"""serving_kernels(model): the CPU kernels a SavedModel export traces the model with.

oneDNN's batch matmul and softmax have a fixed cost per call that dominates on
one short text (BENCHMARKS.md, "Attention kernels by size"). The layers hold the
math alone; a SavedModel export (not XLA, not LiteRT) traces its model inside
`serving_kernels(model)`, where each block's `attend` becomes `serving_attention`
(a `tf.cond` between Eigen's kernels and oneDNN's), each exact GELU
`serving_gelu` (the pattern oneDNN's remapper fuses with the MatMul + BiasAdd)
and each LayerNormalization `serving_layer_norm` (fewer ops per call).
"""

import contextlib
import functools
import math
import threading

import keras
import tensorflow as tf
from keras import ops

from keras_bert.layers import TransformerEncoderBlock, gelu

# Attention scores (batch x heads x seq x seq) up to which Eigen's batch
# matmul and an exp/sum softmax beat oneDNN's: about one text of 64 tokens
# under 12 heads (BENCHMARKS.md, "Attention kernels by size").
_SMALL_ATTENTION = 32 * 1024
# 1 / sqrt(2), the constant the remapper's exact-GELU pattern checks for.
_SQRT_HALF = 1.0 / math.sqrt(2.0)


def serving_gelu(x):
    """Exact GELU as ((erf(x / sqrt(2)) + 1) * 0.5) * x, the form oneDNN fuses.

    The same function as `keras_bert.layers.gelu` (Keras' erfc form), which
    the LiteRT converter needs: LiteRT has no Erf builtin.
    """
    return ops.multiply(
        ops.multiply(ops.add(ops.erf(ops.multiply(x, _SQRT_HALF)), 1.0), 0.5), x
    )


def serving_layer_norm(layer, inputs):
    """`layer` (a Keras LayerNormalization over the last axis) in 9 graph ops, Keras
    writes 11: the same values up to float rounding."""
    x = tf.cast(inputs, tf.float32)
    centered = x - tf.reduce_mean(x, -1, keepdims=True)
    variance = tf.reduce_mean(tf.square(centered), -1, keepdims=True)
    outputs = (centered * tf.math.rsqrt(variance + layer.epsilon)
               * tf.cast(layer.gamma, tf.float32) + tf.cast(layer.beta, tf.float32))
    return tf.cast(outputs, layer.compute_dtype)


def _last_axis_layer_norm(layer):
    return (isinstance(layer, keras.layers.LayerNormalization) and layer.axis in (-1, [-1])
            and layer.center and layer.scale and not layer.rms_scaling)


def serving_attention(attend, qkv, bias=None):
    """`attend`'s values at inference, on the CPU kernels fastest at their size.

    `attend` is a bound `TransformerEncoderBlock.attend` (the large form); returns
    what `attend(qkv, bias, training=False)` returns: (context [B, T, N, D],
    float32 probabilities [B, N, T, T]) of `qkv` [B, T, 3 * N, D] and `bias` (None or
    float32 [B, 1, 1, T]).
    """
    block = attend.__self__
    batch_size, seq_length = ops.shape(qkv)[:2]
    small = batch_size * block.num_heads * seq_length * seq_length <= _SMALL_ATTENTION

    def large():
        return attend(qkv, bias, training=False)

    def small_attention():
        return _small_attention(qkv, bias, block.head_size)

    if isinstance(small, bool):  # static shapes: no branch needed
        return small_attention() if small else large()
    return tf.cond(small, small_attention, large)


def _small_attention(qkv, bias, head_size):
    """Attention on Eigen's kernels: `BatchMatMulV3` (oneDNN rewrites only the
    V2 op that `tf.matmul` makes), a softmax from exp and sums, and transposes
    of the bits (oneDNN rewrites only float transposes; its fixed cost per
    call dominates at these sizes too)."""

    def matmul(a, b, adj_y=False):
        return tf.raw_ops.BatchMatMulV3(x=a, y=b, adj_y=adj_y, Tout=a.dtype)

    query, key, value = tf.split(_heads_swapped(qkv), 3, axis=1)  # (B, N, T, D)
    query = query * ops.cast(1.0 / math.sqrt(head_size), query.dtype)
    scores = ops.cast(matmul(query, key, adj_y=True), "float32")  # (B, N, T, T)
    if bias is not None:
        scores = scores + bias
    weights = ops.exp(scores - ops.max(scores, axis=-1, keepdims=True))
    # One reciprocal per row and a multiply: a broadcast division costs more.
    probs = weights * tf.math.reciprocal(ops.sum(weights, axis=-1, keepdims=True))
    return _heads_swapped(matmul(ops.cast(probs, value.dtype), value)), probs  # (B, T, N, D)


def _heads_swapped(x):
    """`x` [A, B, C, D] transposed to [A, C, B, D], moved as integers of its width."""
    bits = {1: tf.int8, 2: tf.int16, 4: tf.int32, 8: tf.int64}[x.dtype.size]
    return tf.bitcast(tf.transpose(tf.bitcast(x, bits), (0, 2, 1, 3)), x.dtype)


@contextlib.contextmanager
def serving_kernels(model, enabled=True):
    """Traces of `model` (its `TransformerEncoderBlock`s, exact-GELU Dense layers and
    LayerNormalizations, at any depth) inside this context, in this thread, take
    the serving forms.

    The rewrite sets instance attributes and restores them on exit; a trace in
    another thread meanwhile gets the layers' own forms. `enabled=False` leaves
    the model as it is (XLA and LiteRT choose their own kernels). Yields `model`.

    Example:
    >>> with serving_kernels(encoder):
    ...     outputs = tf.function(encoder)(inputs, training=False)
    """
    restores = []
    try:
        if enabled:
            thread = threading.get_ident()
            # Keras' walk over every sub-layer, nested models included.
            for layer in model._flatten_layers(include_self=True, recursive=True):
                if isinstance(layer, TransformerEncoderBlock) and "attend" not in vars(layer):
                    attend = layer.attend
                    serving = functools.partial(_serving_attend, attend)
                    restores.append(_set(layer, "attend", _in_thread(thread, serving, attend)))
                elif isinstance(layer, keras.layers.Dense) and layer.activation is gelu:
                    restores.append(
                        _set(layer, "activation", _in_thread(thread, serving_gelu, gelu)))
                elif _last_axis_layer_norm(layer) and "call" not in vars(layer):
                    serving = functools.partial(serving_layer_norm, layer)
                    restores.append(_set(layer, "call", _in_thread(thread, serving, layer.call)))
        yield model
    finally:
        for restore in reversed(restores):
            restore()


def _serving_attend(attend, qkv, bias=None, training=None):
    if training:  # a training trace keeps dropout, on the one kernel set
        return attend(qkv, bias, training=training)
    return serving_attention(attend, qkv, bias)


def _in_thread(thread, serving, plain):
    """`serving` when called in thread `thread`, `plain` in any other."""

    def call(*args, **kwargs):
        function = serving if threading.get_ident() == thread else plain
        return function(*args, **kwargs)

    return call


def _set(layer, name, value):
    """Sets `layer.name` to `value`; returns the function that undoes it."""
    had, previous = name in vars(layer), vars(layer).get(name)
    setattr(layer, name, value)

    def restore():
        if had:
            setattr(layer, name, previous)
        else:
            delattr(layer, name)

    return restore
