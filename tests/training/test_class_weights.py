"""Class weights (training/class_weights.py): auto weights, weight files, the weighted loss."""

import json

import numpy as np
import pytest

from keras_bert.tasks.classification.options import ClassificationOptions
from keras_bert.tasks.token_classification.options import TokenClassificationOptions
from keras_bert.training.class_weights import auto_class_weights, read_class_weights
from keras_bert.training.finetune import FinetuneOptions, finetune_task_class, read_task_data
from tests.training.finetune_fixtures import CONLL_TEXT

pytestmark = pytest.mark.filterwarnings("ignore:Gradients do not exist")


def test_auto_weights_are_inverse_frequency_with_mean_one_over_the_labels():
    labels = [0, 0, 0, 0, 1, 1, 3, -1, -1]  # -1: unlabeled pieces, not counted; class 2 absent.
    weights = auto_class_weights(labels, 4)
    # N = 7 labels, C = 3 classes present: N / (C * n_c); an absent class keeps 1.
    np.testing.assert_allclose(weights, [7 / 12, 7 / 6, 1.0, 7 / 3], rtol=1e-6)
    counted = np.array([l for l in labels if l >= 0])
    assert weights[counted].mean() == pytest.approx(1.0)


def test_weight_file_in_label_order_and_its_errors_name_the_problem(tmp_path):
    names = ["negative", "neutral", "positive"]
    path = tmp_path / "weights.json"
    path.write_text(json.dumps({"positive": 4, "negative": 1.5, "neutral": 0.5}))
    np.testing.assert_allclose(read_class_weights(str(path), names), [1.5, 0.5, 4.0])
    cases = [
        ({"negative": 1, "neutral": 1, "positive": 1, "happy": 2}, r"unknown label\(s\) \['happy'\]"),
        ({"negative": 1, "positive": 1}, r"no weight for label\(s\) \['neutral'\]"),
        ({"negative": 1, "neutral": -1, "positive": 1}, "weight of 'neutral' must be a finite"),
        ({"negative": 1, "neutral": "x", "positive": 1}, "weight of 'neutral' must be a finite"),
        ({"negative": 0, "neutral": 0, "positive": 0}, "every weight is 0"),
        ([1, 2, 3], "expected a JSON object"),
    ]
    for table, message in cases:
        path.write_text(json.dumps(table))
        with pytest.raises(ValueError, match=message) as info:
            read_class_weights(str(path), names)
        assert str(path) in str(info.value)
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        read_class_weights(str(path), names)
    with pytest.raises(ValueError, match="no such file"):
        FinetuneOptions(class_weights=str(tmp_path / "missing.json"))


def _log_softmax(logits):
    logits = np.asarray(logits, "float64")
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def _task(kind, model_dir, tmp_path, class_weights):
    if kind == "classification":
        path = tmp_path / "train.csv"
        rows = ["good movie,pos", "great film,pos", "nice plot,pos", "happy city,pos",
                "lovely film,pos", "bad movie,neg"]
        path.write_text("text,label\n" + "\n".join(rows) + "\n")
        task_options = ClassificationOptions()
    else:
        path = tmp_path / "train.conll"
        path.write_text(CONLL_TEXT)
        task_options = TokenClassificationOptions()
    data = read_task_data(kind, str(path), True, task_options)
    task = finetune_task_class(kind)(
        model_dir, FinetuneOptions(class_weights=class_weights, max_seq_length=16), task_options)
    task.prepare(data, data)
    task.set_class_weights()
    return task


def weighted_cross_entropy(logits, labels, weights):
    """numpy: sum of weights[label] * -log softmax(logits)[label] over labeled rows / their count.

    Keras' mean ("sum_over_batch_size"): over the batch for a classifier, over
    the labeled pieces for a tagger (ignore_class=-1 masks the others).
    """
    labels = np.asarray(labels)
    labeled = labels >= 0
    nll = -np.take_along_axis(_log_softmax(logits), np.maximum(labels, 0)[..., None], -1)[..., 0]
    return (nll * np.where(labeled, weights[np.maximum(labels, 0)], 0))[labeled].sum() / labeled.sum()


