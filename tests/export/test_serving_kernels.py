"""serving_kernels(model): the export's CPU forms of the encoder block, against numpy."""

import math
import threading

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.checkpoints.reference import _activation, _layer_norm
from keras_bert.export import serving_kernels as kernels
from keras_bert.export.serving_kernels import serving_kernels
from keras_bert.layers import MaskedLMHead, TransformerEncoderBlock, gelu

DYNAMIC = (tf.TensorSpec([None, None, 16], tf.float32), tf.TensorSpec([None, None], tf.int32))
#: The serving forms' ops: Eigen's batch matmul, the erf GELU, the size branch.
SERVING_OPS = {"BatchMatMulV3", "Erf", "If"}


def numpy_block(block, x, padding_mask):
    """One post-LayerNorm BERT block in float64 numpy, on `block`'s weights."""

    def dense(layer, inputs):
        return inputs @ np.float64(layer.kernel.numpy()) + np.float64(layer.bias.numpy())

    def norm(layer, inputs):
        return _layer_norm(inputs, np.float64(layer.gamma.numpy()),
                           np.float64(layer.beta.numpy()), block.layer_norm_epsilon)

    batch, seq, hidden = x.shape
    heads, size = block.num_heads, hidden // block.num_heads
    query, key, value = (
        part.reshape(batch, seq, heads, size).transpose(0, 2, 1, 3)
        for part in np.split(dense(block.qkv_dense, x), 3, axis=-1)
    )  # (B, N, T, D)
    scores = query @ key.transpose(0, 1, 3, 2) / math.sqrt(size)
    scores = scores + (1.0 - padding_mask[:, None, None, :]) * -1e9
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    context = (probs @ value).transpose(0, 2, 1, 3).reshape(batch, seq, hidden)
    h = norm(block.attention_layer_norm, x + dense(block.attention_output_dense, context))
    act = _activation(block.hidden_act)
    ffn = dense(block.output_dense, act(dense(block.intermediate_dense, h)))
    return norm(block.output_layer_norm, h + ffn)


def graph_ops(concrete_function):
    """Op types in a concrete function's graph, its cond branches included."""
    graph_def = concrete_function.graph.as_graph_def()
    ops = {node.op for node in graph_def.node} | {
        node.op for function in graph_def.library.function for node in function.node_def
    }
    return {"If" if op.endswith("If") else op for op in ops}  # If or StatelessIf


def random_block(seed=0):
    block = TransformerEncoderBlock(num_heads=2, intermediate_size=32, hidden_act="gelu")
    block.build((None, None, 16))
    rng = np.random.default_rng(seed)
    for variable in block.weights:  # away from the initializer's zeros and ones
        variable.assign(rng.normal(0.0, 0.5, variable.shape).astype("float32"))
    return block


def trace(block, enabled=True, signature=DYNAMIC, training=False):
    """The concrete function of `block` traced inside serving_kernels(block, enabled)."""

    def forward(x, padding_mask):
        with serving_kernels(block, enabled):
            return block(x, padding_mask=padding_mask, training=training)

    return tf.function(forward).get_concrete_function(*signature)


X = np.random.default_rng(1).normal(size=(2, 5, 16)).astype("float32")
PADDING_MASK = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], "int32")


@pytest.mark.parametrize("form", ["plain", "serving, small attention", "serving, large attention"])
def test_block_matches_numpy_reference(form, monkeypatch):
    # Large attention: every size is over the threshold, so the oneDNN branch runs.
    if form.endswith("large attention"):
        monkeypatch.setattr(kernels, "_SMALL_ATTENTION", 0)
    block = random_block()
    function = trace(block, enabled=form != "plain")
    # The serving graph branches (If) between Eigen's kernels (BatchMatMulV3)
    # and oneDNN's (BatchMatMulV2), with GELU in the erf pattern; the plain
    # block (the layer's own math) has none of them.
    ops = graph_ops(function)
    assert ops & SERVING_OPS == (SERVING_OPS if form != "plain" else set()), sorted(ops)
    assert "BatchMatMulV2" in ops and ("Erfc" in ops) == (form == "plain"), sorted(ops)
    # The small branch transposes the heads as integers (Eigen's Transpose).
    assert ("Bitcast" in ops) == (form != "plain"), sorted(ops)
    # LayerNorm in 9 ops (x - mean, squared), not Keras' 11 (SquaredDifference, Neg).
    assert ("SquaredDifference" in ops) == (form == "plain"), sorted(ops)

    got = function(tf.constant(X), tf.constant(PADDING_MASK)).numpy()
    want = numpy_block(block, np.float64(X), np.float64(PADDING_MASK))
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)


