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


# The tagger's case tokenizes CoNLL twice (train and eval): slow tier.
@pytest.mark.parametrize("kind", ["classification", pytest.param(
    "token_classification", marks=pytest.mark.slow)])
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
    nll = -np.take_along_axis(_log_softmax(logits), np.maximum(y, 0)[..., None], -1)[..., 0]
    # Keras' mean: over the batch (classification), over labeled pieces (tagging:
    # ignore_class=-1; [CLS], [SEP], "##" pieces and padding have weight 0).
    expected = (nll * sample_weight)[labeled].sum() / labeled.sum()
    assert loss == pytest.approx(expected, rel=1e-5)
    unweighted = nll[labeled].mean()
    assert abs(expected - unweighted) > 1e-4  # The weights did change the loss.
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
