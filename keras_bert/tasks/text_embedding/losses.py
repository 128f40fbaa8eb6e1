"""Contrastive losses on (anchor, positive) embedding pairs.

Both take `y_pred` float [B, 2 * D]: the anchor's embedding, then its
positive's (`BertTextEmbedder.fit` builds it), so they are ordinary Keras
losses: `loss(y_true, y_pred)`, serialized with the model's compile config.
"""

import keras
from keras import ops


def _halves(y_pred):
    """(anchor [B, D], positive [B, D]) as unit rows."""
    anchor, positive = ops.split(ops.cast(y_pred, "float32"), 2, axis=-1)

    def unit(x):
        return x / ops.maximum(ops.sqrt(ops.sum(ops.square(x), axis=-1, keepdims=True)), 1e-12)

    return unit(anchor), unit(positive)


@keras.saving.register_keras_serializable(package="keras_bert")
class MultipleNegativesRankingLoss(keras.losses.Loss):
    """In-batch negatives: each anchor must pick its own positive among the batch's positives.

    The loss of row i is the cross-entropy of softmax(scale * cos(anchor_i,
    positive_j)) over j with target i (van den Oord et al.'s InfoNCE;
    sentence-transformers' MultipleNegativesRankingLoss, scale 20 = a
    temperature of 0.05).

    Duplicates: a pair's text that appears twice in a batch would make the
    other copy a false negative (the model is pushed away from its own
    positive). Column j is therefore left out of row i's negatives when
    positive j is the same text as positive i, or anchor j the same text as
    anchor i; texts are compared by a 24-bit hash (`y_true`), so two
    different texts collide with probability about 2^-24 per pair (one
    negative fewer, never a wrong target).

    Args:
        scale: float > 0, multiplies the cosines before the softmax.

    Call arguments:
        y_true: float [B, 2], the hash keys of (anchor, positive) texts.
        y_pred: float [B, 2 * D], anchor then positive embedding.
    """

    def __init__(self, scale=20.0, name="multiple_negatives_ranking_loss", **kwargs):
        super().__init__(name=name, **kwargs)
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not scale > 0:
            raise ValueError(f"Expected scale to be a number > 0. Received: scale={scale!r}")
        self.scale = float(scale)

    def call(self, y_true, y_pred):
        anchor, positive = _halves(y_pred)
        logits = self.scale * ops.matmul(anchor, ops.transpose(positive))  # (B, B)
        keys = ops.cast(y_true, "float32")  # (B, 2)
        same_anchor = ops.equal(ops.expand_dims(keys[:, 0], 1), ops.expand_dims(keys[:, 0], 0))
        same_positive = ops.equal(ops.expand_dims(keys[:, 1], 1),
                                  ops.expand_dims(keys[:, 1], 0))
        diagonal = ops.eye(ops.shape(logits)[0], dtype="bool")
        false_negative = ops.logical_and(ops.logical_or(same_anchor, same_positive),
                                         ops.logical_not(diagonal))
        logits = ops.where(false_negative, -1e9, logits)
        # Row i's target is column i: log_softmax at the diagonal.
        return -ops.diagonal(ops.log_softmax(logits, axis=-1))  # (B,)

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
        anchor, positive = _halves(y_pred)
        cosine = ops.sum(anchor * positive, axis=-1)  # (B,)
        return ops.square(cosine - ops.reshape(ops.cast(y_true, "float32"), [-1]))
