"""Multi-label classification: the loss, F1 and thresholds against numpy references, the
model's labels, fine-tuning that stores the tuned thresholds (issue 27, item 1)."""

import json
import math

import keras
import numpy as np
import pytest

from keras_bert.models.registry import get_task
from keras_bert.tasks import BertMultiLabelClassifier
from keras_bert.tasks.multi_label_classification import metrics
from keras_bert.tasks.multi_label_classification.model import label_matrix
from keras_bert.tasks.multi_label_classification.options import MultiLabelOptions
from tests.tasks.conftest import batch, encoder  # noqa: F401


def reference_bce(labels, logits):
    """Binary cross-entropy of sigmoid(logits), averaged over labels then examples."""
    total = 0.0
    for row_labels, row_logits in zip(labels, logits):
        row = 0.0
        for y, z in zip(row_labels, row_logits):
            p = 1.0 / (1.0 + math.exp(-z))
            row -= y * math.log(p) + (1 - y) * math.log(1 - p)
        total += row / len(row_labels)
    return total / len(labels)


def reference_f1(y_true, y_pred):
    """One label's F1 from Python counts (0 when neither true nor predicted)."""
    tp = sum(1 for t, p in zip(y_true, y_pred) if t and p)
    fp = sum(1 for t, p in zip(y_true, y_pred) if not t and p)
    fn = sum(1 for t, p in zip(y_true, y_pred) if t and not p)
    return 0.0 if tp + fp + fn == 0 else 2 * tp / (2 * tp + fp + fn)


def reference_thresholds(y_true, probabilities, grid):
    """Per label: the grid value with the best F1; ties to the one nearest 0.5, then lower."""
    chosen = []
    for k in range(len(y_true[0])):
        column = [row[k] for row in y_true]
        best = None
        for t in grid:
            f1 = reference_f1(column, [row[k] >= t for row in probabilities])
            key = (-round(f1, 12), abs(t - 0.5), t)
            if best is None or key < best[0]:
                best = (key, t)
        chosen.append(float(best[1]))
    return chosen


def test_default_loss_is_the_numpy_binary_cross_entropy_of_the_logits(encoder, batch):  # noqa: F811
    model = BertMultiLabelClassifier(encoder, num_classes=3)
    model.compile()  # The defaults: binary cross-entropy on logits, binary accuracy at 0.5.
    y = np.array([[1, 0, 1], [0, 0, 1]], "float32")
    logits = np.asarray(model(batch, training=False))
    assert logits.shape == (2, 3)
    loss, accuracy = model.evaluate(batch, y, verbose=0)
    assert loss == pytest.approx(reference_bce(y, logits.astype("float64")), rel=1e-5)
    assert accuracy == pytest.approx(np.mean((logits > 0) == y))
    rng = np.random.default_rng(0)
    y, z = rng.integers(0, 2, (5, 4)).astype("float32"), rng.normal(0, 3, (5, 4)).astype("float32")
    assert float(model.loss(y, z)) == pytest.approx(reference_bce(y, z), rel=1e-5)
    with pytest.raises(ValueError, match="reads probabilities"):
        model.compile(loss="binary_crossentropy")


def test_thresholds_and_f1_match_the_numpy_reference():
    rng = np.random.default_rng(1)
    y_true = (rng.random((60, 4)) < [0.5, 0.2, 0.05, 0.0]).astype("int32")
    # Informative for the first labels, noise for the others.
    probabilities = np.clip(y_true * rng.uniform(0.2, 0.6, (60, 4)) + rng.uniform(0, 0.5, (60, 4)),
                            0, 1).astype("float32")
    grid = metrics.THRESHOLD_GRID
    thresholds = metrics.tune_thresholds(y_true, probabilities)
    assert thresholds == reference_thresholds(y_true.tolist(), probabilities.tolist(),
                                              grid.tolist())
    assert thresholds[3] == 0.5  # No positive: every threshold scores 0, the tie goes to 0.5.
    assert thresholds[0] != 0.5  # The data moves the first label's.

    predicted = metrics.predict_labels(probabilities, thresholds)
    result = metrics.multi_label_metrics(y_true, predicted, ["a", "b", "c", "d"])
    per_label = [reference_f1(y_true[:, k], predicted[:, k]) for k in range(4)]
    assert [result[f"f1_{n}"] for n in "abcd"] == pytest.approx(per_label)
    present = [k for k in range(4) if y_true[:, k].any() or predicted[:, k].any()]
    assert result["macro_f1"] == pytest.approx(np.mean([per_label[k] for k in present]))
    tp = int((y_true & predicted).sum())
    fp, fn = int(((1 - y_true) & predicted).sum()), int((y_true & (1 - predicted)).sum())
    assert result["micro_f1"] == pytest.approx(2 * tp / (2 * tp + fp + fn))
    assert result["exact_match"] == pytest.approx(np.mean(np.all(y_true == predicted, -1)))
    # Hand-computed: label 0 has F1 1, label 1 has F1 2/3.
    assert metrics.multi_label_metrics([[1, 0], [1, 1]], [[1, 0], [0, 1]]) == pytest.approx(
        {"micro_f1": 0.8, "macro_f1": 5 / 6, "exact_match": 0.5})


