"""BertPretrainer: encoder + masked-LM and next-sentence heads, trained with fit."""

import keras
from keras import ops

from keras_bert.layers import MaskedLMHead, NextSentenceHead
from keras_bert.models.registry import TaskSpec, register_task
from keras_bert.models.task import BertTask


def _scale_for_replicas(loss):
    # Keras sums gradients over replicas; each replica's loss is divided by
    # their number so the step matches one large batch.
    import tensorflow as tf

    replicas = tf.distribute.get_strategy().num_replicas_in_sync
    return loss / replicas if replicas > 1 else loss


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPretrainer(BertTask):
    """BERT pretraining: masked LM + next-sentence prediction (Devlin et al.).

    The MLM output projection is the encoder's token embedding matrix (one
    variable). Loss = mean cross-entropy over real masked positions (weighted
    by `masked_weights`) + mean NSP cross-entropy. Metrics: `mlm_loss`,
    `nsp_loss`, `masked_lm_accuracy`, `nsp_accuracy`.

    Inputs (x, a dict): the encoder inputs plus
        masked_positions: int32 [batch_size, max_predictions_per_seq].
    Labels (y, a dict):
        masked_ids: int32 [batch_size, max_predictions_per_seq], original ids.
        masked_weights: float32 [batch_size, max_predictions_per_seq], 1 for
            real predictions, 0 for padding slots (optional; default all 1).
        next_sentence_labels: int32 [batch_size] (0 = IsNext, 1 = NotNext).
    Outputs (a dict):
        mlm_logits: float32 [batch_size, max_predictions_per_seq, vocab_size].
        nsp_logits: float32 [batch_size, 2].

    Args:
        encoder: a `BertEncoder`.

    Example:
    >>> pretrainer = BertPretrainer(encoder)
    >>> pretrainer.compile(optimizer="adam")
    >>> pretrainer.fit(x, y, epochs=1)
    """

    def __init__(self, encoder, **kwargs):
        # === Layers ===
        self.encoder = encoder
        self.mlm_head = MaskedLMHead(
            vocab_size=encoder.vocab_size,
            hidden_act=encoder.hidden_act,
            initializer_range=encoder.initializer_range,
            layer_norm_epsilon=encoder.layer_norm_epsilon,
            embeddings=encoder.embeddings,
            dtype=encoder.dtype_policy,
            name="mlm_head",
        )
        self.nsp_head = NextSentenceHead(
            initializer_range=encoder.initializer_range,
            dtype=encoder.dtype_policy,
            name="nsp_head",
        )

        # === Functional graph ===
        inputs = dict(encoder.input)
        inputs["masked_positions"] = keras.Input(
            shape=(None,), dtype="int32", name="masked_positions"
        )
        encoded = encoder({k: inputs[k] for k in encoder.input})
        outputs = {
            "mlm_logits": self.mlm_head(encoded["sequence_output"], inputs["masked_positions"]),
            "nsp_logits": self.nsp_head(encoded["pooled_output"]),
        }
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Metrics ===
        self.mlm_loss_tracker = keras.metrics.Mean(name="mlm_loss")
        self.nsp_loss_tracker = keras.metrics.Mean(name="nsp_loss")
        self.masked_lm_accuracy = keras.metrics.SparseCategoricalAccuracy(
            name="masked_lm_accuracy"
        )
        self.nsp_accuracy = keras.metrics.SparseCategoricalAccuracy(name="nsp_accuracy")

    def default_loss(self):
        return None  # The loss is `compute_loss`'s: MLM + NSP.

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        _check_labels(y)
        masked_ids = ops.cast(y["masked_ids"], "int32")
        weights = y.get("masked_weights")
        weights = (
            ops.ones_like(masked_ids, dtype="float32")
            if weights is None
            else ops.cast(weights, "float32")
        )
        per_token = keras.losses.sparse_categorical_crossentropy(
            masked_ids, y_pred["mlm_logits"], from_logits=True
        )  # (B, P)
        mlm_loss = ops.sum(per_token * weights) / ops.maximum(ops.sum(weights), 1.0)
        nsp_labels = ops.cast(y["next_sentence_labels"], "int32")
        nsp_loss = ops.mean(
            keras.losses.sparse_categorical_crossentropy(
                nsp_labels, y_pred["nsp_logits"], from_logits=True
            )
        )
        self.mlm_loss_tracker.update_state(mlm_loss)
        self.nsp_loss_tracker.update_state(nsp_loss)
        self.masked_lm_accuracy.update_state(masked_ids, y_pred["mlm_logits"], weights)
        self.nsp_accuracy.update_state(nsp_labels, y_pred["nsp_logits"])
        loss = mlm_loss + nsp_loss
        for extra in self.losses:
            loss = loss + ops.cast(extra, loss.dtype)
        return _scale_for_replicas(loss)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        return self.get_metrics_result()


def _check_labels(y):
    if not isinstance(y, dict) or "masked_ids" not in y or "next_sentence_labels" not in y:
        found = sorted(y) if isinstance(y, dict) else type(y).__name__
        raise ValueError(
            "BertPretrainer expects labels y as a dict with 'masked_ids', "
            "'next_sentence_labels' and optionally 'masked_weights'. "
            f"Received: {found}"
        )


register_task(TaskSpec("pretraining", model=BertPretrainer))
