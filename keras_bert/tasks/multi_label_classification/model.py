"""BertMultiLabelClassifier: any number of labels per text (sigmoid head)."""

import keras
import numpy as np
import tensorflow as tf

from keras_bert.models.dense_head import DenseHeadTask
from keras_bert.tasks.multi_label_classification.metrics import DEFAULT_THRESHOLD
from keras_bert.tasks.multi_label_classification.serving import MultiLabelServingModule


@keras.saving.register_keras_serializable(package="keras_bert")
class BertMultiLabelClassifier(DenseHeadTask):
    """Pooled [CLS] -> dropout -> dense: one independent yes/no logit per label.

    Output: float32 logits [batch_size, num_classes]; label c's probability
    is sigmoid(logits[:, c]), and the label is predicted when it reaches
    `thresholds[c]`.

    Args:
        encoder: a `BertEncoder`.
        num_classes: int, number of labels.
        dropout_rate: float or None; None uses the encoder's dropout_rate.
        label_names: optional list of `num_classes` label strings, saved in
            task.json and in exports' keras_bert_export.json.
        thresholds: optional list of `num_classes` floats in (0, 1), the
            decision threshold of each label (None: 0.5 for every label).
            tools/finetune.py tunes them on the evaluation set and saves
            them in task.json's task_config.

    Compiled by default (`BertTask`): binary cross-entropy on the logits
    (the mean over labels and examples) and the binary accuracy at 0.5.

    Labels (`y`) in `fit` / `evaluate`: 0/1 rows [N, num_classes] (a numpy
    array or nested lists), or one list of label names per text (through
    `label_names`; [] for a text with no label).

    With a preprocessor (`from_pretrained` attaches one), `predict(texts)`
    on strings returns the export's `classify` dict, from the same code
    (`MultiLabelServingModule`); on the integer input dict, the logits.

    Example:
    >>> model = BertMultiLabelClassifier.from_pretrained(
    ...     "models/minilm", num_classes=3, label_names=["sports", "politics", "tech"])
    >>> model.fit(["the match", "new chips for the election"], [["sports"], ["politics", "tech"]])
    >>> model.predict(["the match"])["predicted"]  # [[1, 0, 0]] once trained
    """

    predicts_like_export = True  # predict(texts) returns the export's answer dict.
    task_name = "multi_label_classification"
    serving_module_class = MultiLabelServingModule
    text_columns = (1,)

    def __init__(self, encoder, num_classes, dropout_rate=None, label_names=None,
                 thresholds=None, **kwargs):
        super().__init__(encoder, num_classes, dropout_rate, label_names,
                         feature="pooled_output", **kwargs)
        self.thresholds = thresholds

    @property
    def thresholds(self):
        """list of num_classes floats in (0, 1), or None (0.5 for every label)."""
        return self._thresholds

    @thresholds.setter
    def thresholds(self, value):
        object.__setattr__(self, "_thresholds", check_thresholds(self.num_classes, value))
        # `predict`'s serving module holds the thresholds as constants: build it anew.
        object.__setattr__(self, "_serving_module_cache", None)

    def task_config(self):
        return {**super().task_config(), "thresholds": self.thresholds}

    def resolved_thresholds(self):
        """list of num_classes floats: `thresholds`, or 0.5 for every label."""
        return list(self.thresholds or [DEFAULT_THRESHOLD] * self.num_classes)

    def default_loss(self):
        return keras.losses.BinaryCrossentropy(from_logits=True)

    def default_metrics(self):
        # On logits, 0 is probability 0.5.
        return [keras.metrics.BinaryAccuracy(name="binary_accuracy", threshold=0.0)]

    def _labels(self, y, count, method, name="y"):
        """Label-name lists or 0/1 rows -> float32 [count, num_classes]."""
        if y is None or name != "y" or isinstance(y, dict):
            return super()._labels(y, count, method, name)
        return label_matrix(y, count, self.num_classes, self.label_names, self._what(method))

    def _dataset_of_text_dataset(self, dataset):
        spec = dataset.element_spec
        if (isinstance(spec, tuple) and len(spec) > 1
                and isinstance(spec[1], (tf.TensorSpec, tf.RaggedTensorSpec))
                and spec[1].dtype == tf.string):
            raise ValueError(
                f"{type(self).__name__}: the dataset's labels are strings; yield 0/1 rows "
                f"[batch, {self.num_classes}] instead (or pass lists of label names to fit "
                f"as in-memory y).")
        return super()._dataset_of_text_dataset(dataset)


