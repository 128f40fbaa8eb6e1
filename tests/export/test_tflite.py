"""LiteRT export (--format tflite): text in, the SavedModel's answers out, no Flex ops;
run by the LiteRT interpreter (ai-edge-litert), tools/predict.py, refused by serving_config."""

import json
import os
import re
import sys
import warnings

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.export import build_serving_module, litert_interpreter
from keras_bert.export.predict import format_outputs, latest_version, load_export, run_signature
from keras_bert.export.tflite import TFLITE_FILE, convert_module, run_tflite
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


# What TensorFlow 2.21's tf.lite.Interpreter warns on construction.
DEPRECATED = "tf.lite.Interpreter is deprecated"


@pytest.fixture(scope="module")
def lite_export(classifier_export, tmp_path_factory):
    """The classifier fixture's LiteRT export, made once by tools/export.py: its
    exports/NAME base, version folder, the tool's stdout and its warnings."""
    base = tmp_path_factory.mktemp("lite") / "sentiment-lite"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        status, out, err = run_tool("export", "--model", classifier_export["model_dir"],
                                    "--output", base, "--format", "tflite")
    assert status == 0, err
    return {"base": str(base), "version": str(base / "1"), "out": out,
            "warnings": [str(w.message) for w in caught]}


@pytest.fixture(scope="module")
def saved_model(classifier_export):
    """The classifier fixture's SavedModel export, loaded once (the reference)."""
    return load_export(classifier_export["export_dir"])


def test_tflite_classifier_answers_as_its_saved_model(lite_export, saved_model):
    export_dir, out = lite_export["version"], lite_export["out"]
    assert not [w for w in lite_export["warnings"] if DEPRECATED in w]
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

    interpreter = litert_interpreter(export_dir)
    saved = saved_model.signatures
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


def test_litert_interpreter_registers_the_text_kernels_without_warnings(
        lite_export, saved_model):
    from ai_edge_litert import interpreter as litert

    path = os.path.join(lite_export["version"], TFLITE_FILE)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        interpreter = litert_interpreter(path, num_threads=1)
        probabilities = run_tflite(interpreter, TEXTS[:6])["probabilities"]
    assert isinstance(interpreter, litert.InterpreterWithCustomOps)
    assert not [w for w in caught if "deprecated" in str(w.message)]
    expected = saved_model.signatures["serving_default"](text=tf.constant(TEXTS[:6]))
    np.testing.assert_allclose(probabilities, expected["probabilities"].numpy(), atol=1e-4)
    # The registration is what makes it run: LiteRT alone lacks the text kernels.
    bare = litert.Interpreter(model_path=path)
    with pytest.raises(RuntimeError, match="unresolved custom op: TFText>ByteSplitWithOffsets"):
        bare.allocate_tensors()


def test_litert_interpreter_without_ai_edge_litert_names_the_package(lite_export, monkeypatch):
    monkeypatch.setitem(sys.modules, "ai_edge_litert", None)  # As if not installed.
    with pytest.raises(ImportError, match="pip install ai-edge-litert"):
        litert_interpreter(lite_export["version"])


def test_litert_interpreter_on_a_wrong_path_says_what_it_expects(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"No LiteRT model at .*model\.tflite"):
        litert_interpreter(str(tmp_path))


NUMBER = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?")


def assert_same_lines(lite, saved, atol=2e-4):
    """Lines of tools/predict.py equal but for their numbers, which agree within `atol`."""
    assert len(lite) == len(saved)
    for a, b in zip(lite, saved):
        assert NUMBER.sub("#", a) == NUMBER.sub("#", b)
        np.testing.assert_allclose([float(x) for x in NUMBER.findall(a)],
                                   [float(x) for x in NUMBER.findall(b)], atol=atol)


def predict(*args):
    status, out, err = run_tool("predict", *args)
    assert status == 0, err
    assert err == ""  # No start-up notice (LiteRT's XNNPACK line) at default verbosity.
    return out.splitlines()


def saved_model_lines(loaded, texts, signature="serving_default"):
    """What tools/predict.py prints for a SavedModel (its format_outputs, this process's load)."""
    inputs = {"text": texts}
    return format_outputs(inputs, run_signature(loaded, inputs, signature))


def test_predict_tool_runs_a_litert_export_as_its_saved_model(
        lite_export, saved_model, tmp_path):
    texts = ["a good movie", "an awful film", "the cat", "", "a good movie " * 30]
    expected = saved_model_lines(saved_model, texts)
    assert len(expected) == len(texts) and len({line.split("\t")[1] for line in expected}) >= 2
    version = lite_export["version"]
    for model in (lite_export["base"], version, os.path.join(version, TFLITE_FILE)):
        assert_same_lines(predict("--model", model, *texts), expected)
    # Batches of 2 sorted by length, rows back in input order; the embed signature.
    path = tmp_path / "texts.txt"
    path.write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    assert_same_lines(predict("--model", lite_export["base"], "--input", path,
                              "--batch-size", "2"), expected)
    assert_same_lines(predict("--model", lite_export["base"], "--signature", "embed", *texts),
                      saved_model_lines(saved_model, texts, "embed"))
    # The library's own route: load_export gives the LiteRT export the same calls.
    assert_same_lines(saved_model_lines(load_export(lite_export["base"]), texts), expected)


def test_predict_tool_on_a_litert_export_refuses_what_it_lacks(lite_export, tmp_path):
    status, _, err = run_tool("predict", "--model", lite_export["base"], "a", "--text-b", "b")
    assert status == 1 and "takes one text per example" in err
    status, _, err = run_tool("predict", "--model", lite_export["base"], "a",
                              "--signature", "similarity")
    assert status == 1 and "['embed', 'serving_default']" in err
    broken = tmp_path / "broken.tflite"
    broken.write_bytes(b"not a flatbuffer")
    status, _, err = run_tool("predict", "--model", broken, "a")
    assert status == 1 and f"Cannot load the LiteRT export {broken}" in err


def test_serving_config_refuses_a_litert_export(classifier_export, lite_export, tmp_path):
    saved = os.path.dirname(classifier_export["export_dir"])
    for models in ([lite_export["base"]], [saved, lite_export["base"]],
                   [lite_export["version"]]):
        args = [a for model in models for a in ("--model", model)]
        status, out, err = run_tool("serving_config", *args, "--output", tmp_path / "out")
        assert status == 1, out
        assert f"{lite_export['version']} is a LiteRT export" in err
        assert "TF Serving serves SavedModels only" in err and "tools/predict.py" in err
        assert not (tmp_path / "out").exists()  # Refused before any file is written.
    # A SavedModel-only reader names the format too (tools/check_serving_runtime.py).
    with pytest.raises(ValueError, match="is a LiteRT export .* reads SavedModels only"):
        latest_version(lite_export["base"])
