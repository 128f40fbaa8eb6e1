"""SQuAD metrics: exact match and F1 over normalized answers.

As the official v1.1 / v2.0 evaluation scripts compute them (values in
[0, 1], not percent).
"""

import collections
import re
import string

import numpy as np

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