def test_sample_weights_give_the_numpy_weighted_cross_entropy():
    """Both task models' losses on the weights `add_sample_weights` puts in a batch."""
    import tensorflow as tf

    from keras_bert.tasks import BertClassifier, BertTokenClassifier
    from keras_bert.training.class_weights import add_sample_weights
    from tests.export.conftest import tiny_encoder

    weights = np.array([0.5, 2.0, 4.0], "float32")
    features = {"token_ids": np.array([[2, 5, 6, 3, 0], [2, 7, 3, 0, 0], [2, 8, 9, 10, 3]]),
                "padding_mask": np.array([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])}
    features["segment_ids"] = np.zeros_like(features["token_ids"])
    tags = np.array([[-1, 0, 2, -1, -1], [-1, 1, -1, -1, -1], [-1, 2, -1, 0, -1]])
    for model, labels in ((BertClassifier(tiny_encoder(0), num_classes=3), np.array([0, 1, 2])),
                          (BertTokenClassifier(tiny_encoder(1), num_classes=3), tags)):
        model.compile()  # The default loss, as finetune() compiles.
        dataset = add_sample_weights(tf.data.Dataset.from_tensor_slices((features, labels)), weights)
        x, y, sample_weight = next(iter(dataset.batch(3)))
        np.testing.assert_array_equal(
            sample_weight, np.where(labels >= 0, weights[np.maximum(labels, 0)], 0))
        logits = model(x, training=False)
        loss = float(model.compute_loss(x=x, y=y, y_pred=logits, sample_weight=sample_weight,
                                        training=True))
        assert loss == pytest.approx(weighted_cross_entropy(logits, labels, weights), rel=1e-5)
        assert loss != pytest.approx(weighted_cross_entropy(logits, labels, np.ones(3)), rel=1e-3)


def test_per_class_recall_in_the_evaluation_metrics():
    from keras_bert.tasks.classification.metrics import classification_metrics
    from keras_bert.tasks.token_classification.metrics import entity_metrics

    result = classification_metrics([0, 0, 1, 2, 2, 2], [0, 1, 1, 2, 0, 0], 3, ["a", "b", "c"])
    assert (result["recall/a"], result["recall/b"], result["recall/c"]) == (0.5, 1.0, 1 / 3)
    result = entity_metrics([["B-PER", "O", "B-LOC", "B-LOC"]], [["B-PER", "O", "B-LOC", "O"]])
    assert (result["recall/PER"], result["recall/LOC"]) == (1.0, 0.5)


# Through the fine-tuning task's own pipeline (reader, prepare, length-bucketed
# batches): slow tier, each tokenizes its data in several tf.data traces.
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["classification", "token_classification"])
def test_training_step_loss_is_numpy_weighted_cross_entropy(kind, tiny_model_dir, tmp_path):
    task = _task(kind, tiny_model_dir, tmp_path, "auto")
    weights = task.class_weights
    label_names, label_ids = task.class_weight_labels()
    np.testing.assert_allclose(weights, auto_class_weights(label_ids, len(label_names)))
    assert weights.max() > 1.5 * weights.min()  # Imbalanced data: the weights differ.
    x, y, sample_weight = next(iter(task.training_batches(4, seed=0)))
    y, sample_weight = np.asarray(y), np.asarray(sample_weight)
    model = task.build_model()
    model.compile()  # The default loss, as finetune() compiles.
    logits = model(x, training=False)
    # What the Trainer's step computes (keras_bert.training.trainer).
    loss = float(model.compute_loss(x=x, y=y, y_pred=logits, sample_weight=sample_weight,
                                    training=True))
    labeled = y >= 0
    np.testing.assert_array_equal(sample_weight, np.where(labeled, weights[np.maximum(y, 0)], 0))
    expected = weighted_cross_entropy(logits, y, weights)
    assert loss == pytest.approx(expected, rel=1e-5)
    # The weights did change the loss.
    assert abs(expected - weighted_cross_entropy(logits, y, np.ones_like(weights))) > 1e-4
    if kind == "token_classification":
        assert (sample_weight[~labeled] == 0).all() and (~labeled).any()


@pytest.mark.slow
def test_class_weights_are_refused_for_regression(tiny_model_dir, tmp_path):
    path = tmp_path / "sts.csv"
    path.write_text("text,label\ngood movie,0.5\nbad film,1.5\n")
    task_options = ClassificationOptions(regression=True)
    data = read_task_data("classification", str(path), True, task_options)
    task = finetune_task_class("classification")(
        tiny_model_dir, FinetuneOptions(class_weights="auto", max_seq_length=16), task_options)
    task.prepare(data, data)
    with pytest.raises(ValueError, match="regression has no classes to weigh"):
        task.set_class_weights()


def test_class_weights_are_refused_for_span_qa_before_any_data_work(tiny_model_dir, tmp_path):
    from keras_bert.training.finetune import finetune

    with pytest.raises(ValueError, match=r"--class-weights.*span_qa has no classes to weigh"):
        finetune("span_qa", tiny_model_dir, str(tmp_path / "out"), None, None,
                 FinetuneOptions(class_weights="auto", max_seq_length=64))
