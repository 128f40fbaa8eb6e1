"""Multi-label metrics and decision thresholds, in numpy (no scikit-learn).

Labels and predictions are 0/1 arrays [num_examples, num_labels]. A label's
F1 is 2 tp / (2 tp + fp + fn), 0 for 0 / 0; macro F1 averages over the labels
that occur (true or predicted). A label is predicted when its probability is
>= its threshold, in the export as here.
"""

import numpy as np

#: Candidate decision thresholds: 0.05, 0.10, ..., 0.95.
THRESHOLD_GRID = np.round(np.arange(1, 20) * 0.05, 2)
DEFAULT_THRESHOLD = 0.5


def _counts(y_true, y_pred):
    """(tp, fp, fn) per label (last axis), int64 arrays."""
    y_true = np.asarray(y_true).astype(bool)
    y_pred = np.asarray(y_pred).astype(bool)
    tp = np.sum(y_true & y_pred, axis=-2)
    fp = np.sum(~y_true & y_pred, axis=-2)
    fn = np.sum(y_true & ~y_pred, axis=-2)
    return tp, fp, fn


def _f1(tp, fp, fn):
    denominator = 2 * tp + fp + fn
    return np.divide(2 * tp, denominator, out=np.zeros(np.shape(tp)), where=denominator > 0)


def multi_label_metrics(y_true, y_pred, label_names=None):
    """Dict of micro_f1, macro_f1, exact_match (the share of rows whose whole
    label set is right) and, with `label_names`, "f1_NAME" per label.

    Example:
    >>> multi_label_metrics([[1, 0], [1, 1]], [[1, 0], [0, 1]])  # doctest: +ELLIPSIS
    {'micro_f1': 0.8, 'macro_f1': 0.833..., 'exact_match': 0.5}
    """
    y_true = np.asarray(y_true).astype(bool)
    y_pred = np.asarray(y_pred).astype(bool)
    tp, fp, fn = _counts(y_true, y_pred)
    f1 = _f1(tp, fp, fn)
    present = (tp + fp + fn) > 0
    result = {
        "micro_f1": float(_f1(tp.sum(), fp.sum(), fn.sum())),
        "macro_f1": float(f1[present].mean()) if present.any() else 0.0,
        "exact_match": float(np.all(y_true == y_pred, axis=-1).mean()) if len(y_true) else 0.0,
    }
    for name, value in zip(label_names or (), f1):
        result[f"f1_{name}"] = float(value)
    return result


def predict_labels(probabilities, thresholds):
    """int32 [N, K]: 1 where probabilities [N, K] >= thresholds [K] (or one float)."""
    return (np.asarray(probabilities) >= np.asarray(thresholds, "float32")).astype("int32")


def tune_thresholds(y_true, probabilities, grid=THRESHOLD_GRID):
    """Per-label thresholds that maximize each label's F1 on (y_true, probabilities).

    Args:
        y_true: 0/1 array [N, K].
        probabilities: float array [N, K] (sigmoid of the logits).
        grid: 1-D array of candidate thresholds.

    Returns:
        list of K floats from `grid` (ties: nearest 0.5, then the lower).
    """
    y_true = np.asarray(y_true).astype(bool)  # (N, K)
    grid = np.asarray(grid, "float64")
    # (T, N, K): the predictions at every candidate at once.
    predicted = np.asarray(probabilities, "float32")[None] >= grid.astype("float32")[:, None, None]
    f1 = _f1(*_counts(y_true[None], predicted))  # (T, K)
    # Best F1 first, then distance to 0.5, then the lower threshold (lexsort: last key first).
    thresholds = []
    for k in range(f1.shape[1]):
        order = np.lexsort((grid, np.abs(grid - DEFAULT_THRESHOLD), -np.round(f1[:, k], 12)))
        thresholds.append(float(grid[order[0]]))
    return thresholds
