"""LiteRT export (--format tflite): text in, the SavedModel's answers out, no Flex ops."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.export import build_serving_module
from keras_bert.export.tflite import TFLITE_FILE, convert_module, load_tflite, run_tflite
from tests.conftest import run_tool
from tests.export.conftest import TRAIN_TEXTS
from tests.export.test_tflite_text import INVALID_UTF8, UNCLEAN

LITE_CUSTOM_OPS = ["FastWordpieceTokenizeWithOffsets", "TFText>ByteSplitWithOffsets",
                   "TFText>FastWordpieceDetokenize"]
# Unclean text too: U+FFFD, control and compatibility characters, invalid UTF-8
# (tests/export/test_tflite_text.py checks the ids).
TEXTS = [t for t, _ in TRAIN_TEXTS] + [
    "a good\ufffd movie", "an aw\ufffdful fi\x01lm", "the movie was not \ufb01ne",
    "a go\x90od film", "a bad m\u200bovie",
] + [t.encode("utf-8") for t in UNCLEAN] + INVALID_UTF8 + [
    "", "   ", "The FOX jumped over the dog!", "Café naïve, cats?", "x" * 120,
    "a good movie " * 30,  # Truncated to max_seq_length.
]


def test_tflite_classifier_answers_as_its_saved_model(classifier_export, tmp_path):
    status, out, err = run_tool("export", "--model", classifier_export["model_dir"],
                                "--output", tmp_path / "lite", "--format", "tflite")
    assert status == 0, err
    export_dir = str(tmp_path / "lite" / "1")
    assert sorted(os.listdir(export_dir)) == ["keras_bert_export.json", TFLITE_FILE]
    with open(os.path.join(export_dir, "keras_bert_export.json"), encoding="utf-8") as f:
        info = json.load(f)
    # The tokenizer's three tensorflow-text kernels are the only custom ops; no Flex.
    assert info["ops"]["custom"] == LITE_CUSTOM_OPS
    assert info["ops"]["flex"] == []
    assert {"FULLY_CONNECTED", "SOFTMAX", "GATHER"} <= set(info["ops"]["builtin"])
    assert f"custom {LITE_CUSTOM_OPS}, Flex none" in out
    assert info["signatures"] == {
        "serving_default": {"inputs": ["text"],
                            "outputs": ["label", "label_id", "probabilities"]},
        "embed": {"inputs": ["text"], "outputs": ["mean_embedding", "pooled_output"]}}
    assert info["size_bytes"] == os.path.getsize(os.path.join(export_dir, TFLITE_FILE))

    interpreter = load_tflite(export_dir)
    saved = tf.saved_model.load(classifier_export["export_dir"]).signatures
    lite = run_tflite(interpreter, TEXTS)
    ref = saved["serving_default"](text=tf.constant(TEXTS))
    np.testing.assert_array_equal(lite["label"], ref["label"].numpy())
    np.testing.assert_array_equal(lite["label_id"], ref["label_id"].numpy())
    assert np.abs(lite["probabilities"] - ref["probabilities"].numpy()).max() <= 1e-4
    # Not a constant answer: the fine-tuned fixture tells the labels apart.
    assert len(set(lite["label"].tolist())) >= 2
    lite = run_tflite(interpreter, TEXTS, "embed")
    ref = saved["embed"](text=tf.constant(TEXTS))
    for key in ("pooled_output", "mean_embedding"):
        assert lite[key].shape == (len(TEXTS), 16)
        assert np.abs(lite[key] - ref[key].numpy()).max() <= 1e-4, key
    # An empty batch.
    assert run_tflite(interpreter, [])["probabilities"].shape == (0, 3)


def test_tflite_refuses_what_it_cannot_convert(classifier_export):
    model = classifier_export["model"]
    with pytest.raises(ValueError, match="drop --pairs / --sub-batches"):
        convert_module(build_serving_module(model, pairs=True))
    with pytest.raises(ValueError, match="--jit-compile"):
        convert_module(build_serving_module(model, jit_compile=True))
    # (A fixed sequence_length converts: tests/test_one_text_path.py.)
