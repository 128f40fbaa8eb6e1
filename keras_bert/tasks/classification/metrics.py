"""Classification and regression metrics, in numpy (no scikit-learn).

- classification: accuracy, macro-F1, Matthews correlation (multi-class,
  Gorodkin's R_K, as sklearn.metrics.matthews_corrcoef);
- regression (STS-B): Pearson and Spearman correlation, MSE.
"""

import numpy as np

from keras_bert.training.correlation import pearson, spearman


def confusion_matrix(y_true, y_pred, num_classes):
    """int64 [num_classes, num_classes]: rows are true labels, columns predictions."""
    y_true = np.asarray(y_true, dtype="int64").ravel()
    y_pred = np.asarray(y_pred, dtype="int64").ravel()
    return np.bincount(y_true * num_classes + y_pred, minlength=num_classes**2).reshape(
        num_classes, num_classes
    )


def macro_f1(confusion):
    """Unweighted mean of per-class F1 over classes that occur (true or predicted).

    Example:
    >>> macro_f1(confusion_matrix([0, 0, 1, 1], [0, 1, 1, 1], 2))  # (2/3 + 4/5) / 2
    0.7333333333333334
    """
    confusion = np.asarray(confusion, dtype="float64")
    tp = np.diag(confusion)
    true_count, pred_count = confusion.sum(1), confusion.sum(0)
    present = (true_count + pred_count) > 0
    denominator = true_count + pred_count
    f1 = np.divide(2 * tp, denominator, out=np.zeros_like(tp), where=denominator > 0)
    return float(f1[present].mean()) if present.any() else 0.0


def matthews_corrcoef(confusion):
    """Multi-class Matthews correlation (R_K) of a confusion matrix; 0 when undefined."""
    confusion = np.asarray(confusion, dtype="float64")
    t, p = confusion.sum(1), confusion.sum(0)
    n, correct = confusion.sum(), np.trace(confusion)
    numerator = correct * n - t @ p
    denominator = np.sqrt((n**2 - p @ p) * (n**2 - t @ t))
    return float(numerator / denominator) if denominator > 0 else 0.0


def per_class_recall(confusion):
    """float64 [num_classes]: recall of each class (0 for a class with no true examples)."""
    confusion = np.asarray(confusion, dtype="float64")
    true_count = confusion.sum(1)
    return np.divide(np.diag(confusion), true_count, out=np.zeros(len(confusion)),
                     where=true_count > 0)


def classification_metrics(y_true, y_pred, num_classes, label_names=None):
    """Dict of accuracy, macro_f1 and mcc for integer labels and predictions.

    With `label_names` (list of `num_classes` str), also `recall/NAME`, each
    class's recall (what class weights are meant to raise for a rare class).
    """
    y_true = np.asarray(y_true).ravel()
    y_pred = np.asarray(y_pred).ravel()
    confusion = confusion_matrix(y_true, y_pred, num_classes)
    result = {
        "accuracy": float(np.mean(y_true == y_pred)) if len(y_true) else 0.0,
        "macro_f1": macro_f1(confusion),
        "mcc": matthews_corrcoef(confusion),
    }
    if label_names is not None:
        for name, recall in zip(label_names, per_class_recall(confusion)):
            result[f"recall/{name}"] = float(recall)
    return result


def regression_metrics(y_true, y_pred):
    """Dict of pearson, spearman and mse."""
    y_true = np.asarray(y_true, dtype="float64").ravel()
    y_pred = np.asarray(y_pred, dtype="float64").ravel()
    return {
        "pearson": pearson(y_true, y_pred),
        "spearman": spearman(y_true, y_pred),
        "mse": float(np.mean((y_true - y_pred) ** 2)) if len(y_true) else 0.0,
    }
