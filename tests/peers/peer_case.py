"""keras-hub's shared BERT checks (keras_hub/src/tests/test_case.py), as keras_bert's API says them.

Each function mirrors one `TestCase.run_*_test` helper of keras-hub and
checks the same behaviour on keras_bert's classes. Where keras_bert's API
differs on purpose, the function checks keras_bert's way and says why
(docs/peers.md lists the differences):

- a preprocessor turns texts into features and nothing else: labels and
  sample weights go to `model.fit(x, y, sample_weight)`, and a second
  positional argument is the second text of a pair. The split-preprocessing
  pipeline is `ds.map(lambda x, y: (preprocessor(x), y))`;
- task models take an encoder as `encoder` (keras-hub: `backbone`), and the
  encoder is named after its class (`bert_encoder`, keras-hub's
  `bert_backbone`).
"""

import json

import keras
import numpy as np
import tensorflow as tf

from tests.test_case import assert_all_close


def to_lists(value):
    """Ragged or dense tensors (nested in dicts/tuples) as Python lists."""
    def convert(t):
        if isinstance(t, tf.RaggedTensor):
            return t.to_list()
        return np.asarray(keras.ops.convert_to_numpy(t)).tolist()
    return keras.tree.map_structure(convert, value)


def run_serialization_test(instance):
    """`run_serialization_test`: get_config -> from_config and serialize -> JSON ->
    deserialize give back the same config (as JSON text)."""
    config_json = json.dumps(instance.get_config(), sort_keys=True)
    revived = type(instance).from_config(instance.get_config())
    assert json.dumps(revived.get_config(), sort_keys=True) == config_json
    serialized = json.dumps(keras.saving.serialize_keras_object(instance), sort_keys=True)
    revived = keras.saving.deserialize_keras_object(json.loads(serialized))
    assert type(revived) is type(instance)
    assert json.dumps(revived.get_config(), sort_keys=True) == config_json
    return revived


def run_preprocessing_layer_test(layer, input_data, expected_output=None,
                                 expected_detokenize_output=None):
    """`run_preprocessing_layer_test`: config round trip, a direct call, a tokenizer's
    detokenize (back to the input unless told), and the same output through
    `tf.data` per example (then `ragged_batch`) and per batch."""
    run_serialization_test(layer)
    output = layer(input_data)
    if hasattr(layer, "detokenize"):
        expected = expected_detokenize_output or input_data
        detokenized = [t.decode("utf-8") for t in layer.detokenize(output).numpy()]
        assert detokenized == list(expected)
    dataset = tf.data.Dataset.from_tensor_slices(input_data)
    per_example = dataset.map(layer).ragged_batch(1000).get_single_element()
    assert to_lists(per_example) == to_lists(output)
    per_batch = dataset.batch(1000).map(layer).get_single_element()
    assert to_lists(per_batch) == to_lists(output)
    if expected_output is not None:
        assert to_lists(output) == expected_output
    return output


def run_preprocessor_test(cls, init_kwargs, input_data, expected_output):
    """`run_preprocessor_test`: as a preprocessing layer, then `sequence_length`
    set after construction changes the packed length (8 -> 17)."""
    layer = cls(**init_kwargs)
    run_serialization_test(layer)
    output = layer(input_data)
    assert to_lists(output) == expected_output
    dataset = tf.data.Dataset.from_tensor_slices(input_data)
    assert to_lists(dataset.batch(1000).map(layer).get_single_element()) == expected_output
    assert output["token_ids"].shape[-1] == layer.sequence_length
    layer.sequence_length = 17
    assert layer(input_data)["token_ids"].shape[-1] == 17


def run_backbone_test(cls, init_kwargs, input_data, expected_output_shape, predict=False):
    """`run_backbone_test`: config round trip, an eager call of the expected shapes,
    the token embedding alone, shorter sequences, the name from the class, mixed
    precision; with `predict`, Keras' compiled predict on arrays and a dataset."""
    backbone = cls(**init_kwargs)
    run_serialization_test(backbone)
    output = backbone(input_data)
    for key, shape in expected_output_shape.items():
        assert tuple(output[key].shape) == shape, key
    # keras-hub's `backbone.token_embedding`: keras_bert's embedding sum is one layer
    # (token, segment and position tables; segments default to 0).
    assert tuple(backbone.embeddings(np.zeros((2, 3), "int32")).shape) == (
        2, 3, init_kwargs["hidden_size"])
    for length in (2, 3, 4):
        short = backbone({k: v[:, :length] for k, v in input_data.items()})
        assert tuple(short["sequence_output"].shape[:2]) == (2, length)
    if predict:
        run_backbone_predict_test(backbone, input_data, output)
    assert backbone.name.startswith("bert_encoder")
    run_precision_test(cls, init_kwargs, input_data)
    return backbone


