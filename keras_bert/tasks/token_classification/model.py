"""BertTokenClassifier: a label per token (NER, POS tagging)."""

import keras

from keras_bert.config import check_rate
from keras_bert.layers.activations import initializer
from keras_bert.export.export import predict_text
from keras_bert.models.task import BertTask, check_labels, text_inputs


@keras.saving.register_keras_serializable(package="keras_bert")
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

    With a preprocessor (`from_pretrained` attaches one), `predict(texts)`
    on strings returns what the export's `tag` signature returns, from the
    same code: a dict of [batch, tokens] numpy arrays `tokens`, `label`,
    `label_id`, `probability`, `start`, `end` (character offsets in the
    text), `word_start` and `mask`. On the integer input dict it returns the
    logits, as any Keras model.

    Example:
    >>> tagger = BertTokenClassifier(encoder, num_classes=9)
    >>> tagger(inputs).shape  # (batch, seq, 9)
    >>> tagger = BertTokenClassifier.from_pretrained("models/minilm-ner")
    >>> tagger.predict(["John lives in Paris."])["label"][0]
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
        # The head reads sequence_output only: the pooler gets no gradient,
        # and Keras would warn "Gradients do not exist for variables
        # ['pooler/dense/kernel', ...]" and ask for a missing loss. Its weights stay (and
        # load and save as ever); they are just not trained.
        encoder.pooler.trainable = False

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

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        texts = text_inputs(x)
        if texts is None:
            return super().predict(x, batch_size=batch_size, verbose=verbose, steps=steps,
                                   callbacks=callbacks)
        if len(texts) != 1:
            raise ValueError("BertTokenClassifier.predict takes one batch of texts, not pairs.")
        return predict_text(self, texts, batch_size=batch_size or 64)
