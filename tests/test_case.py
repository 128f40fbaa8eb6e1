"""Shared test helpers: layer round trips, .keras save/reload, SavedModel reload."""

import os

import keras
import numpy as np
import tensorflow as tf


def to_numpy(value):
    return keras.tree.map_structure(lambda t: np.asarray(keras.ops.convert_to_numpy(t)), value)


def assert_all_close(actual, expected, atol=1e-5):
    actual, expected = to_numpy(actual), to_numpy(expected)
    keras.tree.assert_same_structure(actual, expected)
    for a, e in zip(keras.tree.flatten(actual), keras.tree.flatten(expected)):
        np.testing.assert_allclose(a, e, atol=atol, rtol=0)


def _symbolic(value):
    return keras.tree.map_structure(
        lambda t: keras.Input(shape=t.shape[1:], dtype=str(keras.ops.convert_to_numpy(t).dtype)),
        value,
    )


def run_layer_test(cls, init_kwargs, inputs, expected_output_shape, tmp_path):
    """Checks the things every keras_bert layer must do.

    - eager call gives `expected_output_shape`;
    - get_config/from_config round trip: same config, and with copied weights
      the same output;
    - a symbolic call inside a functional model, saved as .keras and
      reloaded, gives the same output;
    - one fit step on that model changes the layer's trainable weights.

    Args:
        cls: the layer class.
        init_kwargs: constructor arguments.
        inputs: a tuple of positional call arguments (numpy arrays).
        expected_output_shape: tuple, shape of the (first) output.
        tmp_path: a pytest tmp_path.
    """
    layer = cls(**init_kwargs)
    output = layer(*inputs)
    first = keras.tree.flatten(output)[0]
    assert tuple(first.shape) == tuple(expected_output_shape)

    config = layer.get_config()
    clone = cls.from_config(config)
    assert clone.get_config() == config
    clone(*inputs)
    clone.set_weights(layer.get_weights())
    assert_all_close(clone(*inputs), output)

    symbolic = [_symbolic(x) for x in inputs]
    model = keras.Model(symbolic, cls.from_config(config)(*symbolic))
    model.layers[-1].set_weights(layer.get_weights())
    expected = model.predict(list(inputs), verbose=0)
    path = os.path.join(tmp_path, "layer_model.keras")
    model.save(path)
    reloaded = keras.models.load_model(path)
    assert_all_close(reloaded.predict(list(inputs), verbose=0), expected)

    if model.trainable_weights:
        before = [w.numpy().copy() for w in model.trainable_weights]
        model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
        target = keras.tree.map_structure(lambda t: np.ones(t.shape, "float32"), expected)
        model.fit(list(inputs), target, epochs=1, verbose=0)
        changed = [not np.array_equal(b, w.numpy()) for b, w in zip(before, model.trainable_weights)]
        assert any(changed), "one fit step changed no trainable weight"


def run_model_saving_test(model, inputs, tmp_path, atol=1e-6):
    """Saves `model` as .keras, reloads it and compares predictions."""
    expected = model.predict(inputs, verbose=0)
    path = os.path.join(tmp_path, "model.keras")
    model.save(path)
    reloaded = keras.models.load_model(path)
    assert type(reloaded) is type(model)
    assert_all_close(reloaded.predict(inputs, verbose=0), expected, atol=atol)
    return reloaded


def _flat_dict(outputs):
    # SavedModel signatures take a flat dict of tensors: a list output
    # such as encoder_outputs becomes encoder_outputs_0, encoder_outputs_1, ...
    if not isinstance(outputs, dict):
        return {"output": outputs}
    flat = {}
    for key, value in outputs.items():
        if isinstance(value, (list, tuple)):
            flat.update({f"{key}_{i}": v for i, v in enumerate(value)})
        else:
            flat[key] = value
    return flat


def run_saved_model_test(model, inputs, tmp_path, atol=1e-5):
    """Saves `model` in a SavedModel signature, reloads it with tf only, compares."""
    expected = _flat_dict(model.predict(inputs, verbose=0))
    names = sorted(inputs)
    specs = [tf.TensorSpec((None,) + inputs[k].shape[1:], inputs[k].dtype, name=k) for k in names]
    module = tf.Module()
    module.model = model
    module.serve = tf.function(
        lambda *args: _flat_dict(model(dict(zip(names, args)), training=False)),
        input_signature=specs,
    )
    path = os.path.join(tmp_path, "saved_model")
    tf.saved_model.save(module, path, signatures={"serving_default": module.serve})
    loaded = tf.saved_model.load(path)
    actual = loaded.signatures["serving_default"](**{k: tf.constant(v) for k, v in inputs.items()})
    assert_all_close(dict(actual), expected, atol=atol)
