"""The multi-label export: dense probabilities and 0/1 decisions at the saved thresholds,
label names in keras_bert_export.json, the same answers as the model's `predict`, and
tools/predict.py's lines.

Its op set is checked with every export kind (test_op_set.py, export_kinds.KINDS).
"""

import os

import numpy as np
import tensorflow as tf

from keras_bert.export.op_set import graph_ops
from keras_bert.export.predict import format_outputs, load_export, read_export_info
from keras_bert.export.predict import run_signature
from keras_bert.tasks import BertMultiLabelClassifier
from tests.export.export_kinds import MULTI_LABELS, MULTI_THRESHOLDS

TEXTS = ["the cat jumped over the dog", "a good movie ?", "x", "", "who did it ?"]


def _model_dir(export_dir):
    root = os.path.dirname(os.path.dirname(os.path.dirname(export_dir)))
    return os.path.join(root, "models", "multi_label")


def test_export_returns_dense_probabilities_and_decisions_with_label_names(three_exports):
    path = three_exports["multi_label"]
    info = read_export_info(path)
    assert info["module"] == "MultiLabelServingModule"
    assert info["label_names"] == MULTI_LABELS and info["thresholds"] == MULTI_THRESHOLDS
    for name in ("serving_default", "classify"):
        assert info["signatures"][name]["outputs"] == {
            "predicted": {"dtype": "int32", "shape": [None, 3]},
            "probabilities": {"dtype": "float32", "shape": [None, 3]}}
        assert info["signatures"][name]["inputs"] == {"text": {"dtype": "string",
                                                               "shape": [None]}}
    ops = graph_ops(path)
    assert {"Sigmoid", "GreaterEqual", "FastWordpieceTokenizeWithOffsets"} <= set(ops)

    loaded = load_export(path)
    outputs = run_signature(loaded, {"text": TEXTS})
    probabilities, predicted = outputs["probabilities"], outputs["predicted"]
    assert probabilities.shape == (5, 3) and probabilities.dtype == np.float32
    assert predicted.dtype == np.int32
    np.testing.assert_array_equal(predicted, probabilities >= np.float32(MULTI_THRESHOLDS))
    # The three thresholds differ, so which labels are on is the thresholds' doing.
    assert 0 < predicted.sum() < predicted.size
    empty = loaded.signatures["classify"](text=tf.constant([], tf.string))
    assert empty["probabilities"].shape == (0, 3) and empty["predicted"].shape == (0, 3)

    # Python `predict` on strings is the export's code: the same answers.
    model = BertMultiLabelClassifier.from_pretrained(_model_dir(path))
    assert model.thresholds == MULTI_THRESHOLDS and model.label_names == MULTI_LABELS
    answers = model.predict(TEXTS)
    assert sorted(answers) == ["predicted", "probabilities"]
    np.testing.assert_allclose(answers["probabilities"], probabilities, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(answers["predicted"], predicted)

    # tools/predict.py's lines name each predicted label with its probability ("-": none).
    lines = format_outputs({"text": TEXTS}, outputs, info["label_names"])
    assert len(lines) == len(TEXTS)
    for text, line, row, row_p in zip(TEXTS, lines, predicted, probabilities):
        chosen = [f"{MULTI_LABELS[c]}:{row_p[c]:.4f}" for c in np.flatnonzero(row)]
        assert line == f"{text}\t{' '.join(chosen) or '-'}"
