"""BertClassifier: sentence and sentence-pair classification (or regression)."""

import keras

from keras_bert.config import check_rate
from keras_bert.layers.activations import initializer
from keras_bert.models.task import BertTask, check_labels


@keras.saving.register_keras_serializable(package="keras_bert")
class BertClassifier(BertTask):
    """The paper's fine-tuning head: pooled [CLS] -> dropout -> dense.

    Inputs: the encoder input dict (one sentence, or a pair packed as
    [CLS] A [SEP] B [SEP] with segment ids 0/1).
    Output: float32 logits [batch_size, num_classes] (for regression,
    num_classes=1 and the output is the predicted value).

    Args:
        encoder: a `BertEncoder`.
        num_classes: int, number of labels (1 for regression, e.g. STS-B).
        dropout_rate: float or None; None uses the encoder's dropout_rate.
        label_names: optional list of `num_classes` label strings, saved in
            task.json and used by exports.

    Example:
    >>> classifier = BertClassifier(encoder, num_classes=3)
    >>> classifier.compile(optimizer="adam",
    ...     loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    >>> classifier.fit(x, labels)
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
        pooled = encoder(inputs)["pooled_output"]
        logits = self.output_dense(self.dropout(pooled))
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
