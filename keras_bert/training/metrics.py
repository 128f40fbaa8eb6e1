"""Evaluation metrics of the fine-tuning tasks, in numpy (no scikit-learn).

- classification: accuracy, macro-F1, Matthews correlation (multi-class,
  Gorodkin's R_K, as sklearn.metrics.matthews_corrcoef);
- regression (STS-B): Pearson and Spearman correlation, MSE;
- token classification: entity-level precision / recall / F1 with exact span
  match, chunks read from BIO / IOB2 (and IOBES) tags the way seqeval's
  default mode (conlleval) reads them;
- SQuAD: exact match and F1 over normalized answers as the official v1.1 /
  v2.0 evaluation scripts compute them (values in [0, 1], not percent).
"""

import collections
import re
import string

import numpy as np


# --- classification and regression ---------------------------------------


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


def classification_metrics(y_true, y_pred, num_classes):
    """Dict of accuracy, macro_f1 and mcc for integer labels and predictions."""
    y_true = np.asarray(y_true).ravel()
    y_pred = np.asarray(y_pred).ravel()
    confusion = confusion_matrix(y_true, y_pred, num_classes)
    return {
        "accuracy": float(np.mean(y_true == y_pred)) if len(y_true) else 0.0,
        "macro_f1": macro_f1(confusion),
        "mcc": matthews_corrcoef(confusion),
    }


def pearson(x, y):
    """Pearson correlation of two float vectors; 0 when either is constant."""
    x = np.asarray(x, dtype="float64").ravel()
    y = np.asarray(y, dtype="float64").ravel()
    x, y = x - x.mean(), y - y.mean()
    denominator = np.sqrt((x @ x) * (y @ y))
    return float(x @ y / denominator) if denominator > 0 else 0.0


def rankdata(values):
    """Ranks from 1, ties get the mean of their ranks (scipy's "average")."""
    values = np.asarray(values, dtype="float64").ravel()
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    # Group equal values; each group's rank is the mean of its positions + 1.
    starts = np.r_[True, sorted_values[1:] != sorted_values[:-1]]
    group = np.cumsum(starts) - 1
    first = np.flatnonzero(starts)
    last = np.r_[first[1:], len(values)] - 1
    ranks = np.empty(len(values))
    ranks[order] = (first[group] + last[group]) / 2 + 1
    return ranks


def spearman(x, y):
    """Spearman rank correlation (Pearson of average ranks)."""
    return pearson(rankdata(x), rankdata(y))


def regression_metrics(y_true, y_pred):
    """Dict of pearson, spearman and mse."""
    y_true = np.asarray(y_true, dtype="float64").ravel()
    y_pred = np.asarray(y_pred, dtype="float64").ravel()
    return {
        "pearson": pearson(y_true, y_pred),
        "spearman": spearman(y_true, y_pred),
        "mse": float(np.mean((y_true - y_pred) ** 2)) if len(y_true) else 0.0,
    }


# --- entities from tags ----------------------------------------------------


def _split_tag(tag):
    # "B-PER" -> ("B", "PER"); "O" -> ("O", ""); "I-ORG-X" -> ("I", "ORG-X").
    if tag in ("O", ""):
        return "O", ""
    prefix, _, kind = tag.partition("-")
    return prefix, kind


def _ends(prev_prefix, prefix, prev_kind, kind):
    if prev_prefix in ("E", "S"):
        return True
    if prev_prefix in ("B", "I") and prefix in ("B", "S", "O"):
        return True
    return prev_prefix != "O" and prev_kind != kind


def _starts(prev_prefix, prefix, prev_kind, kind):
    if prefix in ("B", "S"):
        return True
    if prev_prefix in ("E", "S", "O") and prefix in ("E", "I"):
        return True
    return prefix != "O" and prev_kind != kind


def get_entities(tags):
    """Chunks of one tag sequence as (type, first, last) tuples, `last` inclusive.

    Reads tags as conlleval and seqeval's default mode do: B- starts a
    chunk; I- continues one of the same type, and starts a new chunk after
    O or after a chunk of another type (IOB1-style input is still read);
    E- and S- (IOBES) end a chunk.

    Example:
    >>> get_entities(["B-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-ORG"])
    [('PER', 0, 1), ('LOC', 3, 3), ('LOC', 4, 4), ('ORG', 5, 5)]
    """
    entities = []
    prev_prefix, prev_kind, begin = "O", "", 0
    for i, tag in enumerate(list(tags) + ["O"]):
        prefix, kind = _split_tag(tag)
        if _ends(prev_prefix, prefix, prev_kind, kind):
            entities.append((prev_kind, begin, i - 1))
        if _starts(prev_prefix, prefix, prev_kind, kind):
            begin = i
        prev_prefix, prev_kind = prefix, kind
    return entities


