import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.models import BertEncoder, BertPretrainer
from keras_bert.training import AdamW, Trainer, create_optimizer
from tests.models.conftest import VOCAB, tiny_config


def _pretrainer(**overrides):
    keras.utils.set_random_seed(3)
    config = tiny_config(dropout_rate=0.0, attention_dropout_rate=0.0, **overrides)
    return BertPretrainer(BertEncoder(**config.to_dict()))


@pytest.mark.parametrize("name", ["adamw", "lamb"])
def test_weight_decay_skips_layer_norm_and_biases(name):
    model = _pretrainer()
    lr, decay = 0.1, 0.5
    optimizer = create_optimizer(lr, num_train_steps=10, optimizer=name, weight_decay=decay,
                                 global_clipnorm=None)
    variables = model.trainable_variables
    optimizer.build(variables)
    before = [v.numpy().copy() for v in variables]
    # Zero gradients leave Adam/LAMB moments at 0, so only weight decay moves weights.
    optimizer.apply_gradients([(tf.zeros_like(v), v) for v in variables])
    exempt = {v.path for v in variables
              if "layer_norm" in v.path or v.path.endswith("bias")}
    # 6 LayerNorms (gamma, beta) + 12 biases (4 per block, pooler, heads).
    assert len(exempt) == 24
    for variable, old in zip(variables, before):
        if variable.path in exempt:
            np.testing.assert_array_equal(variable.numpy(), old, err_msg=variable.path)
        else:
            np.testing.assert_allclose(variable.numpy(), old * (1 - lr * decay),
                                       rtol=1e-6, err_msg=variable.path)


@pytest.mark.parametrize("name", ["adamw", "lamb"])
def test_repeated_embedding_rows_step_like_a_dense_gradient(name):
    # Keras alone applies IndexedSlices slice by slice: with 4 repeats of row
    # 0, Adam moved it about twice as far as the dense gradient does.
    results = []
    for sparse in (False, True):
        variable = keras.Variable(np.zeros((2, 3), "float32"))
        optimizer = create_optimizer(0.01, num_train_steps=10, optimizer=name,
                                     weight_decay=0.0, global_clipnorm=None)
        optimizer.build([variable])
        grad = tf.IndexedSlices(tf.constant([[1e-3, 2e-3, 3e-3]] * 4),
                                tf.constant([0, 0, 0, 0]), tf.constant([2, 3]))
        optimizer.apply_gradients([(grad if sparse else tf.convert_to_tensor(grad), variable)])
        results.append(variable.numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6)
    assert np.abs(results[0]).max() <= 0.01 + 1e-7  # Adam's first step is at most lr.


def _arrays(n, seq=8, predictions=3, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, VOCAB, (n, seq)).astype("int32")
    ids[:, 0] = 2
    x = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
         "padding_mask": np.ones_like(ids),
         "masked_positions": np.tile(np.arange(1, 1 + predictions, dtype="int32"), (n, 1))}
    y = {"masked_ids": rng.integers(5, VOCAB, (n, predictions)).astype("int32"),
         "masked_weights": np.ones((n, predictions), "float32"),
         "next_sentence_labels": rng.integers(0, 2, n).astype("int32")}
    return x, y


def _train(tmp_path, batch_size, steps, accumulation=1, jit=False, steps_per_execution=1,
           dtype=None, clipnorm=0.05):
    x, y = _arrays(64)
    model = _pretrainer() if dtype is None else BertPretrainer(BertEncoder(
        **tiny_config(dropout_rate=0.0, attention_dropout_rate=0.0).to_dict(), dtype=dtype))
    model.compile(optimizer=create_optimizer(
        1e-2, num_train_steps=10, warmup_steps=0, global_clipnorm=clipnorm,
        gradient_accumulation_steps=accumulation, loss_scale=dtype == "mixed_float16"))
    trainer = Trainer(
        model, tf.distribute.get_strategy(),
        lambda b, i, n: tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(
            b, drop_remainder=True),
        global_batch_size=batch_size, checkpoint_dir=str(tmp_path), checkpoint_every=100,
        jit_compile=jit, steps_per_execution=steps_per_execution)
    logs = trainer.train(steps, verbose=0, log_every=100)
    return model, logs


def test_accumulating_k_batches_equals_one_k_times_larger_batch(tmp_path):
    # Clipping at 0.05 is active: it must clip the accumulated mean gradient;
    # the learning rate must advance once per update, not per micro-batch.
    initial = [w.numpy() for w in _pretrainer().trainable_weights]
    big, _ = _train(tmp_path / "big", batch_size=8, steps=2)
    graph, _ = _train(tmp_path / "graph", batch_size=4, steps=2, accumulation=2)
    # Under XLA, and with both updates in one compiled call.
    xla, _ = _train(tmp_path / "xla", batch_size=4, steps=2, accumulation=2, jit=True,
                    steps_per_execution=2)
    for model in (graph, xla):
        assert int(model.optimizer.iterations.numpy()) == 2  # Updates, not micro-batches.
        for a, b in zip(model.trainable_weights, big.trainable_weights):
            np.testing.assert_allclose(a.numpy(), b.numpy(), atol=2e-6, err_msg=a.path)
    moved = max(np.abs(w.numpy() - i).max() for w, i in zip(big.trainable_weights, initial))
    assert moved > 1e-3


@pytest.mark.parametrize("dtype", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_trains(tmp_path, dtype):
    model, logs = _train(tmp_path, batch_size=8, steps=3, dtype=dtype, clipnorm=1.0)
    assert np.isfinite(logs["loss"]) and logs["loss"] > 0
    assert model.encoder.embeddings.compute_dtype == dtype.split("_")[1]
    inner = getattr(model.optimizer, "inner_optimizer", model.optimizer)
    assert (inner is not model.optimizer) == (dtype == "mixed_float16")  # Loss scaling.
    assert int(model.optimizer.iterations.numpy()) >= 1


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("amsgrad", [False, True])
def test_fused_adam_update_matches_keras_adamw(jit, amsgrad):
    rng = np.random.default_rng(0)
    start = rng.normal(size=(5, 7)).astype("float32")
    grads = [rng.normal(size=(5, 7)).astype("float32") for _ in range(6)]
    results = []
    for cls in (keras.optimizers.AdamW, AdamW):
        variable = keras.Variable(start)
        optimizer = cls(learning_rate=0.01, weight_decay=0.1, epsilon=1e-6, amsgrad=amsgrad)
        step = tf.function(lambda g: optimizer.apply([g], [variable]), jit_compile=jit)
        for g in grads:
            step(tf.constant(g))
        results.append(variable.numpy())
    assert np.abs(results[0] - start).max() > 0.03  # The steps moved the weights.
    np.testing.assert_allclose(results[1], results[0], atol=2e-6, rtol=0)
