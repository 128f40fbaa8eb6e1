"""Contrastive losses on (anchor, positive) embedding pairs.

Both take `y_pred` float [B, 2 * D]: the anchor's embedding, then its
positive's (`BertTextEmbedder.fit` builds it), so they are ordinary Keras
losses: `loss(y_true, y_pred)`, serialized with the model's compile config.
"""

import logging

import keras
import tensorflow as tf
from keras import ops


def _unit_parts(y_pred, parts):
    """`parts` unit-row embeddings [B, D] of y_pred [B, parts * D] (anchor first)."""
    def unit(x):
        return x / ops.maximum(ops.sqrt(ops.sum(ops.square(x), axis=-1, keepdims=True)), 1e-12)

    return [unit(x) for x in ops.split(ops.cast(y_pred, "float32"), parts, axis=-1)]


_WARNED = set()


def _warn_once(message):
    if message not in _WARNED:
        _WARNED.add(message)
        logging.getLogger("keras_bert").warning("%s", message)


def _across_replicas(tensors):
    """`tensors` ([b_r, ...] each) of every replica in sync, in replica order ([B, ...]),
    and the index in them of this replica's first row: what one process of the
    global batch would hold. On one replica: (tensors, 0).

    The gather is differentiable, so the loss of a replica's rows reaches the
    other replicas' candidates as it does in one process.
    """
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return tensors, 0
    # New tensors, on the replica's device: a gather goes to its inputs' devices.
    tensors = [tf.identity(t) for t in tensors]
    try:
        sizes = context.all_gather(tf.shape(tensors[0])[:1], axis=0)  # The last may be short.
    except RuntimeError as error:
        if "merge_call" not in str(error):
            raise
        # A replica step compiled on its own (XLA, jit_compile=True): no collective there.
        _warn_once("MultipleNegativesRankingLoss: each replica ranks only its own share of "
                   "the batch (an XLA-compiled replica step cannot gather the others'); "
                   "compile with jit_compile=False for the global batch's negatives.")
        return tensors, 0
    offset = tf.reduce_sum(sizes[:context.replica_id_in_sync_group])
    return [context.all_gather(t, axis=0) for t in tensors], offset


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

    Under a tf.distribute strategy each replica's anchors rank the
    candidates of every replica (gathered), as one process of the global
    batch would.

    A candidate that is the same text as positive i, or positive j of an
    anchor j equal to anchor i, is left out of row i's negatives (it would
    be a false negative); texts are compared by a 24-bit hash (`y_true`).

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
        keys = ops.cast(y_true, "float32")  # (b, 2 + K): this replica's rows.
        parts = keys.shape[-1]
        anchor, *candidates = _unit_parts(y_pred, parts)
        # The global batch's keys and candidates (B rows; B = b on one replica).
        (all_keys, *candidates), offset = _across_replicas([keys, *candidates])
        # Positives, then every row's negative 1, ..., negative K: (C = B * (1 + K), D).
        candidates = ops.concatenate(candidates, axis=0)
        logits = self.scale * ops.matmul(anchor, ops.transpose(candidates))  # (b, C)
        candidate_keys = ops.reshape(ops.transpose(all_keys[:, 1:]), [-1])  # (C,), same order
        batch = ops.shape(all_keys)[0]
        column = ops.arange(ops.shape(candidate_keys)[0])  # (C,)
        target = offset + ops.arange(ops.shape(keys)[0])  # (b,): row i's own positive.
        same_text = ops.equal(keys[:, 1:2], ops.expand_dims(candidate_keys, 0))
        same_anchor = ops.logical_and(
            ops.equal(keys[:, 0:1], ops.expand_dims(ops.tile(all_keys[:, 0], [parts - 1]), 0)),
            ops.expand_dims(column < batch, 0))  # Positive j of a same-text anchor j.
        own = ops.equal(ops.expand_dims(target, 1), ops.expand_dims(column, 0))
        false_negative = ops.logical_and(ops.logical_or(same_text, same_anchor),
                                         ops.logical_not(own))
        logits = ops.where(false_negative, -1e9, logits)
        # Row i's target is its own positive's column.
        log_probs = ops.log_softmax(logits, axis=-1)
        return -ops.take_along_axis(log_probs, ops.expand_dims(target, 1), axis=1)[:, 0]  # (b,)

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
