"""Retrieval and scored-pair metrics of embeddings, in numpy (no scikit-learn, no scipy).

- retrieval on held-out (anchor, positive) pairs: each anchor ranks all the
  positives by cosine similarity; recall@k is the share of anchors whose own
  positive is among the first k, MRR the mean of 1 / its rank (rank 1 =
  best). Equal scores rank the own positive after the others (no credit for a tie);
- Spearman's rank correlation of the cosines with the pairs' scores
  (average ranks for ties), for STS-style data.
"""

import numpy as np

from keras_bert.tasks.text_embedding.search import cosine_matrix, unit_rows
from keras_bert.training.correlation import spearman


def positive_ranks(anchors, positives, targets=None):
    """int64 [N]: the 1-based rank of anchor i's own positive among all M positives.

    targets: None (anchor i's positive is positives[i], M == N) or int [N],
    the index of each anchor's positive (several anchors may share one).
    """
    scores = cosine_matrix(anchors, positives)  # (N, M)
    targets = np.arange(len(scores)) if targets is None else np.asarray(targets)
    own = scores[np.arange(len(scores)), targets][:, None]
    # The own positive counts itself, and every other positive scoring at
    # least as high ranks above it.
    return np.sum(scores >= own, axis=1).astype("int64")


def retrieval_metrics(anchors, positives, ks=(1, 10), targets=None):
    """{"recall@K": float for K in ks, "mrr": float} of embeddings [N, D] and [M, D].

    targets: None (pair i is anchors[i], positives[i]) or int [N], the row
    of `positives` that is each anchor's own (`reader.retrieval_targets`).

    Example:
    >>> retrieval_metrics(np.eye(3), np.eye(3))
    {'recall@1': 1.0, 'recall@10': 1.0, 'mrr': 1.0}
    """
    anchors, positives = np.asarray(anchors), np.asarray(positives)
    if (targets is None and len(anchors) != len(positives)) or len(anchors) == 0:
        raise ValueError(f"Expected as many positives as anchors (at least one). Received: "
                         f"{len(anchors)} anchors and {len(positives)} positives.")
    ranks = positive_ranks(anchors, positives, targets)
    result = {f"recall@{k}": float(np.mean(ranks <= k)) for k in ks}
    result["mrr"] = float(np.mean(1.0 / ranks))
    return result


def pair_metrics(anchors, positives, scores=None, targets=None):
    """Held-out pairs' metrics: `retrieval_metrics`, or {"spearman": rho} of the
    pairs' cosines [N] against `scores` (float [N]) for scored pairs.

    Args:
        anchors, positives: embeddings [N, D] and [M, D] (M == N for scored pairs).
        scores: None or float [N].
        targets: see `retrieval_metrics`.
    """
    if scores is None:
        return retrieval_metrics(anchors, positives, targets=targets)
    cosine = np.sum(unit_rows(anchors) * unit_rows(positives), axis=-1)  # (N,)
    return {"spearman": spearman(cosine, scores)}
