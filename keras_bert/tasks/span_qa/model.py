"""BertSpanLabeler: start and end logits for extractive question answering."""

import keras
from keras import ops

from keras_bert.layers.activations import initializer
from keras_bert.export.export import predict_text
from keras_bert.models.task import BertTask, text_inputs

_MASK_VALUE = -1e9


@keras.saving.register_keras_serializable(package="keras_bert")
class SpanLogits(keras.layers.Layer):
    """Splits [batch, seq, 2] scores into start/end logits, padding masked out.

    Call arguments:
        scores: float Tensor of shape [batch_size, seq_length, 2].
        padding_mask: int Tensor of shape [batch_size, seq_length].

    Returns:
        A dict of float32 Tensors of shape [batch_size, seq_length]:
        `start_logits`, `end_logits`; padded positions get -1e9.
    """

    def call(self, scores, padding_mask):
        scores = ops.cast(scores, "float32")
        bias = (1.0 - ops.cast(padding_mask, "float32")) * _MASK_VALUE
        return {
            "start_logits": scores[..., 0] + bias,
            "end_logits": scores[..., 1] + bias,
        }

    def compute_output_spec(self, scores, padding_mask):
        spec = keras.KerasTensor(scores.shape[:-1], dtype="float32")
        return {"start_logits": spec, "end_logits": spec}


@keras.saving.register_keras_serializable(package="keras_bert")
class BertSpanLabeler(BertTask):
    """SQuAD-style span head: a dense layer of 2 units over every token.

    Inputs: the encoder input dict of [CLS] question [SEP] context [SEP].
    Outputs (a dict): `start_logits`, `end_logits`, float32
    [batch_size, seq_length]; padded positions are -1e9 so they never win.
    Compiled by default (`from_pretrained`, or `compile()` with no
    arguments): keras_bert's AdamW as in fine-tuning, and the mean of the
    start and end sparse categorical cross-entropies on the logits
    (run_squad.py's loss), with start and end position accuracy.

    Args:
        encoder: a `BertEncoder`.

    With a preprocessor (`from_pretrained` attaches one),
    `predict((questions, contexts))` on strings returns what the export's
    `answer` signature returns, from the same code: a dict of [batch] numpy
    arrays `answer` (the text), `start`, `end` (character offsets in the
    context, -1 for no answer) and `score`. Long contexts are read in
    windows as the export does. On the integer input dict it returns the
    logits, as any Keras model.

    Example:
    >>> qa = BertSpanLabeler(encoder)
    >>> out = qa(inputs); out["start_logits"].shape  # (batch, seq)
    """

    uses_pooler = False

    def __init__(self, encoder, **kwargs):
        # === Layers ===
        self.encoder = encoder
        self.output_dense = keras.layers.Dense(
            2,
            kernel_initializer=initializer(encoder.initializer_range),
            dtype=encoder.dtype_policy,
            name="span_scores",
        )
        self.span_logits = SpanLogits(name="span_logits")

        # === Functional graph ===
        inputs = dict(encoder.input)
        sequence = encoder(inputs)["sequence_output"]
        outputs = self.span_logits(self.output_dense(sequence), inputs["padding_mask"])
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

    def default_loss(self):
        # Start and end cross-entropy, averaged (run_squad.py's total_loss).
        ce = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        return {"start_logits": ce, "end_logits": ce}

    def default_loss_weights(self):
        return {"start_logits": 0.5, "end_logits": 0.5}

    def default_metrics(self):
        return {name: [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
                for name in ("start_logits", "end_logits")}

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        texts = text_inputs(x)
        if texts is None:
            return super().predict(x, batch_size=batch_size, verbose=verbose, steps=steps,
                                   callbacks=callbacks)
        if len(texts) != 2:
            raise ValueError(
                "BertSpanLabeler.predict takes (questions, contexts): two batches of strings."
            )
        return predict_text(self, texts, batch_size=batch_size or 64)