@pytest.mark.parametrize("threshold, small", [(32 * 1024, True), (0, False)])
def test_static_shapes_choose_one_kernel_set_without_a_branch(threshold, small, monkeypatch):
    monkeypatch.setattr(kernels, "_SMALL_ATTENTION", threshold)
    block = random_block()
    static = (tf.TensorSpec([2, 5, 16], tf.float32), tf.TensorSpec([2, 5], tf.int32))
    ops = graph_ops(trace(block, signature=static))
    assert "If" not in ops and ("BatchMatMulV3" in ops) == small, sorted(ops)
    got = trace(block, signature=static)(tf.constant(X), tf.constant(PADDING_MASK)).numpy()
    np.testing.assert_allclose(got, numpy_block(block, np.float64(X), np.float64(PADDING_MASK)),
                               atol=1e-5, rtol=0)


def test_the_model_is_restored_on_exit_and_a_training_trace_keeps_its_form():
    block = random_block()
    trace(block)
    # Nothing stays behind: the next trace outside the context is the layer's own.
    assert "attend" not in vars(block) and block.intermediate_dense.activation is gelu
    assert "call" not in vars(block.attention_layer_norm)
    assert not graph_ops(trace(block, enabled=False)) & SERVING_OPS
    # A training trace inside the context keeps the block's attention (and
    # its dropout); only the GELU form changes.
    training_ops = graph_ops(trace(block, training=True))
    assert training_ops & SERVING_OPS == {"Erf"}, sorted(training_ops)
    # Even when the body raised.
    with pytest.raises(RuntimeError), serving_kernels(block):
        raise RuntimeError("trace failed")
    assert "attend" not in vars(block) and block.intermediate_dense.activation is gelu


def test_nested_models_are_rewritten_and_nesting_the_context_does_not_stack():
    # The block and an exact-GELU Dense (the masked-LM transform) inside a
    # model inside a model, as an encoder sits in a task model.
    block = random_block()
    x = keras.Input((None, 16))
    inner = keras.Model(x, block(x))
    head = MaskedLMHead(vocab_size=20, hidden_act="gelu")
    sequence, positions = keras.Input((None, 16)), keras.Input((3,), dtype="int32")
    outer = keras.Model([sequence, positions], head(inner(sequence), positions))

    def forward(sequence, positions):
        with serving_kernels(outer), serving_kernels(outer):
            return outer([sequence, positions], training=False)

    function = tf.function(forward).get_concrete_function(
        tf.TensorSpec([None, None, 16]), tf.TensorSpec([None, 3], tf.int32))
    graph_def = function.graph.as_graph_def()
    nodes = list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]
    # Two GELUs (the block's and the head's), each once; one size branch.
    assert sum(n.op == "Erf" for n in nodes) == 2
    assert sum(n.op.endswith("If") for n in nodes) == 1
    assert "attend" not in vars(block) and head.transform_dense.activation is gelu
    sequence_value = np.random.default_rng(2).normal(size=(2, 5, 16)).astype("float32")
    positions_value = np.array([[0, 1, 4], [2, 3, 3]], "int32")
    np.testing.assert_allclose(function(sequence_value, positions_value),
                               outer([sequence_value, positions_value]), atol=1e-5, rtol=0)


def test_a_trace_in_another_thread_keeps_the_layers_own_forms():
    block = random_block()
    traced = {}
    with serving_kernels(block):
        worker = threading.Thread(target=lambda: traced.update(ops=graph_ops(trace(
            block, enabled=False))))
        worker.start()
        worker.join()
    assert not traced["ops"] & SERVING_OPS, sorted(traced["ops"])


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_heads_are_swapped_bit_for_bit_in_each_compute_dtype(dtype):
    # The small branch's transpose moves integers of the float's width (a
    # mixed_bfloat16 export computes attention in bfloat16).
    x = tf.cast(tf.constant(np.random.default_rng(3).normal(size=(2, 5, 6, 4)), "float32"), dtype)
    swapped = kernels._heads_swapped(x)
    assert swapped.dtype == x.dtype
    np.testing.assert_array_equal(tf.cast(swapped, "float32").numpy(),
                                  np.transpose(tf.cast(x, "float32").numpy(), (0, 2, 1, 3)))


@pytest.mark.parametrize("dtype", ["float32", "mixed_bfloat16"])
def test_serving_layer_norm_matches_keras(dtype):
    layer = keras.layers.LayerNormalization(epsilon=1e-12, dtype=dtype)
    x = np.random.default_rng(3).normal(2.0, 3.0, size=(2, 5, 16)).astype("float32")
    layer.build(x.shape)
    rng = np.random.default_rng(4)
    for variable in layer.weights:
        variable.assign(rng.normal(0.0, 1.0, variable.shape).astype("float32"))
    inputs = tf.cast(x, layer.compute_dtype)
    got, want = kernels.serving_layer_norm(layer, inputs), layer(inputs)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(tf.cast(got, tf.float32), tf.cast(want, tf.float32),
                               atol=1e-5 if dtype == "float32" else 2e-2)


