"""Each layer: the shared round trip, plus the math that defines it."""

import functools

import keras
import numpy as np
import pytest

from keras_bert.layers import (
    BertEmbeddings,
    MaskedLMHead,
    NextSentenceHead,
    Pooler,
    TransformerEncoderBlock,
)
from tests.test_case import run_layer_test

RNG = np.random.default_rng(0)
IDS = np.array([[2, 5, 7, 3, 0, 0], [2, 9, 4, 8, 6, 3]], dtype="int32")
MASK = (IDS > 0).astype("int32")
HIDDEN = RNG.normal(size=(2, 6, 16)).astype("float32")


def test_embeddings_round_trip(tmp_path):
    run_layer_test(
        BertEmbeddings,
        dict(vocab_size=20, hidden_size=16, max_position_embeddings=8, type_vocab_size=2),
        (IDS, np.zeros_like(IDS)),
        (2, 6, 16),
        tmp_path,
    )


def test_embeddings_are_the_normalized_sum():
    layer = BertEmbeddings(vocab_size=20, hidden_size=16, dropout_rate=0.0)
    segments = np.array([[0, 0, 0, 1, 1, 1]] * 2, dtype="int32")
    out = keras.ops.convert_to_numpy(layer(IDS, segments))
    tok, seg, pos = (w.numpy() for w in (
        layer.token_embeddings, layer.segment_embeddings, layer.position_embeddings))
    total = tok[IDS] + seg[segments] + pos[None, :6]
    mean, var = total.mean(-1, keepdims=True), total.var(-1, keepdims=True)
    np.testing.assert_allclose(out, (total - mean) / np.sqrt(var + 1e-12), atol=1e-4)


def test_embeddings_reject_too_long_input():
    layer = BertEmbeddings(vocab_size=20, hidden_size=16, max_position_embeddings=4)
    with pytest.raises(ValueError, match="exceeds max_position_embeddings=4"):
        layer(IDS)


def test_encoder_block_round_trip(tmp_path):
    run_layer_test(
        TransformerEncoderBlock,
        dict(num_heads=4, intermediate_size=32),
        (HIDDEN, MASK),
        (2, 6, 16),
        tmp_path,
    )


def test_encoder_block_ignores_padded_keys():
    block = TransformerEncoderBlock(num_heads=4, intermediate_size=32, dropout_rate=0.0,
                                    attention_dropout_rate=0.0)
    out, probs = block(HIDDEN, padding_mask=MASK, return_attention_probs=True)
    changed = HIDDEN.copy()
    changed[0, 4:] = 100.0  # garbage at the padded positions of row 0
    out2 = block(changed, padding_mask=MASK)
    np.testing.assert_allclose(np.asarray(out)[0, :4], np.asarray(out2)[0, :4], atol=1e-5)
    probs = np.asarray(probs)
    assert probs.shape == (2, 4, 6, 6)
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-5)
    assert probs[0, :, :, 4:].max() == 0.0


def test_encoder_block_matches_a_numpy_reference():
    block = TransformerEncoderBlock(num_heads=2, intermediate_size=8, hidden_act="relu",
                                    dropout_rate=0.0, attention_dropout_rate=0.0)
    x = RNG.normal(size=(1, 3, 4)).astype("float32")
    out = np.asarray(block(x, padding_mask=np.array([[1, 1, 0]])))

    def dense(layer, h):
        return h @ layer.kernel.numpy() + layer.bias.numpy()

    def layer_norm(h):
        return (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-12)

    q, k, v = np.split(dense(block.qkv_dense, x[0]), 3, axis=-1)  # (T, H) each
    heads = []
    for n in range(2):
        sl = slice(2 * n, 2 * n + 2)
        scores = q[:, sl] @ k[:, sl].T / np.sqrt(2.0)
        scores[:, 2] = -np.inf
        p = np.exp(scores - scores.max(-1, keepdims=True))
        heads.append((p / p.sum(-1, keepdims=True)) @ v[:, sl])
    h = layer_norm(x[0] + dense(block.attention_output_dense, np.concatenate(heads, -1)))
    ffn = dense(block.output_dense, np.maximum(dense(block.intermediate_dense, h), 0))
    np.testing.assert_allclose(out[0], layer_norm(h + ffn), atol=1e-4)


def test_encoder_block_rejects_bad_arguments():
    with pytest.raises(ValueError, match="num_heads=0"):
        TransformerEncoderBlock(num_heads=0, intermediate_size=8)
    with pytest.raises(ValueError, match="hidden_act"):
        TransformerEncoderBlock(num_heads=2, intermediate_size=8, hidden_act="swish")
    with pytest.raises(ValueError, match="hidden_size=6, num_heads=4"):
        TransformerEncoderBlock(num_heads=4, intermediate_size=8)(np.zeros((1, 2, 6)))


def test_pooler_round_trip_and_uses_cls(tmp_path):
    run_layer_test(Pooler, {}, (HIDDEN,), (2, 16), tmp_path)
    pooler = Pooler()
    out = np.asarray(pooler(HIDDEN))
    expected = np.tanh(HIDDEN[:, 0] @ pooler.dense.kernel.numpy() + pooler.dense.bias.numpy())
    np.testing.assert_allclose(out, expected, atol=1e-5)


