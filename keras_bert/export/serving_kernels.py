"""serving_kernels(model): the CPU kernels a SavedModel export traces the model with.

oneDNN's batch matmul and softmax have a fixed cost per call that dominates on
one short text (BENCHMARKS.md, "Attention kernels by size"). The layers hold the
math alone; a SavedModel export (not XLA, not LiteRT) traces its model inside
`serving_kernels(model)`, where each block's `attend` becomes `serving_attention`
(a `tf.cond` between Eigen's kernels and oneDNN's), each exact GELU
`serving_gelu` (the pattern oneDNN's remapper fuses with the MatMul + BiasAdd),
each LayerNormalization `serving_layer_norm` (fewer ops per call) and, given
`block_halves(model)`, each block's attention and feed-forward as two independent
halves (`BlockHalves`: on one short text, two half-width matmul chains that
TensorFlow runs side by side take less time than one chain of full width).
"""

import contextlib
import functools
import math
import threading
import types

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
    float32 [B, 1, 1, T]). `qkv` may be a list of such tensors, groups of heads
    (`BlockHalves`): one choice of kernels for all, a list of pairs back.
    """
    block = attend.__self__
    groups = qkv if isinstance(qkv, list) else [qkv]
    batch_size, seq_length = ops.shape(groups[0])[:2]
    heads = max(group.shape[2] // 3 for group in groups)  # the kernels run per group
    small = batch_size * heads * seq_length * seq_length <= _SMALL_ATTENTION

    def large():
        return [attend(group, bias, training=False) for group in groups]

    def small_attention():
        return [_small_attention(group, bias, block.head_size) for group in groups]

    if isinstance(small, bool):  # static shapes: no branch needed
        answers = small_attention() if small else large()
    else:
        answers = tf.cond(small, small_attention, large)
    return answers if isinstance(qkv, list) else answers[0]


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


class BlockHalves:
    """A block's two sub-layers, each as two independent halves (the same values up to
    float rounding), for one short text on few cores: two half-width chains of
    matmuls that TensorFlow's executor runs at once take less time than one chain of
    full width (BENCHMARKS.md, "Blocks in halves").

    - `self_attention`: the heads in two groups, each its own q/k/v projection,
      attention and rows of the output projection; the two outputs are summed.
    - `feed_forward`: W2a act(W1a h + b1a) + W2b act(W1b h + b1b) + b2, the inner
      width halved.

    The halves are their own variables, copied from the block's Dense layers when
    made (`variables`); an export saves them in place of the ones they replace
    (`replaced`; the two output biases are read where they are). A q/k/v
    projection with LoRA adapters, or one head, keeps its attention whole.

    Args:
        block: a built `TransformerEncoderBlock`.
    """

    def __init__(self, block):
        self.block = block
        qkv, output = block.qkv_dense, block.attention_output_dense
        inner, outer = block.intermediate_dense, block.output_dense
        if not all(layer.use_bias for layer in (qkv, output, inner, outer)):
            raise ValueError(f"{block.name}: BlockHalves expects Dense layers with biases "
                             "(use_bias=True), as BERT's are.")
        name = f"{block.name}_half"

        def copy(value, i, what):
            return tf.Variable(value, trainable=False, name=f"{name}{i}_{what}")

        self.attention = []
        self.replaced = []
        heads, size = block.num_heads, block.head_size
        if heads >= 2 and not qkv.lora_targets:
            kernel, bias, output_kernel = (v.value for v in (qkv.kernel, qkv.bias, output.kernel))
            hidden = heads * size
            for i, (first, last) in enumerate(((0, heads // 2), (heads // 2, heads))):
                # The group's query, key and value columns, in the fused layout's order.
                columns = [slice(part * hidden + first * size, part * hidden + last * size)
                           for part in range(3)]
                self.attention.append((
                    last - first,
                    copy(tf.concat([kernel[:, c] for c in columns], 1), i, "qkv_kernel"),
                    copy(tf.concat([bias[c] for c in columns], 0), i, "qkv_bias"),
                    copy(output_kernel[first * size:last * size], i, "attention_output_kernel")))
            self.replaced += [kernel, bias, output_kernel]
        kernel, bias, outer_kernel = (v.value for v in (inner.kernel, inner.bias, outer.kernel))
        middle = inner.units // 2
        self.feed_forward_parts = [
            (copy(kernel[:, start:stop], i, "inner_kernel"), copy(bias[start:stop], i, "inner_bias"),
             copy(outer_kernel[start:stop], i, "outer_kernel"))
            for i, (start, stop) in enumerate(((0, middle), (middle, inner.units)))]
        self.replaced += [kernel, bias, outer_kernel]
        self.variables = [v for part in self.attention for v in part[1:]] + [
            v for part in self.feed_forward_parts for v in part]

    def self_attention(self, rows, batch_size, seq_length, bias=None, training=None):
        """`TransformerEncoderBlock.self_attention` at inference, in two groups of heads."""
        block = self.block
        if training or not self.attention:
            return type(block).self_attention(block, rows, batch_size, seq_length, bias,
                                              training=training)
        dtype = block.compute_dtype
        rows = ops.cast(rows, dtype)
        qkvs = [ops.reshape(ops.add(ops.matmul(rows, ops.cast(kernel, dtype)),
                                    ops.cast(qkv_bias, dtype)),
                            (batch_size, seq_length, 3 * heads, block.head_size))
                for heads, kernel, qkv_bias, _ in self.attention]
        # One choice of kernels for both groups (one tf.cond, not two).
        answers = serving_attention(types.MethodType(type(block).attend, block), qkvs, bias)
        contexts = [context for context, _ in answers]
        probs = ops.concatenate([group_probs for _, group_probs in answers], axis=1)
        halves = [ops.matmul(ops.reshape(context, (-1, heads * block.head_size)),
                             ops.cast(output_kernel, dtype))
                  for context, (heads, _, _, output_kernel) in zip(contexts, self.attention)]
        output = ops.add(ops.add(halves[0], halves[1]),
                         ops.cast(block.attention_output_dense.bias, dtype))
        return output, probs

    def feed_forward(self, h):
        """`TransformerEncoderBlock.feed_forward`, its inner width in two halves."""
        block = self.block
        dtype = block.compute_dtype
        h = ops.cast(h, dtype)
        halves = []
        for kernel, bias, outer_kernel in self.feed_forward_parts:
            inner = ops.add(ops.matmul(h, ops.cast(kernel, dtype)), ops.cast(bias, dtype))
            halves.append(ops.matmul(block.intermediate_dense.activation(inner),
                                     ops.cast(outer_kernel, dtype)))
        return ops.add(ops.add(halves[0], halves[1]), ops.cast(block.output_dense.bias, dtype))


def block_halves(model):
    """{block: BlockHalves(block)} for each `TransformerEncoderBlock` inside `model`
    (at any depth) whose feed-forward is 2 or more wide."""
    return {layer: BlockHalves(layer)
            for layer in model._flatten_layers(include_self=True, recursive=True)
            if isinstance(layer, TransformerEncoderBlock) and layer.intermediate_size >= 2}


@contextlib.contextmanager
def serving_kernels(model, enabled=True, halves=None):
    """Traces of `model` (its `TransformerEncoderBlock`s, exact-GELU Dense layers and
    LayerNormalizations, at any depth) inside this context, in this thread, take
    the serving forms.

    The rewrite sets instance attributes and restores them on exit; a trace in
    another thread meanwhile gets the layers' own forms. `enabled=False` leaves
    the model as it is (XLA and LiteRT choose their own kernels). `halves`, a dict
    from `block_halves(model)`, makes those blocks' `self_attention` and
    `feed_forward` their halves' (the caller saves the halves' variables). Yields
    `model`.

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
                    if halves and layer in halves and "feed_forward" not in vars(layer):
                        for method in ("self_attention", "feed_forward"):
                            restores.append(_set(layer, method, _in_thread(
                                thread, getattr(halves[layer], method), getattr(layer, method))))
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
