"""int8 exports (--quantize int8): oneDNN's int8 matmul in the encoder (SavedModel), LiteRT's
dynamic-range int8 (--format tflite); both answer as their float32 export."""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.export import build_serving_module, export_model, litert_interpreter
from keras_bert.export.int8 import _Int8Dense, encoder_dense_layers, read_calibration_texts
from keras_bert.export.tflite import convert_module, run_tflite
from keras_bert.models import BertEncoder
from keras_bert.tasks import BertClassifier
from tests.conftest import EXPORT_VOCAB as VOCAB
from tests.conftest import built_once, clean_result, tiny_config
from tests.export.conftest import TRAIN_TEXTS, write_vocab

TEXTS = [t for t, _ in TRAIN_TEXTS] + ["", "Café naïve, cats?", "a good movie " * 30]
CALIBRATION = [t for t, _ in TRAIN_TEXTS]


def quantized(values, lo, hi, levels):
    """numpy: `values` rounded to `levels` + 1 steps of [lo, hi] (clamped)."""
    step = (hi - lo) / levels
    return np.clip(np.round((values - lo) / step), 0, levels) * step + lo


@pytest.mark.parametrize("input_range", [(-1.5, 2.0), None])
def test_int8_dense_is_the_float_product_of_its_quantized_operands(input_range):
    rng = np.random.default_rng(0)
    layer = tf.keras.layers.Dense(24, activation="relu")
    x = rng.normal(size=(7, 16)).astype(np.float32) * 1.5
    x[0, 0], x[1, 1] = 4.0, -3.0  # outside the calibrated range: clamped
    layer.build((None, 16))
    layer.bias.assign(rng.normal(size=24).astype(np.float32))
    out = _Int8Dense(layer, input_range)(tf.constant(x)).numpy()

    kernel, bias = layer.kernel.numpy(), layer.bias.numpy()
    scale = np.abs(kernel).max(axis=0) / 127  # per output column
    weights = np.round(kernel / scale) * scale
    lo, hi = input_range or (min(x.min(), 0), max(x.max(), 0))
    expected = np.maximum(quantized(x, lo, hi, 255) @ weights + bias, 0)
    np.testing.assert_allclose(out, expected, atol=2e-5 * np.abs(expected).max(), rtol=0)
    assert np.abs(out - np.maximum(x @ kernel + bias, 0)).max() > 1e-3  # quantized


def build_int8_exports(root, model_dir):
    """int8 exports of `model_dir` under `root`: "calibrated" on a CSV of the training texts,
    "dynamic" with per-call ranges."""
    calibration = os.path.join(root, "calibration.csv")
    with open(calibration, "w", encoding="utf-8") as f:
        f.write("label,text\n" + "".join(f"{y},{t}\n" for t, y in TRAIN_TEXTS))
    return {"calibrated": export_model(model_dir, os.path.join(root, "calibrated"), warmup=False,
                                       quantize="int8", calibration_texts=calibration),
            "dynamic": export_model(model_dir, os.path.join(root, "dynamic"), warmup=False,
                                    quantize="int8")}


def built_int8_exports(request):
    """The int8 exports of the session's classifier, built once per run (`built_once`): the
    tests below and the clean process (`clean_args`) read the same ones."""
    model_dir = request.getfixturevalue("classifier_export")["model_dir"]
    return built_once(request.getfixturevalue("tmp_path_factory"), "int8",
                      lambda root: build_int8_exports(root, model_dir))


@pytest.fixture(scope="module")
def int8_exports(request):
    return built_int8_exports(request)


@pytest.mark.parametrize("kind", ["calibrated", "dynamic"])
def test_int8_export_answers_as_float32(classifier_export, int8_exports, kind):
    path = int8_exports[kind]
    with open(os.path.join(path, "keras_bert_export.json"), encoding="utf-8") as f:
        info = json.load(f)
    assert info["quantize"] == "int8"
    assert info["int8"]["ranges"] == kind and info["int8"]["layers"] == 8  # 2 blocks x 4
    loaded = tf.saved_model.load(path)
    kernels = [v for v in loaded.int8_variables if v.dtype == tf.int8]
    assert len(kernels) == 8
    # The float kernels they replace are not saved; the head's and the pooler's are.
    names = {v.name.split("/")[-2] for v in loaded.model_variables if "kernel" in v.name}
    assert "qkv_dense" not in names and "output_dense" not in names, names

    float32 = tf.saved_model.load(classifier_export["export_dir"]).signatures["serving_default"]
    ref = float32(text=tf.constant(TEXTS))
    out = loaded.signatures["serving_default"](text=tf.constant(TEXTS))
    diff = np.abs(out["probabilities"].numpy() - ref["probabilities"].numpy()).max()
    assert 0 < diff <= 0.02, diff  # Quantized (not the float graph), and close.
    same = (out["label"].numpy() == ref["label"].numpy()).mean()
    assert same >= 0.9, same


