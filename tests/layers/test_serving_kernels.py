"""The encoder block's serving forms (serving_kernels) against a numpy reference."""

import math

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.checkpoints.reference import _activation, _layer_norm
from keras_bert.layers import TransformerEncoderBlock, transformer_encoder_block
from keras_bert.layers.serving_kernels import serving_kernels, serving_kernels_enabled


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
    return {node.op for node in graph_def.node} | {
        node.op for function in graph_def.library.function for node in function.node_def
    }


@pytest.mark.parametrize("form", ["plain", "serving, small attention", "serving, large attention"])
def test_block_matches_numpy_reference(form, monkeypatch):
    # Large attention: every size is over the threshold, so the oneDNN branch runs.
    if form.endswith("large attention"):
        monkeypatch.setattr(transformer_encoder_block, "_SMALL_ATTENTION", 0)
    block = TransformerEncoderBlock(num_heads=2, intermediate_size=32, hidden_act="gelu")
    block.build((None, None, 16))
    rng = np.random.default_rng(0)
    for variable in block.weights:  # away from the initializer's zeros and ones
        variable.assign(rng.normal(0.0, 0.5, variable.shape).astype("float32"))
    x = rng.normal(size=(2, 5, 16)).astype("float32")
    padding_mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], "int32")

    def forward(x, padding_mask):
        with serving_kernels(form != "plain"):
            assert serving_kernels_enabled() == (form != "plain")
            return block(x, padding_mask=padding_mask, training=False)

    function = tf.function(forward).get_concrete_function(
        tf.TensorSpec([None, None, 16], tf.float32), tf.TensorSpec([None, None], tf.int32))
    ops = graph_ops(function)
    # The serving graph branches (If) between Eigen's kernels (BatchMatMulV3)
    # and oneDNN's (BatchMatMulV2), with GELU in the erf pattern.
    serving = {"BatchMatMulV3", "Erf"} <= ops and any(op.endswith("If") for op in ops)
    assert serving == (form != "plain"), sorted(ops)

    got = function(tf.constant(x), tf.constant(padding_mask)).numpy()
    want = numpy_block(block, np.float64(x), np.float64(padding_mask))
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)
