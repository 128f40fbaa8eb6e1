"""BertTokenClassifier: a label per token (NER, POS tagging)."""

import keras

from keras_bert.export.export import predict_text
from keras_bert.models.task import DenseHeadTask


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTokenClassifier(DenseHeadTask):
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
    text), `word_start` and `mask`; lists, 1-D arrays and string datasets
    give this same dict (pairs and 2-D string arrays are refused). On the
    integer input dict it returns the logits, as any Keras model.

    Example:
    >>> tagger = BertTokenClassifier(encoder, num_classes=9)
    >>> tagger(inputs).shape  # (batch, seq, 9)
    >>> tagger = BertTokenClassifier.from_pretrained("models/minilm-ner")
    >>> tagger.predict(["John lives in Paris."])["label"][0]
    """

    def __init__(self, encoder, num_classes, dropout_rate=None, label_names=None, **kwargs):
        super().__init__(encoder, num_classes, dropout_rate, label_names,
                         feature="sequence_output", **kwargs)

    text_columns = (1,)

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        # Lists, arrays and string datasets all return the decoded dict.
        texts = self._predict_texts(x)
        if texts is None:
            return super().predict(x, batch_size=batch_size, verbose=verbose, steps=steps,
                                   callbacks=callbacks)
        return predict_text(self, texts, batch_size=batch_size or 64)
