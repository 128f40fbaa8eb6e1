"""Contrastive losses on (anchor, positive) embedding pairs.

Both take `y_pred` float [B, 2 * D]: the anchor's embedding, then its
positive's (`BertTextEmbedder.fit` builds it), so they are ordinary Keras
losses: `loss(y_true, y_pred)`, serialized with the model's compile config.
"""

import keras
from keras import ops


def _unit_parts(y_pred, parts):
    """`parts` unit-row embeddings [B, D] of y_pred [B, parts * D] (anchor first)."""
    def unit(x):
        return x / ops.maximum(ops.sqrt(ops.sum(ops.square(x), axis=-1, keepdims=True)), 1e-12)

    return [unit(x) for x in ops.split(ops.cast(y_pred, "float32"), parts, axis=-1)]


@keras.saving.register_keras_serializable(package="keras_bert")
class MultipleNegativesRankingLoss(keras.losses.Loss):
    """In-batch negatives: each anchor must pick its own positive among the batch's positives.

    The loss of row i is the cross-entropy of softmax(scale * cos(anchor_i,
    positive_j)) over j with target i (van den Oord et al.'s InfoNCE;
    sentence-transformers' MultipleNegativesRankingLoss, scale 20 = a
    temperature of 0.05).

    Hard negatives: with K negative texts per pair, row i's candidates are
    the batch's B positives and its B * K negatives (every row's), so each
    anchor also ranks below its positive the hard negatives of the others.

    Duplicates: a pair's text that appears twice in a batch would make the
    other copy a false negative (the model is pushed away from its own
    positive). A candidate is therefore left out of row i's negatives when
    it is the same text as positive i (a positive or a negative of another
    pair), or when it is positive j and anchor j is the same text as
    anchor i; texts are compared by a 24-bit hash (`y_true`), so two
    different texts collide with probability about 2^-24 per pair (one
    negative fewer, never a wrong target).

    Args:
        scale: float > 0, multiplies the cosines before the softmax.

    Call arguments:
        y_true: float [B, 2 + K], the hash keys of (anchor, positive,
            negative 1..K) texts.
        y_pred: float [B, (2 + K) * D], the embeddings in the same order.
    """

    def __init__(self, scale=20.0, name="multiple_negatives_ranking_loss", **kwargs):
        super().__init__(name=name, **kwargs)
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not scale > 0:
            raise ValueError(f"Expected scale to be a number > 0. Received: scale={scale!r}")
        self.scale = float(scale)

    def call(self, y_true, y_pred):
        keys = ops.cast(y_true, "float32")  # (B, 2 + K)
        parts = keys.shape[-1]
        anchor, *candidates = _unit_parts(y_pred, parts)
        # Positives, then every row's negative 1, ..., negative K: (C = B * (1 + K), D).
        candidates = ops.concatenate(candidates, axis=0)
        logits = self.scale * ops.matmul(anchor, ops.transpose(candidates))  # (B, C)
        candidate_keys = ops.reshape(ops.transpose(keys[:, 1:]), [-1])  # (C,), same order
        batch = ops.shape(keys)[0]
        column = ops.arange(ops.shape(candidate_keys)[0])  # (C,)
        same_text = ops.equal(keys[:, 1:2], ops.expand_dims(candidate_keys, 0))
        same_anchor = ops.logical_and(
            ops.equal(keys[:, 0:1], ops.expand_dims(ops.tile(keys[:, 0], [parts - 1]), 0)),
            ops.expand_dims(column < batch, 0))  # Positive j of a same-text anchor j.
        own = ops.equal(ops.expand_dims(ops.arange(batch), 1), ops.expand_dims(column, 0))
        false_negative = ops.logical_and(ops.logical_or(same_text, same_anchor),
                                         ops.logical_not(own))
        logits = ops.where(false_negative, -1e9, logits)
        # Row i's target is column i: log_softmax at the diagonal of the positives' block.
        return -ops.diagonal(ops.log_softmax(logits, axis=-1)[:, :batch])  # (B,)

    def get_config(self):
        return {**super().get_config(), "scale": self.scale}


@keras.saving.register_keras_serializable(package="keras_bert")
class CosineSimilarityLoss(keras.losses.Loss):
    """Scored pairs (STS-style): (cos(anchor, positive) - score)^2, scores in [-1, 1].

    Call arguments:
        y_true: float [B], the pairs' scores.
        y_pred: float [B, 2 * D], anchor then positive embedding.
    """

    def __init__(self, name="cosine_similarity_loss", **kwargs):
        super().__init__(name=name, **kwargs)

    def call(self, y_true, y_pred):
        anchor, positive = _unit_parts(y_pred, 2)
        cosine = ops.sum(anchor * positive, axis=-1)  # (B,)
        return ops.square(cosine - ops.reshape(ops.cast(y_true, "float32"), [-1]))
