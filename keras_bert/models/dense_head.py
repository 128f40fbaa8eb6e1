"""DenseHeadTask: one encoder output -> dropout -> dense -> float32 logits, and its label checks."""

import keras

from keras_bert.config import check_count, check_rate
from keras_bert.layers.activations import initializer
from keras_bert.models.task import BertTask


class DenseHeadTask(BertTask):
    """Base of the label heads: one encoder output -> dropout -> dense -> float32 logits.

    `BertClassifier` reads `pooled_output`, `BertTokenClassifier`
    `sequence_output`; the rest (layers, label checks, config) is this.

    Args:
        encoder: a `BertEncoder`.
        num_classes: int, number of labels.
        dropout_rate: float or None; None uses the encoder's dropout_rate.
        label_names: optional list of `num_classes` label strings.
        feature: str, the encoder output the head reads (set by subclasses).
        **kwargs: `BertTask` / `keras.Model` arguments (`preprocessor`, `name`).
    """

    def __init__(self, encoder, num_classes, dropout_rate=None, label_names=None, *,
                 feature, **kwargs):
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

        # === Config === (before the graph: `BertTask.__init__` compiles with the
        # defaults, which read num_classes)
        self.num_classes = num_classes
        self.dropout_rate = dropout_rate
        self.label_names = label_names
        self.uses_pooler = feature == "pooled_output"

        # === Functional graph ===
        inputs = dict(encoder.input)
        features = encoder(inputs)[feature]
        logits = self.output_dense(self.dropout(features))
        logits = keras.layers.Activation("linear", dtype="float32", name="float32_logits")(logits)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

    def task_config(self):
        return {
            "num_classes": self.num_classes,
            "dropout_rate": self.dropout_rate,
            "label_names": self.label_names,
        }


def check_labels(num_classes, label_names):
    """Validates `num_classes` and the optional `label_names` against it."""
    check_count("num_classes", num_classes)
    if label_names is not None:
        if isinstance(label_names, (str, bytes)) or not isinstance(label_names, (list, tuple)):
            raise ValueError(
                f"Expected label_names to be a list of str. Received: {label_names!r}"
            )
        label_names = [str(name) for name in label_names]
        if len(label_names) != num_classes:
            raise ValueError(
                f"label_names has {len(label_names)} names but num_classes={num_classes}. "
                f"Received: label_names={label_names}"
            )
        if len(set(label_names)) != len(label_names):
            raise ValueError(f"label_names has duplicates. Received: {label_names}")
    return label_names


def default_label_names(num_classes, label_names):
    """`label_names`, or "0".."K-1" when there are none."""
    return list(label_names) if label_names else [str(i) for i in range(num_classes)]