def check_thresholds(num_classes, thresholds):
    """`thresholds` as a list of floats in (0, 1), one per label, or None."""
    if thresholds is None:
        return None
    if isinstance(thresholds, (str, bytes)) or not hasattr(thresholds, "__len__"):
        raise ValueError(f"Expected thresholds to be a list of {num_classes} floats. "
                         f"Received: thresholds={thresholds!r}")
    values = [float(t) for t in thresholds]
    if len(values) != num_classes or not all(0 < t < 1 for t in values):
        raise ValueError(
            f"Expected thresholds to be {num_classes} floats in (0, 1), one per label. "
            f"Received: thresholds={list(thresholds)!r}")
    return values


def label_matrix(y, count, num_classes, label_names=None, what="This model"):
    """Multi-label targets as users hold them -> float32 [count, num_classes] of 0/1.

    Args:
        y: 0/1 rows (numpy array, nested lists, tf Tensor), or one list of
            label names per example (through `label_names`).
        count: int, the number of examples.
        num_classes: int.
        label_names: list of str or None.
        what: str naming the caller in errors.
    """
    if hasattr(y, "numpy"):
        y = y.numpy()
    if isinstance(y, (str, bytes)) or not hasattr(y, "__len__"):
        raise ValueError(f"{what} needs y with one row of labels per example ({count}). "
                         f"Received: {y!r}.")
    if len(y) != count:
        raise ValueError(f"{what}: expected y to have one row per text ({count}). "
                         f"Received: {len(y)} rows.")
    rows = list(y)
    if any(isinstance(v, (str, bytes)) for row in rows if hasattr(row, "__iter__")
           and not isinstance(row, (str, bytes)) for v in row) or any(
               isinstance(row, (list, tuple)) and not row for row in rows):
        return _names_matrix(rows, num_classes, label_names, what)
    try:
        array = np.asarray(rows, dtype="float32")
    except (TypeError, ValueError):
        raise ValueError(
            f"{what}: y must be 0/1 rows of {num_classes} values or lists of label names, one "
            f"per text. Received e.g. {rows[0]!r}.") from None
    if array.ndim != 2 or array.shape[1] != num_classes:
        raise ValueError(
            f"{what}: expected y of shape [{count}, {num_classes}] (0/1 per label). Received: "
            f"shape {list(array.shape)}.")
    bad = ~np.isin(array, (0.0, 1.0))
    if bad.any():
        row, column = (int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{what}: y must hold 0 or 1. Received {float(array[row, column])!r} at "
                         f"row {row}, label {column}.")
    return array


def _names_matrix(rows, num_classes, label_names, what):
    if not label_names:
        raise ValueError(f"{what}: y holds label names but the model has no label_names; "
                         f"pass 0/1 rows, or build the model with label_names=[...].")
    index = {name: i for i, name in enumerate(label_names)}
    matrix = np.zeros([len(rows), num_classes], "float32")
    for i, row in enumerate(rows):
        if isinstance(row, (str, bytes)) or not hasattr(row, "__iter__"):
            raise ValueError(f"{what}: expected y[{i}] to be a list of label names. Received: "
                             f"{row!r}.")
        for name in row:
            name = name.decode("utf-8") if isinstance(name, bytes) else name
            if name not in index:
                raise ValueError(f"{what}: unknown label {name!r} in y[{i}]; the model's "
                                 f"label_names are {list(label_names)}.")
            matrix[i, index[name]] = 1.0
    return matrix
