"""Class weights for fine-tuning: `auto` (inverse frequency) or a JSON file, as sample weights.

"auto" is scikit-learn's "balanced", w_c = N / (C * n_c): the mean weight
over the training labels is 1, so the loss keeps its unweighted scale.
"""

import json
import math
import os

import numpy as np
import tensorflow as tf

from keras_bert import storage

AUTO = "auto"


def auto_class_weights(label_ids, num_classes):
    """Inverse-frequency weights, normalized to a mean of 1 over `label_ids`.

    Args:
        label_ids: int array of training labels (any shape; values < 0,
            the tagger's unlabeled pieces, are not counted).
        num_classes: int.

    Returns:
        float32 numpy array [num_classes]: N / (C * n_c) for the C classes
        that occur, 1.0 for the others.

    Example:
    >>> auto_class_weights([0, 0, 0, 1], 2)  # 4 / (2 * 3), 4 / (2 * 1)
    array([0.6666667, 2.       ], dtype=float32)
    """
    ids = np.asarray(label_ids, dtype="int64").ravel()
    ids = ids[ids >= 0]
    if ids.size and ids.max() >= num_classes:
        raise ValueError(f"Label id {int(ids.max())} is out of range for {num_classes} classes.")
    counts = np.bincount(ids, minlength=num_classes).astype("float64")
    present = counts > 0
    weights = np.ones(num_classes, dtype="float64")
    weights[present] = ids.size / (present.sum() * counts[present])
    return weights.astype("float32")


def read_class_weights(path_or_dict, label_names):
    """Weights from a JSON file (or dict) {label name: weight} as a float32 array
    in the order of `label_names`; ValueError names an unknown or missing label
    or a weight that is not a finite number >= 0."""
    where = "--class-weights"
    if isinstance(path_or_dict, dict):
        table = path_or_dict
    else:
        where = f"--class-weights {path_or_dict}"
        if not storage.exists(path_or_dict) or storage.isdir(path_or_dict):
            raise FileNotFoundError(
                f"{where}: no such file. Give 'auto' or a JSON file {{label: weight}}.")
        try:
            with storage.open_file(path_or_dict) as f:
                table = json.load(f)
        except (ValueError, UnicodeDecodeError) as e:
            raise ValueError(f"{where}: not valid JSON ({e}); expected an object "
                             f"{{label: weight}}.") from None
        if not isinstance(table, dict):
            raise ValueError(f"{where}: expected a JSON object {{label: weight}}. Received: "
                             f"a JSON {type(table).__name__}.")
    names = [str(name) for name in label_names]
    unknown = [key for key in table if key not in names]
    if unknown:
        raise ValueError(f"{where}: unknown label(s) {unknown}; the task's labels are {names}.")
    missing = [name for name in names if name not in table]
    if missing:
        raise ValueError(f"{where}: no weight for label(s) {missing}; give one for each of "
                         f"{names}.")
    weights = []
    for name in names:
        value = table[name]
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not math.isfinite(value) or value < 0):
            raise ValueError(f"{where}: the weight of {name!r} must be a finite number >= 0. "
                             f"Received: {value!r}.")
        weights.append(float(value))
    if not any(weights):
        raise ValueError(f"{where}: every weight is 0; nothing would be learned.")
    return np.asarray(weights, dtype="float32")


def resolve_class_weights(spec, label_names, label_ids):
    """`spec` ("auto", a JSON path or a dict {label name: weight}) -> float32
    weights [num_classes]; "auto" counts the training `label_ids`."""
    if isinstance(spec, str) and spec == AUTO:
        return auto_class_weights(label_ids, len(label_names))
    if not isinstance(spec, (str, os.PathLike, dict)):
        raise ValueError(f"Expected class_weights 'auto', a JSON file path or a dict "
                         f"{{label: weight}}. Received: {spec!r}")
    return read_class_weights(spec if isinstance(spec, dict) else os.fspath(spec), label_names)


def add_sample_weights(dataset, weights):
    """Unbatched (features, label) elements -> (features, label, weight[label]),
    for a scalar label or a [seq] label; a label < 0 (no label there) weighs 0."""
    table = tf.constant(np.asarray(weights, dtype="float32"))

    def weigh(features, label):
        weight = tf.where(label >= 0, tf.gather(table, tf.maximum(label, 0)), 0.0)
        return features, label, weight

    return dataset.map(weigh, num_parallel_calls=tf.data.AUTOTUNE)


def describe(weights, label_names, limit=12):
    """'negative 3.10, neutral 0.61, ...' for the set-up log line."""
    pairs = [f"{name} {w:.3g}" for name, w in zip(label_names, weights)]
    more = len(pairs) - limit
    return ", ".join(pairs[:limit]) + (f", ... ({more} more)" if more > 0 else "")
