"""MaskedLMServingModule: raw text with [MASK] in it -> the top-k tokens for each [MASK]."""

import tensorflow as tf

from keras_bert.export.serving_module import IDS, STRINGS, BertServingModule
from keras_bert.export.serving_kernels import serving_kernels
from keras_bert.tasks.masked_lm.preprocessor import BertMaskedLMPreprocessor

#: Candidates per [MASK] that `fill_mask` returns.
DEFAULT_TOP_K = 5


class MaskedLMServingModule(BertServingModule):
    """Serving signatures of a `BertMaskedLM`.

    serving_default / fill_mask, on `text` string [B] with "[MASK]" written in it:
        tokens     string [B, M, k]   the k likeliest tokens for each [MASK], best first
        ids        int32 [B, M, k]    their ids
        scores     float32 [B, M, k]  their probabilities (softmax over the vocabulary)
        positions  int32 [B, M]       where each [MASK] sits in the packed sequence

    M is the most [MASK]s of a text in the batch; a text with fewer has
    padding slots at the end (positions 0, ids 0, tokens "", scores 0). A
    [MASK] cut off by `max_seq_length` is not predicted. `BertMaskedLM.predict`
    on strings runs this same function.

    Args:
        model: a `BertMaskedLM`.
        preprocessor: its `BertMaskedLMPreprocessor` (text -> ids, "[MASK]" -> the mask id).
        top_k: int >= 1, candidates per [MASK] (at most the vocabulary size).
        **kwargs: `BertServingModule` arguments.
    """

    SIGNATURES = {**BertServingModule.SIGNATURES, "fill_mask": "fill_mask"}
    DEFAULT_SIGNATURE = "fill_mask"
    TASK_OPTIONS = ("top_k",)

    def __init__(self, model, preprocessor, top_k=DEFAULT_TOP_K, **kwargs):
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not (
                1 <= top_k <= model.encoder.vocab_size):
            raise ValueError(
                f"Expected top_k to be an int in [1, {model.encoder.vocab_size}] (the "
                f"vocabulary size). Received: top_k={top_k!r}")
        self.top_k = top_k
        # A plain BertPreprocessor (an exported model directory's) packs alike; the
        # masked-LM one adds reading "[MASK]" in text.
        preprocessor = BertMaskedLMPreprocessor.from_preprocessor(preprocessor)
        # The ids' tokens, for the `tokens` output (one constant in the graph).
        self.vocabulary = tf.constant(preprocessor.tokenizer.vocabulary, tf.string)
        super().__init__(model, preprocessor, **kwargs)
        self._keras.mlm_fn = tf.function(
            self._run_mlm, input_signature=[IDS] * 4, jit_compile=self.jit_compile,
            autograph=False)

    def export_metadata(self):
        return {"top_k": self.top_k, "mask_token": self._keras.preprocessor.mask_token}

    def _define_signatures(self):
        super()._define_signatures()
        self.fill_mask = tf.function(self._fill_mask, input_signature=[STRINGS], autograph=False)

    def _fill_mask(self, text):
        inputs = self._keras.preprocessor.fill_mask_inputs(self.preprocess_texts((text,)))
        positions = inputs["masked_positions"]  # (B, M)
        vocab_size = self._keras.encoder.vocab_size
        # An empty batch skips the model: the head's gather of positions fails on 0 rows.
        logits = tf.cond(
            tf.shape(positions)[0] > 0,
            lambda: self._keras.mlm_fn(inputs["token_ids"], inputs["segment_ids"],
                                       inputs["padding_mask"], positions),
            lambda: tf.zeros([0, tf.shape(positions)[1], vocab_size], tf.float32),
        )  # (B, M, V)
        scores, ids = tf.math.top_k(tf.nn.softmax(logits, axis=-1), k=self.top_k)  # (B, M, k)
        used = tf.expand_dims(positions > 0, -1)  # (B, M, 1): position 0 is [CLS], never a [MASK]
        ids = tf.where(used, ids, 0)
        return {
            "tokens": tf.where(used, tf.gather(self.vocabulary, ids), ""),
            "ids": ids,
            "scores": tf.where(used, scores, 0.0),
            "positions": positions,
        }

    def _run_mlm(self, token_ids, segment_ids, padding_mask, masked_positions):
        with serving_kernels(self._keras.model, self.serving_kernels, self._keras.halves):
            logits = self._keras.model(
                {"token_ids": token_ids, "segment_ids": segment_ids,
                 "padding_mask": padding_mask, "masked_positions": masked_positions},
                training=False)
        if isinstance(logits, dict):  # With the next-sentence head.
            logits = logits["mlm_logits"]
        return tf.cast(logits, tf.float32)  # (B, M, V)