def matmuls(concrete_function):
    """The MatMul nodes of a concrete function's graph, its functions' included."""
    graph_def = concrete_function.graph.as_graph_def()
    nodes = list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]
    return sum(node.op == "MatMul" for node in nodes)


@pytest.mark.parametrize("form", ["serving", "plain"])
def test_block_halves_match_numpy_and_replace_their_dense_weights(form):
    block = random_block()
    halves = kernels.block_halves(block)
    assert list(halves) == [block]
    half = halves[block]
    qkv, output = block.qkv_dense, block.attention_output_dense
    inner, outer = block.intermediate_dense, block.output_dense
    # The copies it saves in place of the q/k/v kernel and bias, the attention output's
    # kernel, W1, b1 and W2 (the two output biases are read where they are).
    assert [v.ref() for v in half.replaced] == [v.value.ref() for v in (
        qkv.kernel, qkv.bias, output.kernel, inner.kernel, inner.bias, outer.kernel)]
    # Head group i (one of the two heads of 8 here): its query, key and value columns.
    (n1, q1, c1, o1), (n2, q2, c2, o2) = half.attention
    kernel = qkv.kernel.numpy()
    assert (n1, n2) == (1, 1) and q1.shape == (16, 24) and o1.shape == (8, 16)
    np.testing.assert_array_equal(q1.numpy(), kernel[:, [*range(0, 8), *range(16, 24),
                                                         *range(32, 40)]])
    np.testing.assert_array_equal(q2.numpy(), kernel[:, [*range(8, 16), *range(24, 32),
                                                         *range(40, 48)]])
    np.testing.assert_array_equal(np.concatenate([o1.numpy(), o2.numpy()]), output.kernel.numpy())
    (k1, b1, w1), (k2, b2, w2) = half.feed_forward_parts
    np.testing.assert_array_equal(np.concatenate([k1.numpy(), k2.numpy()], 1), inner.kernel.numpy())
    np.testing.assert_array_equal(np.concatenate([b1.numpy(), b2.numpy()]), inner.bias.numpy())
    np.testing.assert_array_equal(np.concatenate([w1.numpy(), w2.numpy()]), outer.kernel.numpy())

    def forward(x, padding_mask):
        with serving_kernels(block, form == "serving", halves):
            return block(x, padding_mask=padding_mask, training=False, return_attention_probs=True)

    function = tf.function(forward).get_concrete_function(*DYNAMIC)
    # q/k/v, attention output, FFN in and out: one matmul each, or one per half.
    assert matmuls(function) == (8 if form == "serving" else 4)
    assert "feed_forward" not in vars(block) and "self_attention" not in vars(block)
    got, probs = function(tf.constant(X), tf.constant(PADDING_MASK))
    want = numpy_block(block, np.float64(X), np.float64(PADDING_MASK))
    np.testing.assert_allclose(got.numpy(), want, atol=1e-5, rtol=0)
    # The heads' probabilities, in the block's head order.
    plain_probs = block(X, padding_mask=PADDING_MASK, return_attention_probs=True)[1]
    np.testing.assert_allclose(probs.numpy(), plain_probs, atol=1e-6)


def test_block_halves_of_odd_widths_in_bfloat16_and_with_lora():
    block = TransformerEncoderBlock(num_heads=3, intermediate_size=7, hidden_act="relu",
                                    dtype="mixed_bfloat16")
    block.build((None, None, 6))
    rng = np.random.default_rng(5)
    for variable in block.weights:
        variable.assign(rng.normal(0.0, 0.5, variable.shape).astype("float32"))
    half = kernels.block_halves(block)[block]
    assert [part[0] for part in half.attention] == [1, 2]
    assert [part[0].shape[1] for part in half.feed_forward_parts] == [3, 4]
    x = rng.normal(size=(2, 5, 6)).astype("float32")

    def forward(x):
        with serving_kernels(block, True, {block: half}):
            return block(x, training=False)

    got = tf.function(forward)(tf.constant(x))
    want = block(x, training=False)
    assert got.dtype == want.dtype == tf.bfloat16
    np.testing.assert_allclose(tf.cast(got, "float32"), tf.cast(want, "float32"), atol=0.05)
    # A q/k/v projection with LoRA adapters keeps its attention whole (the halves would
    # copy the kernel without them); the feed-forward is still halved.
    block.enable_lora(2)
    lora = kernels.block_halves(block)[block]
    assert lora.attention == [] and len(lora.replaced) == 3
