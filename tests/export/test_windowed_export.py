"""Exports of models with windows: they answer as Python `predict` does, with core ops only."""

import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.export import export_model
from keras_bert.export.op_set import graph_ops
from keras_bert.export.predict import load_export, run_signature
from keras_bert.export.runtime_check import CHECK_TEXTS, RUNTIME
from keras_bert.tasks import BertClassifier, BertTokenClassifier
from tests.conftest import built_once, run_tool, tool_module
from tests.export.export_kinds import KINDS
from tests.tasks.test_long_documents import (
    TEXTS,
    check_tagger,
    classifier_reference,
    tagger_dir,
    tagger_reference,
)

CLASSIFIER_WINDOWS = {"stride": 7, "max_windows": 4, "combine": "max"}
TAGGER_WINDOWS = {"stride": 3, "max_windows": 5}


@pytest.fixture(scope="module")
def windowed(classifier_export, task_exports, tmp_path_factory):
    """Windowed tiny classifier and tagger: model dirs saved with windows and their exports
    (built once for both tiers, `built_once`), and the models read back from the dirs."""
    def build(root):
        models = {
            "classifier": BertClassifier.from_pretrained(
                classifier_export["model_dir"], windows=CLASSIFIER_WINDOWS),
            "tagger": BertTokenClassifier.from_pretrained(
                tagger_dir(task_exports), max_seq_length=10, windows=TAGGER_WINDOWS),
        }
        paths = {}
        for kind, model in models.items():
            # Through a model directory: the windows travel in task.json.
            paths[kind] = os.path.join(root, kind)
            model.save_pretrained(paths[kind])
            paths[kind + "_export"] = export_model(paths[kind],
                                                   os.path.join(root, "exports", kind))
        return paths

    paths = built_once(tmp_path_factory, "windowed", build)
    result = dict(paths)
    for kind, model_class, windows in (("classifier", BertClassifier, CLASSIFIER_WINDOWS),
                                       ("tagger", BertTokenClassifier, TAGGER_WINDOWS)):
        result[kind] = model_class.from_pretrained(paths[kind])
        assert result[kind].windows == windows  # Read from task.json.
    return result


@pytest.mark.slow
def test_windowed_exports_answer_as_the_window_references(windowed):
    # The references that Python predict matches (tests/tasks/test_long_documents.py),
    # with "max" for the classifier (predict is checked with "mean").
    classifier = load_export(windowed["classifier_export"])
    out = run_signature(classifier, {"text": TEXTS})
    reference = classifier_reference(windowed["classifier"], TEXTS, 22, 7, 4)
    logits = np.stack([np.max(window_logits, axis=0) for window_logits in reference])
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    np.testing.assert_allclose(out["probabilities"], probabilities, atol=1e-5)
    assert out["num_windows"].tolist() == [len(w) for w in reference] == [4, 1, 1, 4]
    assert out["label_id"].tolist() == logits.argmax(-1).tolist()
    preprocessed = classifier.signatures["preprocess"](text=tf.constant(TEXTS))
    assert preprocessed["example"].numpy().tolist() == [0, 0, 0, 0, 1, 2, 3, 3, 3, 3]

    out = run_signature(load_export(windowed["tagger_export"]), {"text": TEXTS})
    check_tagger(out, tagger_reference(windowed["tagger"], TEXTS, 8, 3, 5), TEXTS)
    assert out["num_windows"].tolist() == [5, 1, 1, 5]


def test_windowed_exports_keep_the_op_set_and_windows_off_keeps_its_outputs(
        windowed, classifier_export):
    for path in (windowed["classifier_export"], windowed["tagger_export"]):
        ops = set(graph_ops(path))
        # Windowing is core TensorFlow (tf.raw_ops): the tokenizer stays the only other op.
        # (The slow runtime check below runs the guard's clean process on them too.)
        assert ops - set(dir(tf.raw_ops)) == {"FastWordpieceTokenizeWithOffsets"}, path
        assert "RoundRobinTrim" not in ops
    windowed_ops = set(graph_ops(windowed["classifier_export"]))
    plain_ops = set(graph_ops(classifier_export["export_dir"]))
    assert {"UnsortedSegmentMax", "UnsortedSegmentSum"} <= windowed_ops - plain_ops
    # A model without windows exports today's classify: no num_windows.
    plain = load_export(classifier_export["export_dir"])
    outputs = plain.signatures["classify"].structured_outputs
    assert sorted(outputs) == ["label", "label_id", "probabilities"]


def test_predict_tool_shows_the_windows(windowed):
    code, out, err = run_tool("predict", "--model", windowed["classifier_export"], TEXTS[0],
                              TEXTS[2])
    assert code == 0, err
    lines = out.strip().splitlines()
    assert len(lines) == 2 and lines[0].endswith("\twindows=4") and lines[1].endswith(
        "\twindows=1"), lines


@pytest.mark.slow  # TensorFlow 2.20's venv (built once, minutes) serving every export kind
def test_every_export_kind_answers_alike_in_tf_serving_runtime(windowed, three_exports, capsys):
    # One run of the tool (one probe in each runtime) for the four kinds and both windowed
    # exports. Creates ~/.cache/keras_bert/serving-runtime-tf2.20 on a machine's first run
    # (minutes: TensorFlow 2.20 is a 620 MB wheel); later runs reuse it.
    exports = {**three_exports, "windowed classifier": windowed["classifier_export"],
               "windowed tagger": windowed["tagger_export"]}
    argv = [arg for path in exports.values() for arg in ("--model", path)]
    code = tool_module("check_serving_runtime").main(argv)
    out, err = capsys.readouterr()
    if code == 3:
        pytest.skip(f"TensorFlow {RUNTIME} / tensorflow-text {RUNTIME} cannot be installed "
                    f"on this machine, so the old-runtime check could not run: {err[-1500:]}")
    assert code == 0, out[-5000:] + err[-3000:]
    assert f"TF Serving's runtime:     TensorFlow {RUNTIME}." in out
    # Each kind's signatures, and the windowed classifier's and tagger's own.
    signatures = {"classifier": ["classify"], "tagger": ["tag", "entities"], "qa": ["answer"],
                  "multi_label": ["classify"], "windowed classifier": ["classify"],
                  "windowed tagger": ["tag"]}
    for kind, names in signatures.items():
        for signature in names:
            line = next(line for line in out.splitlines()
                        if exports[kind] in line and f" {signature}:" in line)
            # The whole batch of edge-case texts ran (QA reads them in more windows).
            rows = int(line.split(": ")[1].split(" rows")[0])
            assert line.lstrip().startswith("OK") and rows >= len(CHECK_TEXTS), line
    assert f"VERDICT: OK. {len(exports)} export(s)" in out
    # Every string signature of the four kinds ran: four each, and the tagger's entities.
    ran = [line for line in out.splitlines() if line.lstrip().startswith("OK")
           and any(f" {three_exports[kind]} " in line for kind in KINDS)]
    assert len(ran) == 4 * len(KINDS) + 1, ran
    # The op-set guard's clean process: core TensorFlow and the allowlisted tokenizer only.
    assert out.count("ops besides core TensorFlow") == len(exports)
    assert "NOT in the allowlist" not in out
