"""TextEmbedderServingModule: raw text -> one embedding per text, and the cosine of text pairs."""

import tensorflow as tf

from keras_bert.export.serving_module import STRINGS, BertServingModule, check_same_batch


def row_cosine(a, b):
    """float32 [B]: the cosine of each row of a [B, D] with the same row of b [B, D]."""
    dot = tf.reduce_sum(a * b, axis=-1)
    norms = tf.sqrt(tf.reduce_sum(a * a, axis=-1) * tf.reduce_sum(b * b, axis=-1))
    return dot / tf.maximum(norms, 1e-12)


class TextEmbedderServingModule(BertServingModule):
    """Serving signatures of a `BertTextEmbedder`.

    serving_default / embedding, on `text` string [B]:
        embedding   float32 [B, D]   the model's output (unit rows when the
                                     model normalizes; D is projection_dim
                                     or the hidden size)
    similarity, on `text` and `text_b` string [B] each:
        similarity  float32 [B]      cosine of embedding(text) and
                                     embedding(text_b), row by row

    `model.predict(texts)` and `model.similarity(a, b, pairwise=True)` run
    these same functions in Python. The base signatures (embed, encode,
    preprocess) stay: `embed`'s mean_embedding is the encoder's unnormalized
    mean, not this task's head.

    Args:
        model: a `BertTextEmbedder`.
        **kwargs: `BertServingModule` arguments.
    """

    SIGNATURES = {**BertServingModule.SIGNATURES, "embedding": "embedding",
                  "similarity": "similarity"}
    DEFAULT_SIGNATURE = "embedding"

    def __init__(self, model, preprocessor, **kwargs):
        self.pooling = model.pooling
        self.normalize = model.normalize
        super().__init__(model, preprocessor, **kwargs)

    def export_metadata(self):
        return {"pooling": self.pooling, "normalize": self.normalize}

    def _define_signatures(self):
        super()._define_signatures()
        self.embedding = tf.function(self._embedding, input_signature=[STRINGS], autograph=False)
        self.similarity = tf.function(self._similarity, input_signature=[STRINGS, STRINGS],
                                      autograph=False)

    def _embedding(self, text):
        return {"embedding": self.run_model(self.preprocess_texts((text,)))}  # (B, D)

    def _similarity(self, text, text_b):
        text, text_b = check_same_batch(text, text_b)
        # Two batches, each padded to its own longest text, as `embedding` pads one.
        first = self._embedding(text)["embedding"]
        second = self._embedding(text_b)["embedding"]
        return {"similarity": row_cosine(first, second)}
