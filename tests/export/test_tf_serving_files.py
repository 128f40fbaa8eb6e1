"""TF Serving's files: warmup requests in every export, models.config, batching_parameters.txt."""

import importlib.util
import os

import numpy as np
import pytest
import tensorflow as tf
from google.protobuf import descriptor_pb2, text_format, wrappers_pb2
from tensorflow_serving.apis import prediction_log_pb2
from tensorflow_serving.config import model_server_config_pb2

from keras_bert.export import export_model
from keras_bert.export.predict import load_export
from keras_bert.export.tf_serving import (
    ALLOWED_BATCH_SIZES,
    WARMUP_FILE,
    length_buckets,
    read_warmup_requests,
)
from tests.export.conftest import proto_message_class, two_versions
from tests.export.export_kinds import KINDS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _tool(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "tools", name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _model_dir(export_dir, kind):
    root = os.path.dirname(os.path.dirname(os.path.dirname(export_dir)))
    return os.path.join(root, "models", kind)


def _run_warmup(export_dir):
    """Each warmup request through its signature: [(inputs, outputs, preprocess outputs)]."""
    loaded = load_export(export_dir)
    runs = []
    for log in read_warmup_requests(export_dir):
        assert log.WhichOneof("log_type") == "predict_log"
        request = log.predict_log.request
        assert request.model_spec.signature_name == "serving_default"
        inputs = {k: tf.constant(tf.make_ndarray(v)) for k, v in request.inputs.items()}
        outputs = loaded.signatures["serving_default"](**inputs)
        packed = loaded.signatures["preprocess"](**inputs)
        runs.append((inputs, outputs, packed))
    return runs


@pytest.mark.slow
def test_every_export_kind_carries_warmup_requests_that_run(three_exports):
    expected_inputs = {"classifier": ["text"], "tagger": ["text"], "qa": ["context", "question"],
                       "multi_label": ["text"], "masked_lm": ["text"]}
    for kind in KINDS:
        path = three_exports[kind]
        # A TFRecord of PredictionLog protos, where TF Serving looks for it.
        raw = next(iter(tf.data.TFRecordDataset(os.path.join(path, WARMUP_FILE)))).numpy()
        prediction_log_pb2.PredictionLog.FromString(raw)
        runs = _run_warmup(path)
        max_length = 20 if kind == "qa" else 24
        buckets = length_buckets(max_length)
        assert buckets == [8, max_length]
        # Not an XLA export: each bucket at batch 1, the longest at the largest batch.
        assert len(runs) == len(buckets) + 1, kind
        shapes = []
        for inputs, outputs, packed in runs:
            assert sorted(inputs) == expected_inputs[kind]
            batch = int(next(iter(inputs.values())).shape[0])
            for value in outputs.values():
                assert value.shape[0] == batch, kind
            shapes.append(tuple(packed["token_ids"].shape))
        if kind != "qa":  # QA: [windows, length]; the others [texts, length].
            assert shapes == [(1, 8), (1, max_length), (max(ALLOWED_BATCH_SIZES), max_length)]
        else:
            assert [s[1] for s in shapes] == [8, max_length, max_length]
        if kind == "multi_label":  # Dense numbers only: probabilities and 0/1 decisions.
            assert outputs["predicted"].dtype == tf.int32
        else:
            text_output = {"qa": "answer", "masked_lm": "tokens"}.get(kind, "label")
            assert outputs[text_output].dtype == tf.string


def test_xla_export_warms_every_batch_size_and_length_bucket(three_exports, tmp_path):
    path = export_model(_model_dir(three_exports["classifier"], "classifier"),
                        str(tmp_path / "sentiment_xla"), jit_compile=True, pad_to_multiple_of=8)
    logs = read_warmup_requests(path)
    loaded = load_export(path)
    shapes = set()
    for log in logs:
        inputs = {k: tf.make_ndarray(v) for k, v in log.predict_log.request.inputs.items()}
        shapes.add(tuple(loaded.signatures["preprocess"](text=inputs["text"])["token_ids"].shape))
    # Batch sizes TF Serving pads to x the lengths the export pads to: every shape XLA sees.
    assert shapes == {(b, s) for b in ALLOWED_BATCH_SIZES for s in (8, 16, 24)}
    assert len(logs) == len(shapes)
    # And the XLA signature answers them (one small and the largest shape).
    for log in (logs[0], logs[-1]):
        text = tf.make_ndarray(log.predict_log.request.inputs["text"])
        probabilities = loaded.signatures["serving_default"](text=text)["probabilities"]
        assert probabilities.shape == (len(text), 3)
        np.testing.assert_allclose(tf.reduce_sum(probabilities, -1), 1.0, atol=1e-5)


def _batching_parameters_class():
    """BatchingParameters from TF Serving's session_bundle_config.proto (the
    fields written here; tensorflow-serving-api does not ship this proto)."""
    file = descriptor_pb2.FileDescriptorProto(
        name="keras_bert_test_batching.proto", package="tensorflow.serving.test",
        syntax="proto3", dependency=["google/protobuf/wrappers.proto"])
    message = file.message_type.add(name="BatchingParameters")
    field = descriptor_pb2.FieldDescriptorProto
    for number, name in enumerate(("max_batch_size", "batch_timeout_micros",
                                   "max_enqueued_batches", "num_batch_threads"), start=1):
        message.field.add(name=name, number=number, type=field.TYPE_MESSAGE,
                          type_name=".google.protobuf.Int64Value", label=field.LABEL_OPTIONAL)
    message.field.add(name="thread_pool_name", number=5, type=field.TYPE_MESSAGE,
                      type_name=".google.protobuf.StringValue", label=field.LABEL_OPTIONAL)
    message.field.add(name="allowed_batch_sizes", number=6, type=field.TYPE_INT64,
                      label=field.LABEL_REPEATED)
    message.field.add(name="pad_variable_length_inputs", number=7, type=field.TYPE_BOOL,
                      label=field.LABEL_OPTIONAL)
    return proto_message_class(file, "tensorflow.serving.test.BatchingParameters",
                               dependencies=[wrappers_pb2])


def test_serving_config_tool_writes_models_config_and_batching(three_exports, tmp_path):
    sentiment = two_versions(three_exports["classifier"], tmp_path / "exports" / "sentiment")
    squad = os.path.dirname(three_exports["qa"])
    out = tmp_path / "serving"
    serving_config = _tool("serving_config")
    assert serving_config.main(["--model", str(sentiment), "--model", squad,
                                "--output", str(out)]) == 0

    config = text_format.Parse((out / "models.config").read_text(),
                               model_server_config_pb2.ModelServerConfig())
    models = {c.name: c for c in config.model_config_list.config}
    assert sorted(models) == ["qa", "sentiment"]
    assert models["sentiment"].base_path == "/models/sentiment"
    assert models["sentiment"].model_platform == "tensorflow"
    assert list(models["sentiment"].model_version_policy.specific.versions) == [1, 2]
    assert dict(models["sentiment"].version_labels) == {"stable": 1, "canary": 2}
    assert list(models["qa"].model_version_policy.specific.versions) == [1]
    assert dict(models["qa"].version_labels) == {"stable": 1}

    text = (out / "batching_parameters.txt").read_text()
    params = text_format.Parse(text, _batching_parameters_class()())
    assert list(params.allowed_batch_sizes) == list(ALLOWED_BATCH_SIZES)
    assert params.max_batch_size.value == ALLOWED_BATCH_SIZES[-1]
    assert params.batch_timeout_micros.value == 2000
    assert params.num_batch_threads.value >= 1
    assert ("sentiment: its batch's longest text, 2 to 24 (warmed up at lengths [8, 24])"
            in text)
    assert "qa: its batch's longest text, 2 to 20" in text

    # No versions: the error names the directory and the way out.
    assert serving_config.main(["--model", str(tmp_path), "--output", str(out)]) == 1
    with pytest.raises(ValueError, match="serve_versions"):
        from keras_bert.export.tf_serving import models_config
        models_config({"x": ("/models/x", [1])}, serve_versions=0)