def test_labels_as_names_or_rows_and_thresholds_are_checked(encoder, batch, tmp_path):  # noqa: F811
    names = ["sports", "politics", "tech"]
    assert label_matrix([["tech", "sports"], [], ["politics"]], 3, 3, names).tolist() == [
        [1, 0, 1], [0, 0, 0], [0, 1, 0]]
    assert label_matrix(np.array([[0, 1, 1]]), 1, 3).dtype == np.float32
    with pytest.raises(ValueError, match=r"unknown label 'art' in y\[1\]"):
        label_matrix([["tech"], ["art"]], 2, 3, names)
    with pytest.raises(ValueError, match=r"y must hold 0 or 1\. Received 2\.0 at row 0, label 2"):
        label_matrix([[0, 1, 2]], 1, 3)
    with pytest.raises(ValueError, match=r"shape \[1, 3\].*Received: shape \[1, 2\]"):
        label_matrix([[0, 1]], 1, 3)
    with pytest.raises(ValueError, match=r"3 floats in \(0, 1\).*thresholds=\[0\.5, 1\.0\]"):
        BertMultiLabelClassifier(encoder, num_classes=3, thresholds=[0.5, 1.0])
    model = BertMultiLabelClassifier(encoder, num_classes=3, label_names=names)
    assert model.resolved_thresholds() == [0.5, 0.5, 0.5]
    assert model.task_config()["thresholds"] is None
    with pytest.raises(ValueError, match=r"label_names=\['a'\] differs from label_columns"):
        MultiLabelOptions(label_columns=["x", "y"], label_names=["a"])

    # A .keras file keeps the thresholds and the compiled loss.
    model = BertMultiLabelClassifier(encoder, num_classes=3, label_names=names,
                                     thresholds=[0.2, 0.5, 0.8])
    model.compile()
    model.save(str(tmp_path / "model.keras"))
    loaded = keras.saving.load_model(str(tmp_path / "model.keras"))
    assert type(loaded) is BertMultiLabelClassifier
    assert loaded.thresholds == [0.2, 0.5, 0.8] and loaded.label_names == names
    assert loaded.loss.get_config()["from_logits"] is True
    np.testing.assert_allclose(np.asarray(loaded(batch, training=False)),
                               np.asarray(model(batch, training=False)), rtol=1e-6, atol=1e-6)


TRAIN = [("good movie", "pos"), ("bad film", "neg"), ("good film in paris", "pos|place"),
         ("bad day in paris", "neg|place"), ("the city", ""), ("what a great film", "pos")]


def _write_train(tmp_path):
    data = tmp_path / "train.csv"
    data.write_text("text,tags\n" + "".join(f"{t},{l}\n" for t, l in TRAIN * 4))
    texts = [t for t, _ in TRAIN * 4]
    return data, texts, [l.split("|") if l else [] for _, l in TRAIN * 4]


def test_evaluation_tunes_thresholds_that_the_model_directory_keeps(tiny_model_dir, tmp_path):
    from keras_bert.training.finetune import FinetuneOptions, read_task_data

    data, texts, label_sets = _write_train(tmp_path)
    spec = get_task("multi_label_classification")
    options = MultiLabelOptions(label_column="tags")
    examples = read_task_data(spec.name, str(data), True, options)
    task = spec.finetune(tiny_model_dir, FinetuneOptions(), options)
    task.prepare(examples, examples)
    assert task.label_names == ["neg", "place", "pos"]
    model = task.build_model()
    result = task.evaluate(model, batch_size=8)
    y = label_matrix(label_sets, len(texts), 3, task.label_names)
    np.testing.assert_array_equal(task.eval_labels, y)
    # The thresholds are the search's on the model's eval probabilities, set on the model.
    probabilities = task.eval_probabilities(model, batch_size=8)
    assert probabilities.shape == (len(texts), 3) and 0 < probabilities.min() < 1
    assert model.thresholds == metrics.tune_thresholds(y, probabilities)
    predicted = metrics.predict_labels(probabilities, model.thresholds)
    assert result == metrics.multi_label_metrics(y, predicted, task.label_names)
    assert set(result) == {"micro_f1", "macro_f1", "exact_match", "f1_neg", "f1_place", "f1_pos"}
    # save_pretrained (what fine-tuning does at the best epoch) keeps them in task.json.
    model.save_pretrained(str(tmp_path / "out"), vocab_file=task.vocab_file,
                          task_info=task.task_info())
    with open(tmp_path / "out" / "task.json") as f:
        assert json.load(f)["task_config"]["thresholds"] == model.thresholds
    # A fixed threshold (--threshold) replaces the search.
    task.task_options = MultiLabelOptions(label_column="tags", threshold=0.4)
    task.evaluate(model, batch_size=8)
    assert model.thresholds == [0.4, 0.4, 0.4]


@pytest.mark.slow  # A fine-tuning run of the tool (its training step traced once).
def test_finetune_tool_trains_and_saves_thresholds(tiny_model_dir, tmp_path):
    from tests.conftest import run_tool

    data, texts, label_sets = _write_train(tmp_path)
    out = tmp_path / "out"
    status, stdout, stderr = run_tool(
        "finetune", "--task", "multi_label_classification", "--model", tiny_model_dir,
        "--train", data, "--eval", data, "--output", out, "--label-column", "tags",
        "--epochs", "1", "--batch-size", "8", "--learning-rate", "1e-3", "--no-tensorboard",
        "--progress", "lines", "--max-seq-length", "16")
    assert status == 0, stdout[-2000:] + stderr[-2000:]
    assert "f1_place" in stdout and "macro_f1" in stdout  # Per-label F1 in the eval line.
    with open(out / "task.json") as f:
        info = json.load(f)
    assert info["task"] == "multi_label_classification"
    assert info["early_stopping_metric"] == "macro_f1"
    model = BertMultiLabelClassifier.from_pretrained(str(out))
    y = label_matrix(label_sets, len(texts), 3, model.label_names)
    assert model.thresholds == metrics.tune_thresholds(y, model.predict(texts)["probabilities"])
    # The raw-string fit of the loaded model takes label-name lists.
    history = model.fit(texts[:4], label_sets[:4], verbose=0).history
    assert set(history) == {"loss", "binary_accuracy"}
