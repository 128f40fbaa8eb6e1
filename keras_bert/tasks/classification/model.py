"""BertClassifier: sentence and sentence-pair classification (or regression)."""

import keras

from keras_bert.models.task import DenseHeadTask
from keras_bert.tasks.classification.serving import ClassifierServingModule


@keras.saving.register_keras_serializable(package="keras_bert")
class BertClassifier(DenseHeadTask):
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

    task_name = "classification"
    serving_module_class = ClassifierServingModule

    def __init__(self, encoder, num_classes, dropout_rate=None, label_names=None, **kwargs):
        super().__init__(encoder, num_classes, dropout_rate, label_names,
                         feature="pooled_output", **kwargs)
