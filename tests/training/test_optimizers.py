import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.models import BertEncoder, BertPretrainer
from keras_bert.training import WEIGHT_DECAY_EXCLUDE, AdamW, Lamb, Trainer, create_optimizer
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


@pytest.mark.slow  # Tens of seconds of the default tier's time (round 10).
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
def test_keras_epsilon_form_matches_keras_adamw(jit, amsgrad):
    rng = np.random.default_rng(0)
    start = rng.normal(size=(5, 7)).astype("float32")
    grads = [rng.normal(size=(5, 7)).astype("float32") for _ in range(6)]
    results = []
    for cls, form in ((keras.optimizers.AdamW, {}), (AdamW, {"epsilon_form": "keras"})):
        variable = keras.Variable(start)
        optimizer = cls(learning_rate=0.01, weight_decay=0.1, epsilon=1e-6, amsgrad=amsgrad,
                        **form)
        step = tf.function(lambda g: optimizer.apply([g], [variable]), jit_compile=jit)
        for g in grads:
            step(tf.constant(g))
        results.append(variable.numpy())
    assert np.abs(results[0] - start).max() > 0.03  # The steps moved the weights.
    np.testing.assert_allclose(results[1], results[0], atol=2e-6, rtol=0)


def _torch_adamw_steps(start, grads, lr_lambda, lr, epsilon, weight_decay, amsgrad=False):
    """Parameters after torch.optim.AdamW steps; the bias and gamma are not decayed."""
    torch = pytest.importorskip("torch")
    params = {name: torch.tensor(value, requires_grad=True) for name, value in start.items()}
    decayed = [params["kernel"]]
    exempt = [params["bias"], params["gamma"]]
    optimizer = torch.optim.AdamW(
        [{"params": decayed, "weight_decay": weight_decay},
         {"params": exempt, "weight_decay": 0.0}],
        lr=lr, betas=(0.9, 0.999), eps=epsilon, amsgrad=amsgrad)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)
    for step_grads in grads:
        for name, param in params.items():
            param.grad = torch.tensor(step_grads[name])
        optimizer.step()
        scheduler.step()
    return {name: param.detach().numpy() for name, param in params.items()}


def _adamw_inputs(steps=5, seed=0):
    # Weights of magnitude 0.5..2 (so that the decay, 1% of a step, shows);
    # gradients of magnitude 1e-6..1e-3 along the last axis (where epsilon's
    # placement matters most), each weight's of one sign so its steps add up.
    rng = np.random.default_rng(seed)
    shapes = {"kernel": (4, 32), "bias": (32,), "gamma": (32,)}
    start = {name: (rng.choice([-1, 1], shape) * rng.uniform(0.5, 2, shape)).astype("float32")
             for name, shape in shapes.items()}
    signs = {name: rng.choice([-1, 1], shape) for name, shape in shapes.items()}
    scale = np.logspace(-6, -3, 32)
    grads = [{name: (signs[name] * rng.uniform(0.5, 1.5, shape) * scale).astype("float32")
              for name, shape in shapes.items()} for _ in range(steps)]
    return start, grads


def _keras_steps(optimizer, start, grads, jit):
    variables = {name: keras.Variable(value, name=name) for name, value in start.items()}
    ordered = list(variables.values())
    optimizer.build(ordered)
    step = tf.function(lambda g: optimizer.apply(g, ordered), jit_compile=jit)
    for step_grads in grads:
        step([tf.constant(step_grads[name]) for name in variables])
    return {name: v.numpy() for name, v in variables.items()}