def test_calibration_file_errors(classifier_export, tmp_path):
    with pytest.raises(FileNotFoundError, match=r"missing.txt .*--calibration-data FILE"):
        read_calibration_texts(str(tmp_path / "missing.txt"))
    (tmp_path / "blank.txt").write_text("\n  \n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"blank.txt holds no text"):
        read_calibration_texts(str(tmp_path / "blank.txt"))
    (tmp_path / "table.csv").write_text("label,sentence\n1,a good movie\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"no 'text' column \(its header: \['label', 'sentence'\]"):
        read_calibration_texts(str(tmp_path / "table.csv"))
    (tmp_path / "lines.txt").write_text("a good movie\r\n\nthe cat\n", encoding="utf-8")
    assert read_calibration_texts(str(tmp_path / "lines.txt")) == ["a good movie", "the cat"]
    model_dir = classifier_export["model_dir"]
    with pytest.raises(FileNotFoundError, match="calibration texts"):  # before any work
        export_model(model_dir, str(tmp_path / "x"), quantize="int8",
                     calibration_texts=str(tmp_path / "missing.txt"))
    with pytest.raises(ValueError, match="add quantize='int8'"):
        export_model(model_dir, str(tmp_path / "x"), calibration_texts=CALIBRATION)
    assert not os.path.exists(tmp_path / "x")


def test_int8_refusals(classifier_export, tmp_path):
    with pytest.raises(ValueError, match="give its model directory"):
        export_model(classifier_export["model"], str(tmp_path / "x"), quantize="int8")
    with pytest.raises(ValueError, match=r"drop calibration_texts \(--calibration-data\)"):
        export_model(classifier_export["model_dir"], str(tmp_path / "x"), quantize="int8",
                     format="tflite", calibration_texts=CALIBRATION)
    with pytest.raises(ValueError, match=r"quantizes a float32 model; drop dtype="):
        export_model(classifier_export["model_dir"], str(tmp_path / "x"), quantize="int8",
                     dtype="mixed_bfloat16")
    assert not os.path.exists(tmp_path / "x")


@pytest.mark.slow  # a LiteRT conversion (~6 s quiet); fast sibling: the SavedModel's above
def test_litert_int8_answers_as_the_float_graph(tmp_path):
    # Wide enough that the converter quantizes the encoder's matrices (it leaves
    # tensors of under 1,024 values float); seeded, untrained.
    keras.utils.set_random_seed(0)
    encoder = BertEncoder(**tiny_config(vocab_size=len(VOCAB), max_position_embeddings=32,
                                        hidden_size=64, intermediate_size=128).to_dict())
    module = build_serving_module(BertClassifier(encoder, num_classes=3),
                                  vocab_file=write_vocab(tmp_path), max_seq_length=24)
    interpreter = litert_interpreter(convert_module(module, quantize="int8"))
    out = run_tflite(interpreter, TEXTS)
    # The float graph it was converted from (a float32 LiteRT export answers as it to 1e-4:
    # tests/export/test_tflite.py).
    ref = {k: v.numpy() for k, v in module.signatures()["serving_default"](
        text=tf.constant(TEXTS)).items()}
    diff = np.abs(out["probabilities"] - ref["probabilities"]).max()
    assert 0 < diff <= 0.02, diff
    assert (out["label"] == ref["label"]).mean() >= 0.9
    # int8 weights: every value of the encoder's matrices is an int8 constant of the model
    # (a float32 conversion has none; the pooler and the token embedding are int8 too).
    values = sum(int(np.prod(layer.kernel.shape)) for layer in encoder_dense_layers(encoder))
    int8 = sum(int(np.prod(t["shape"])) for t in interpreter.get_tensor_details()
               if t["dtype"] == np.int8)
    assert values <= int8 <= 1.2 * values, (int8, values)


# The clean process (tests/conftest.py): the int8 export where only tensorflow and
# tensorflow-text's tokenizer kernels load.
CLEAN_CHECKS = """
serve = tf.saved_model.load(ARGS["export_dir"]).signatures["serving_default"]
result["probabilities"] = serve(text=tf.constant(ARGS["texts"]))["probabilities"].numpy().tolist()
"""


def clean_args(request):
    """ARGS of CLEAN_CHECKS: the calibrated int8 export of the session's classifier."""
    path = built_int8_exports(request)["calibrated"]
    return dict(export_dir=path, texts=TEXTS, export_dirs=[path])


def test_int8_export_loads_in_a_clean_process(clean_process):
    clean = clean_result(clean_process, "int8")
    assert clean["python_modules"] == []
    assert clean["non_core_ops"] == {
        clean["args"]["export_dir"]: ["FastWordpieceTokenizeWithOffsets"]}
    expected = tf.saved_model.load(clean["args"]["export_dir"]).signatures["serving_default"](
        text=tf.constant(TEXTS))["probabilities"].numpy()
    np.testing.assert_allclose(clean["probabilities"], expected, atol=1e-6, rtol=0)
