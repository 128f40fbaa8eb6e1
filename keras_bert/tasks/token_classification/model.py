"""BertTokenClassifier: a label per token (NER, POS tagging)."""

import keras

from keras_bert.export.export import predict_text
from keras_bert.models.task import DenseHeadTask, text_inputs
from keras_bert.tasks.token_classification.metrics import IGNORE_LABEL, LabeledTokenAccuracy


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTokenClassifier(DenseHeadTask):
    """Sequence output -> dropout -> dense: one label distribution per token.

    Output: float32 logits [batch_size, seq_length, num_classes].

    Compiled by default (`from_pretrained`, or `compile()` with no
    arguments): keras_bert's AdamW as in fine-tuning, per-token sparse
    categorical cross-entropy on the logits that skips pieces labeled -1
    (not first pieces, [CLS], [SEP], padding, as the CoNLL reader labels
    them) and honors `sample_weight`, and the accuracy over labeled pieces.

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
        super().__init__(encoder, num_classes, dropout_rate, label_names,
                         feature="sequence_output", **kwargs)

    def default_loss(self):
        # Label -1 marks pieces that carry no label (not first pieces, [CLS],
        # [SEP], padding); the mean is over labeled pieces only.
        return keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, ignore_class=IGNORE_LABEL)

    def default_metrics(self):
        return [LabeledTokenAccuracy()]

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        texts = text_inputs(x)
        if texts is None:
            return super().predict(x, batch_size=batch_size, verbose=verbose, steps=steps,
                                   callbacks=callbacks)
        if len(texts) != 1:
            raise ValueError("BertTokenClassifier.predict takes one batch of texts, not pairs.")
        return predict_text(self, texts, batch_size=batch_size or 64)