def test_next_sentence_head_round_trip(tmp_path):
    run_layer_test(NextSentenceHead, {}, (HIDDEN[:, 0],), (2, 2), tmp_path)


def test_masked_lm_head_round_trip(tmp_path):
    positions = np.array([[1, 2], [3, 5]], dtype="int32")
    run_layer_test(MaskedLMHead, dict(vocab_size=20), (HIDDEN, positions), (2, 2, 20), tmp_path)


def test_masked_lm_head_is_tied_and_gathers_positions():
    embeddings = BertEmbeddings(vocab_size=20, hidden_size=16)
    embeddings(IDS)
    head = MaskedLMHead(vocab_size=20, hidden_act="gelu_approx", embeddings=embeddings)
    positions = np.array([[1, 2], [3, 5]], dtype="int32")
    logits = np.asarray(head(HIDDEN, positions))
    assert not any(w is embeddings.token_embeddings for w in head._trainable_variables)
    gathered = np.take_along_axis(HIDDEN, positions[:, :, None], axis=1)
    t = gathered @ head.transform_dense.kernel.numpy() + head.transform_dense.bias.numpy()
    t = 0.5 * t * (1 + np.tanh(np.sqrt(2 / np.pi) * (t + 0.044715 * t**3)))
    t = (t - t.mean(-1, keepdims=True)) / np.sqrt(t.var(-1, keepdims=True) + 1e-12)
    expected = t @ embeddings.token_embeddings.numpy().T + head.output_bias.numpy()
    np.testing.assert_allclose(logits, expected, atol=1e-4)
    with pytest.raises(ValueError, match="vocab_size=20"):
        MaskedLMHead(vocab_size=21, embeddings=embeddings)


@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
@pytest.mark.parametrize("length", [None, 6])
def test_symbolic_outputs_are_what_tracing_the_call_gives(policy, length):
    # The layers say their output spec without tracing `call` (a functional model's
    # construction); it must be what Keras' own spec, which traces `call`, says.
    ids = keras.Input((length,), dtype="int32")
    # Keras' __call__ casts float inputs to the compute dtype before either spec.
    hidden = keras.Input((length, 16), dtype=keras.DTypePolicy(policy).compute_dtype)
    cases = [
        (BertEmbeddings(vocab_size=20, hidden_size=16, dtype=policy), (ids, ids), {}),
        (BertEmbeddings(vocab_size=20, hidden_size=16, type_vocab_size=0, dtype=policy),
         (ids,), {}),
        (TransformerEncoderBlock(num_heads=2, intermediate_size=32, dtype=policy), (hidden,),
         {"padding_mask": ids}),
        (TransformerEncoderBlock(num_heads=4, intermediate_size=32, dtype=policy), (hidden,),
         {"padding_mask": ids, "return_attention_probs": True}),
        (Pooler(dtype=policy), (hidden,), {}),
        (MaskedLMHead(vocab_size=20, dtype=policy), (hidden, keras.Input((3,), dtype="int32")),
         {}),
    ]
    for layer, args, kwargs in cases:
        layer.build(args[0].shape)
        said = keras.tree.flatten(layer.compute_output_spec(*args, **kwargs))
        traced = keras.tree.flatten(
            keras.layers.Layer.compute_output_spec(layer, *args, **kwargs))
        assert [(t.shape, t.dtype) for t in said] == [(t.shape, t.dtype) for t in traced], (
            type(layer).__name__, kwargs)
        assert len(said) == (2 if kwargs.get("return_attention_probs") else 1)


def test_a_symbolic_call_builds_every_weight_and_checks_the_length():
    # Without a traced call, nothing builds on a first real call: every weight exists after
    # the symbolic one, and a fixed length past the positions is refused there.
    block = TransformerEncoderBlock(num_heads=2, intermediate_size=32)
    block(keras.Input((None, 16)), padding_mask=keras.Input((None,), dtype="int32"))
    assert len(block.weights) == 12 and all(layer.built for layer in block._layers)
    with pytest.raises(ValueError, match="exceeds max_position_embeddings=8"):
        BertEmbeddings(vocab_size=20, hidden_size=16, max_position_embeddings=8)(
            keras.Input((9,), dtype="int32"))


def test_building_an_encoder_traces_none_of_its_layers(monkeypatch):
    # The symbolic call that makes a functional model runs no layer's `call` (tracing the
    # blocks was most of an encoder's construction time: 0.21 CPU s for the tiny one,
    # 0.04 s without).
    from keras_bert import BertEncoder, BertPretrainer
    from keras_bert.layers import embeddings, masked_lm_head, pooler, transformer_encoder_block

    traced = []
    for module, name in ((embeddings, "BertEmbeddings"), (pooler, "Pooler"),
                         (transformer_encoder_block, "TransformerEncoderBlock"),
                         (masked_lm_head, "MaskedLMHead")):
        cls = getattr(module, name)

        def counting(self, *args, _name=name, _call=cls.call, **kwargs):
            traced.append(_name)
            return _call(self, *args, **kwargs)

        # Keras reads `call`'s signature (its first argument's shape builds the layer).
        monkeypatch.setattr(cls, "call", functools.wraps(cls.call)(counting))
    encoder = BertEncoder(vocab_size=30, hidden_size=16, num_layers=2, num_heads=2,
                          intermediate_size=32, max_position_embeddings=16)
    BertPretrainer(encoder)
    assert traced == []
