"""BertClassifier: sentence and sentence-pair classification (or regression)."""

import keras

from keras_bert.models.dense_head import DenseHeadTask
from keras_bert.models.windowed import WindowedTask
from keras_bert.tasks.classification.serving import ClassifierServingModule


@keras.saving.register_keras_serializable(package="keras_bert")
class BertClassifier(WindowedTask, DenseHeadTask):
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
        windows: None (texts are truncated at max_seq_length), or a dict
            {"stride": 128, "max_windows": 8, "combine": "mean"}: `predict`
            on strings and exports read a long text as overlapping windows
            of max_seq_length, `stride` tokens apart (at most `max_windows`),
            and combine the window logits ("mean" or "max"). Saved in
            task.json; `set_windows` changes it. `fit` and `evaluate` still
            read the first max_seq_length tokens.

    Strings work after `from_pretrained`: it attaches a preprocessor, so
    `fit`, `evaluate` and `predict` take raw text, pairs `(texts_a, texts_b)`
    or a batched dataset of `(texts, labels)`, as `BertTask` says.

    Compiled at construction (unless `compile=False`): keras_bert's fine-tuning AdamW, sparse
    categorical cross-entropy on the logits (mean squared error for
    num_classes=1) and accuracy (mean absolute error). A loss that reads
    probabilities is refused.

    Example:
    >>> classifier = BertClassifier.from_pretrained("models/minilm", num_classes=3,
    ...                                             label_names=["neg", "neu", "pos"])
    >>> classifier.fit(["what a day", "not again"], [2, 0], epochs=1)
    >>> classifier.predict(["what a day"]).argmax(-1)
    >>> classifier = BertClassifier(encoder, num_classes=3)  # Integer inputs.
    >>> classifier.fit(inputs, labels)

    With windows, `predict(texts)` returns a dict: `logits` [N, num_classes]
    (combined over each text's windows) and `num_windows` int32 [N]:
    >>> classifier.set_windows({"stride": 128, "max_windows": 8})
    >>> classifier.predict(["a review of 900 tokens ..."])["num_windows"]
    array([7], dtype=int32)
    """

    task_name = "classification"
    serving_module_class = ClassifierServingModule

    def __init__(self, encoder, num_classes, dropout_rate=None, label_names=None, windows=None,
                 **kwargs):
        self._init_windows(windows)
        super().__init__(encoder, num_classes, dropout_rate, label_names,
                         feature="pooled_output", **kwargs)

    def task_config(self):
        return {**super().task_config(), **self.windows_config()}

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        texts = None if self.windows is None else self._predict_texts(x)
        if texts is None:
            return super().predict(x, batch_size=batch_size, verbose=verbose, steps=steps,
                                   callbacks=callbacks)
        # Windows: the export's code (serving.py), logits combined per text.
        if len(texts) != 1:
            raise ValueError(
                f"This classifier reads texts in windows (windows={self.windows}), one text "
                f"per example; it was given pairs. Call set_windows(None) to classify pairs.")
        return self.predict_strings(texts, self.serving_module()._keras.logits_fn, batch_size)

    def default_loss(self):
        # Regression (num_classes=1, e.g. STS-B): the output is the value itself.
        if self.num_classes == 1:
            return keras.losses.MeanSquaredError()
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def default_metrics(self):
        if self.num_classes == 1:
            return [keras.metrics.MeanAbsoluteError(name="mae")]
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
