"""BertTokenClassifier: a label per token (NER, POS tagging)."""

import keras

from keras_bert.config import check_rate
from keras_bert.layers.activations import initializer
from keras_bert.models.classifier import check_labels
from keras_bert.models.model_dir import register_task
from keras_bert.models.task import BertTask


@keras.saving.register_keras_serializable(package="keras_bert")
@register_task("token_classification")
class BertTokenClassifier(BertTask):
    """Sequence output -> dropout -> dense: one label distribution per token.

    Output: float32 logits [batch_size, seq_length, num_classes]. Train with
    a per-token loss and `sample_weight` 0 at padding and at tokens that
    carry no label (e.g. ## continuations when labels go on the first piece).

    Args:
        encoder: a `BertEncoder`.
        num_classes: int, number of tags.
        dropout_rate: float or None; None uses the encoder's dropout_rate.
        label_names: optional list of `num_classes` tag strings (e.g. "B-PER").

    Example:
    >>> tagger = BertTokenClassifier(encoder, num_classes=9)
    >>> tagger(inputs).shape  # (batch, seq, 9)
    """

    def __init__(self, encoder, num_classes, dropout_rate=None, label_names=None, **kwargs):
        label_names = check_labels(num_classes, label_names)
        rate = encoder.dropout_rate if dropout_rate is None else dropout_rate
        check_rate("dropout_rate", rate)

        # === Layers ===
        self.encoder = encoder
        self.dropout = keras.layers.Dropout(rate, dtype=encoder.dtype_policy, name="dropout")
        self.output_dense = keras.layers.Dense(
            num_classes,
            kernel_initializer=initializer(encoder.initializer_range),
            dtype=encoder.dtype_policy,
            name="logits",
        )

        # === Functional graph ===
        inputs = dict(encoder.input)
        sequence = encoder(inputs)["sequence_output"]
        logits = self.output_dense(self.dropout(sequence))
        logits = keras.layers.Activation("linear", dtype="float32", name="float32_logits")(logits)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

        # === Config ===
        self.num_classes = num_classes
        self.dropout_rate = dropout_rate
        self.label_names = label_names

    def task_config(self):
        return {
            "num_classes": self.num_classes,
            "dropout_rate": self.dropout_rate,
            "label_names": self.label_names,
        }
