import keras
import numpy as np
import pytest

from keras_bert.models import BertEncoder, BertPretrainer
from tests.models.conftest import VOCAB, tiny_config
from tests.test_case import assert_all_close, run_model_saving_test


def pretraining_batch(batch):
    x = dict(batch, masked_positions=np.array([[1, 3, 0], [2, 5, 6]], dtype="int32"))
    y = {
        "masked_ids": np.array([[5, 9, 0], [12, 14, 3]], dtype="int32"),
        "masked_weights": np.array([[1, 1, 0], [1, 1, 1]], dtype="float32"),
        "next_sentence_labels": np.array([0, 1], dtype="int32"),
    }
    return x, y


def test_mlm_projection_is_the_embedding_variable(encoder, batch):
    pretrainer = BertPretrainer(encoder)
    table = encoder.embeddings.token_embeddings
    assert pretrainer.mlm_head.embeddings.token_embeddings is table
    assert sum(w is table for w in pretrainer.trainable_weights) == 1
    # Both paths update the one variable: a step on an MLM-only loss changes it.
    x, y = pretraining_batch(batch)
    before = table.numpy().copy()
    pretrainer.compile(optimizer=keras.optimizers.SGD(1.0))
    pretrainer.fit(x, y, epochs=1, verbose=0)
    # Rows that no input token uses can change only through the MLM projection.
    unused = [r for r in range(VOCAB) if r not in set(batch["token_ids"].ravel())]
    assert np.abs(table.numpy()[unused] - before[unused]).max() > 0


@pytest.mark.slow  # 100 epochs to overfit; test_precisions_and_jit_train fits in 25
def test_learns_a_fixed_batch(batch):
    # One block: what is checked is the pretrainer's fit, not the encoder's depth.
    encoder = BertEncoder(**tiny_config(dropout_rate=0.0, attention_dropout_rate=0.0,
                                        num_layers=1).to_dict())
    pretrainer = BertPretrainer(encoder)
    pretrainer.compile(optimizer=keras.optimizers.Adam(1e-2))
    x, y = pretraining_batch(batch)
    history = pretrainer.fit(x, y, epochs=100, verbose=0).history
    assert history["mlm_loss"][0] > 2.5
    assert history["mlm_loss"][-1] < 0.05
    assert history["masked_lm_accuracy"][-1] == 1.0
    assert history["nsp_accuracy"][-1] == 1.0


def test_loss_ignores_padding_slots(encoder, batch):
    pretrainer = BertPretrainer(encoder)
    x, y = pretraining_batch(batch)
    logits = pretrainer(x)
    loss = float(pretrainer.compute_loss(x, y, logits))
    p = keras.ops.convert_to_numpy(keras.ops.log_softmax(logits["mlm_logits"]))
    ce = -np.take_along_axis(p, y["masked_ids"][..., None], -1)[..., 0]
    mlm = (ce * y["masked_weights"]).sum() / y["masked_weights"].sum()
    q = keras.ops.convert_to_numpy(keras.ops.log_softmax(logits["nsp_logits"]))
    nsp = -q[np.arange(2), y["next_sentence_labels"]].mean()
    assert loss == pytest.approx(mlm + nsp, rel=1e-5)


def test_missing_labels_are_reported(encoder, batch):
    pretrainer = BertPretrainer(encoder)
    x, _ = pretraining_batch(batch)
    with pytest.raises(ValueError, match="masked_ids"):
        pretrainer.compute_loss(x, {"labels": 0}, pretrainer(x))


def test_save_reload_keeps_tie_and_outputs(encoder, batch, tmp_path):
    pretrainer = BertPretrainer(encoder)
    x, _ = pretraining_batch(batch)
    reloaded = run_model_saving_test(pretrainer, x, tmp_path)
    assert reloaded.mlm_head.embeddings is reloaded.encoder.embeddings
    pretrainer.save_pretrained(tmp_path / "dir")
    loaded = BertPretrainer.from_pretrained(tmp_path / "dir")
    assert_all_close(loaded.predict(x, verbose=0), pretrainer.predict(x, verbose=0))


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["float32_jit", "mixed_bfloat16", "mixed_float16"])
def test_precisions_and_jit_train(batch, policy):
    jit = policy == "float32_jit"
    dtype = None if jit else policy
    keras.utils.set_random_seed(1)
    encoder = BertEncoder(**tiny_config(dropout_rate=0.0, attention_dropout_rate=0.0,
                                        num_layers=1).to_dict(), dtype=dtype)  # One block.
    pretrainer = BertPretrainer(encoder)
    optimizer = keras.optimizers.Adam(1e-2)
    if policy == "mixed_float16":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    pretrainer.compile(optimizer=optimizer, jit_compile=jit)
    x, y = pretraining_batch(batch)
    history = pretrainer.fit(x, y, epochs=25, verbose=0).history
    assert history["loss"][-1] < 0.7 * history["loss"][0]
    assert all(np.isfinite(history["loss"]))
    if dtype:
        block = encoder.encoder_blocks[0]
        assert block.compute_dtype == policy.split("_")[1]
        assert block.qkv_dense.kernel.dtype == "float32"
        assert pretrainer(x)["mlm_logits"].dtype == "float32"