def run_backbone_predict_test(backbone, input_data, output=None):
    """`run_backbone_test`'s predict part: Keras' compiled predict on arrays and on a
    dataset gives the eager call's outputs."""
    if output is None:
        output = backbone(input_data)
    predicted = backbone.predict(input_data, verbose=0)
    batches = tf.data.Dataset.from_tensor_slices(input_data).batch(2)
    assert_all_close(backbone.predict(batches, verbose=0), predicted)
    assert_all_close(predicted["sequence_output"], output["sequence_output"])


def run_precision_test(cls, init_kwargs, input_data):
    """`run_precision_test`: under each policy, every float output and every layer
    computes in its compute dtype and keeps weights in its variable dtype."""
    for name in ("mixed_float16", "mixed_bfloat16", "bfloat16"):
        policy = keras.DTypePolicy(name)
        model = cls(**init_kwargs, dtype=policy)
        outputs = keras.tree.flatten(model(input_data))
        assert {keras.backend.standardize_dtype(t.dtype) for t in outputs} == {
            policy.compute_dtype}, name
        for weight in model.weights:
            assert keras.backend.standardize_dtype(weight.dtype) == policy.variable_dtype
        for layer in model._flatten_layers():
            if isinstance(layer, (keras.layers.Softmax, keras.layers.InputLayer)):
                continue
            assert (layer.compute_dtype, layer.variable_dtype) == (
                policy.compute_dtype, policy.variable_dtype), (name, layer.name)


def run_task_test(cls, init_kwargs, train_data, expected_output_shape, compile_kwargs=None,
                  batch_size=2, task=None):
    """`run_task_test`: predict on texts, on a dataset and with the preprocessing split
    off; fit on texts, on a dataset and split; all without a compile call, and
    `compile=False` leaves `fit` asking for one. `task`: `cls(**init_kwargs)` built
    already (a module's, whose traced functions its other tests reuse)."""
    task = task if task is not None else cls(**init_kwargs)
    if compile_kwargs:
        task.compile(**compile_kwargs)
    run_serialization_test(task)
    preprocessor = task.preprocessor
    x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(train_data)
    dataset = tf.data.Dataset.from_tensor_slices(train_data).batch(batch_size)
    # Features are the model's inputs (keras-hub: the preprocessor's tree matches
    # `task._inputs_struct`).
    assert sorted(preprocessor(x)) == sorted(task.input)

    output = task.predict(x, verbose=0)
    assert tuple(output.shape) == expected_output_shape
    assert_all_close(task.predict(dataset, verbose=0), output)
    split = dataset.map(lambda x, *labels: (preprocessor(x), *labels))
    task.preprocessor = None
    assert_all_close(task.predict(split, verbose=0), output)
    task.preprocessor = preprocessor

    task.fit(x, y, sample_weight=sample_weight, verbose=0)
    task.fit(dataset, verbose=0)
    task.preprocessor = None
    task.fit(split, verbose=0)
    task.preprocessor = preprocessor

    uncompiled = cls(**init_kwargs, compile=False)
    try:
        uncompiled.fit(dataset, verbose=0)
    except ValueError as error:
        assert "You must call `compile" in str(error)
    else:
        raise AssertionError("fit with compile=False did not ask for compile()")
    return task


def run_litert_export_test(model, texts, atol=1e-4):
    """`run_litert_export_test`: the LiteRT model has a serving_default signature
    with inputs and outputs and answers as the model does (keras-hub compares
    LiteRT with the Keras call; here the export takes raw text, so its answers are
    compared with `predict` on the same text)."""
    from keras_bert.export import build_serving_module
    from keras_bert.export.tflite import convert_module, run_tflite
    from keras_bert.export.tflite_runtime import litert_interpreter

    flatbuffer = convert_module(build_serving_module(model))
    assert len(flatbuffer) > 0
    interpreter = litert_interpreter(flatbuffer)
    signature = interpreter.get_signature_list()["serving_default"]
    assert signature["inputs"] == ["text"] and signature["outputs"]
    return run_tflite(interpreter, texts), model.predict(texts, verbose=0)