def entity_metrics(true_tags, pred_tags):
    """Micro-averaged entity precision, recall and F1 with exact span match.

    An entity counts as correct only when the predicted chunk has the same
    type, first and last word as a true chunk (seqeval's default
    `precision_score`, `recall_score`, `f1_score`).

    Args:
        true_tags: list of sentences, each a list of tag strings.
        pred_tags: the same shape.

    Returns:
        Dict of precision, recall, f1, and per type `f1/TYPE`; also the
        counts num_true, num_pred, num_correct.

    Example:
    >>> y_true = [["O", "O", "O", "B-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]
    >>> y_pred = [["O", "O", "B-MISC", "I-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]
    >>> entity_metrics(y_true, y_pred)["f1"]
    0.5
    """
    if len(true_tags) != len(pred_tags):
        raise ValueError(f"{len(true_tags)} true sentences but {len(pred_tags)} predicted ones.")
    true_set, pred_set = set(), set()
    for i, (true, pred) in enumerate(zip(true_tags, pred_tags)):
        if len(true) != len(pred):
            raise ValueError(
                f"Sentence {i} has {len(true)} true tags but {len(pred)} predicted tags."
            )
        true_set.update((i,) + e for e in get_entities(true))
        pred_set.update((i,) + e for e in get_entities(pred))
    correct = true_set & pred_set

    def prf(num_correct, num_pred, num_true):
        precision = num_correct / num_pred if num_pred else 0.0
        recall = num_correct / num_true if num_true else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return precision, recall, f1

    precision, recall, f1 = prf(len(correct), len(pred_set), len(true_set))
    result = {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "num_true": len(true_set),
        "num_pred": len(pred_set),
        "num_correct": len(correct),
    }
    count = lambda entities: collections.Counter(e[1] for e in entities)  # noqa: E731
    per_true, per_pred, per_correct = count(true_set), count(pred_set), count(correct)
    for kind in sorted(set(per_true) | set(per_pred)):
        result[f"f1/{kind}"] = prf(per_correct[kind], per_pred[kind], per_true[kind])[2]
    return result


# --- SQuAD -------------------------------------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text):
    """The official SQuAD normalization: lower case, drop punctuation and
    articles (a, an, the), collapse whitespace.

    Example:
    >>> normalize_answer("  The  Eiffel-Tower! ")
    'eiffeltower'
    """
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def squad_exact(prediction, truth):
    """1 if the normalized strings are equal, else 0."""
    return int(normalize_answer(prediction) == normalize_answer(truth))


def squad_f1(prediction, truth):
    """Token-overlap F1 of normalized answers (v2.0 rule: two empty answers score 1)."""
    pred_tokens = normalize_answer(prediction).split()
    true_tokens = normalize_answer(truth).split()
    if not pred_tokens or not true_tokens:
        return float(pred_tokens == true_tokens)
    common = collections.Counter(pred_tokens) & collections.Counter(true_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0.0
    precision = num_same / len(pred_tokens)
    recall = num_same / len(true_tokens)
    return 2 * precision * recall / (precision + recall)


def squad_metrics(predictions, answers):
    """Exact match and F1 over questions, as the official scripts.

    Each question scores the best over its gold answers. A question without
    gold answers (SQuAD v2.0 unanswerable) has the single gold answer "",
    so only an empty prediction scores 1.

    Args:
        predictions: dict {question id: predicted text ("" = no answer)}.
        answers: dict {question id: list of gold answer texts}.

    Returns:
        Dict of exact and f1 (in [0, 1]), num_questions, and when both kinds
        occur has_answer_exact/f1 and no_answer_exact/f1.

    Example:
    >>> squad_metrics({"q1": "the Broncos"}, {"q1": ["Denver Broncos", "Broncos"]})
    {'exact': 1.0, 'f1': 1.0, 'num_questions': 1}
    """
    exact, f1, has_answer = [], [], []
    for qid, golds in answers.items():
        golds = [g for g in golds if normalize_answer(g)] or [""]
        prediction = predictions.get(qid, "")
        exact.append(max(squad_exact(prediction, g) for g in golds))
        f1.append(max(squad_f1(prediction, g) for g in golds))
        has_answer.append(golds != [""])
    exact, f1, has_answer = np.array(exact), np.array(f1), np.array(has_answer, dtype=bool)
    result = {
        "exact": float(exact.mean()) if len(exact) else 0.0,
        "f1": float(f1.mean()) if len(f1) else 0.0,
        "num_questions": len(exact),
    }
    if has_answer.any() and not has_answer.all():
        result.update(
            has_answer_exact=float(exact[has_answer].mean()),
            has_answer_f1=float(f1[has_answer].mean()),
            no_answer_exact=float(exact[~has_answer].mean()),
            no_answer_f1=float(f1[~has_answer].mean()),
        )
    return result