@pytest.mark.parametrize("jit", [False, True])
def test_create_optimizer_steps_like_torch_adamw(jit):
    start, grads = _adamw_inputs()
    lr, total, warmup = 1e-2, 5, 2
    # The same schedule on the torch side: LinearWarmupLinearDecay(lr, 5, 2).
    def lr_lambda(s):
        return (s + 1) / warmup if s < warmup else max(0.0, (total - s) / (total - warmup))

    optimizer = create_optimizer(lr, num_train_steps=total, warmup_steps=warmup, epsilon=1e-8,
                                 weight_decay=0.01)
    expected = _torch_adamw_steps(start, grads, lr_lambda, lr, epsilon=1e-8, weight_decay=0.01)
    ours = _keras_steps(optimizer, start, grads, jit)
    for name in start:
        step_torch, step_ours = expected[name] - start[name], ours[name] - start[name]
        assert np.abs(step_torch).min() > 1e-2, name  # Every weight moved.
        np.testing.assert_allclose(step_ours, step_torch, rtol=1e-4, atol=0, err_msg=name)
    # The test tells the forms apart: Keras' epsilon (on sqrt(v)) damps the
    # steps of the small-gradient weights by tens of percent, and the decay
    # (1% of a step) is visible at this tolerance.
    config = optimizer.get_config()
    config["epsilon_form"] = "keras"
    keras_form = _keras_steps(AdamW.from_config(config), start, grads, jit)
    assert not np.allclose(keras_form["kernel"] - start["kernel"],
                           expected["kernel"] - start["kernel"], rtol=1e-2, atol=0)
    undecayed = _torch_adamw_steps(start, grads, lr_lambda, lr, epsilon=1e-8, weight_decay=0.0)
    assert not np.allclose(undecayed["kernel"] - start["kernel"],
                           expected["kernel"] - start["kernel"], rtol=1e-3, atol=0)


@pytest.mark.parametrize("jit", [False, True])
def test_amsgrad_steps_like_torch_adamw(jit):
    start, grads = _adamw_inputs(seed=1)
    grads = grads[:1] + [{k: g * 0.1 for k, g in grads[1].items()}] + grads[2:]  # v decreases.
    expected = _torch_adamw_steps(start, grads, lambda s: 1.0, 1e-2, epsilon=1e-8,
                                  weight_decay=0.01, amsgrad=True)
    optimizer = AdamW(learning_rate=1e-2, weight_decay=0.01, epsilon=1e-8, amsgrad=True,
                      weight_decay_exclude=WEIGHT_DECAY_EXCLUDE)
    ours = _keras_steps(optimizer, start, grads, jit)
    for name in start:
        np.testing.assert_allclose(ours[name] - start[name], expected[name] - start[name],
                                   rtol=1e-4, atol=0, err_msg=name)


def test_config_round_trip_keeps_the_torch_form_exclusions_and_multipliers():
    optimizer = create_optimizer(1e-3, num_train_steps=10, lr_multipliers={"a/kernel": 0.5})
    clone = AdamW.from_config(optimizer.get_config())
    assert clone.epsilon_form == "torch"
    assert clone.lr_multipliers == {"a/kernel": 0.5}
    assert clone.weight_decay_exclude == WEIGHT_DECAY_EXCLUDE
    assert not clone._use_weight_decay(keras.Variable(np.zeros(2), name="bias"))
    assert clone._use_weight_decay(keras.Variable(np.zeros(2), name="kernel"))
    with pytest.raises(ValueError, match="epsilon_form='pytorch'"):
        AdamW(epsilon_form="pytorch")
    with pytest.raises(ValueError, match="'a/kernel': 0"):
        AdamW(lr_multipliers={"a/kernel": 0})


def test_lamb_adds_epsilon_to_the_bias_corrected_sqrt_v():
    # LAMB (paper, tensorflow-addons) puts epsilon where PyTorch's AdamW
    # does; Keras' Lamb already does, so `Lamb` keeps its update.
    start = np.array([[1.0, -2.0, 0.5]], "float32")
    grad = np.array([[1e-6, -1e-5, 1e-4]], "float32")
    variable = keras.Variable(start)
    Lamb(learning_rate=0.1, epsilon=1e-6).apply([tf.constant(grad)], [variable])
    update = grad / (np.abs(grad) + 1e-6)  # Step 1: m_hat = g, sqrt(v_hat) = |g|.
    ratio = np.linalg.norm(start) / np.linalg.norm(update)
    np.testing.assert_allclose(variable.numpy(), start - 0.1 * ratio * update, rtol=1e-6)
