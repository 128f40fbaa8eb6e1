"""int8 exports (--quantize int8): Keras' int8 Dense kernels, the op-set guard still holds."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.export import export_model
from keras_bert.export.op_set import disallowed_ops
from tests.export.conftest import TRAIN_TEXTS

TEXTS = [t for t, _ in TRAIN_TEXTS] + ["", "Café naïve, cats?", "a good movie " * 30]


@pytest.mark.slow  # an export and a core-op process: ~10 s of CPU; int8 is opt-in
def test_int8_export_answers_as_float32_with_core_ops(classifier_export, tmp_path):
    path = export_model(classifier_export["model_dir"], str(tmp_path / "int8"), quantize="int8",
                        warmup=False)
    with open(os.path.join(path, "keras_bert_export.json"), encoding="utf-8") as f:
        info = json.load(f)
    assert info["quantize"] == "int8"
    variables = tf.saved_model.load(path).model_variables
    int8 = [v for v in variables if v.dtype == tf.int8]
    # Every encoder block's four Dense kernels (2 blocks), the pooler and the head.
    assert len(int8) >= 8, [v.name for v in int8]
    # Core TensorFlow ops and the one allowlisted tensorflow-text op, as float32.
    assert disallowed_ops([path]) == {}

    float32 = tf.saved_model.load(classifier_export["export_dir"]).signatures["serving_default"]
    quantized = tf.saved_model.load(path).signatures["serving_default"]
    ref, out = (f(text=tf.constant(TEXTS)) for f in (float32, quantized))
    np.testing.assert_array_equal(out["label"].numpy(), ref["label"].numpy())
    diff = np.abs(out["probabilities"].numpy() - ref["probabilities"].numpy()).max()
    assert 0 < diff <= 0.01, diff  # Quantized (not the float graph), and close.


def test_int8_needs_a_model_directory(classifier_export, tmp_path):
    with pytest.raises(ValueError, match="give its model directory"):
        export_model(classifier_export["model"], str(tmp_path / "x"), quantize="int8")
    with pytest.raises(ValueError, match="drop --quantize for --format tflite"):
        export_model(classifier_export["model_dir"], str(tmp_path / "x"), quantize="int8",
                     format="tflite")
    assert not os.path.exists(tmp_path / "x")
