"""BertSpanLabeler: start and end logits for extractive question answering."""

import numbers

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from keras_bert.layers.activations import initializer
from keras_bert.models.task import BertTask
from keras_bert.models.task_inputs import text_inputs
from keras_bert.tasks.span_qa.serving import SpanQAServingModule
from keras_bert.tasks.span_qa.windows import resolve_query_length

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
        # Two distinct tensors: a functional model tells outputs apart by
        # object, and one spec for both made `end_logits` return the start.
        return {name: keras.KerasTensor(scores.shape[:-1], dtype="float32")
                for name in ("start_logits", "end_logits")}


@keras.saving.register_keras_serializable(package="keras_bert")
class BertSpanLabeler(BertTask):
    """SQuAD-style span head: a dense layer of 2 units over every token.

    Inputs: the encoder input dict of [CLS] question [SEP] context [SEP].
    Outputs (a dict): `start_logits`, `end_logits`, float32
    [batch_size, seq_length]; padded positions are -1e9 so they never win.
    Compiled by default (`BertTask`): the mean of the start and end sparse
    categorical cross-entropies on the logits (run_squad.py's loss), with
    start and end position accuracy.

    Args:
        encoder: a `BertEncoder`.

    With a preprocessor (`from_pretrained` attaches one),
    `predict((questions, contexts))` on strings returns the export's
    `answer` dict, from the same code (`SpanQAServingModule`); on the
    integer input dict, the logits.

    Example:
    >>> qa = BertSpanLabeler(encoder)
    >>> out = qa(inputs); out["start_logits"].shape  # (batch, seq)

    `fit` and `evaluate` also take SQuAD's answers as they come:
    `fit((questions, contexts), answers)`, one answer entry per question,
    each `{"text": [...], "answer_start": [...]}` (character offsets into
    the context; a bare str / int for a single answer; empty lists for a
    SQuAD v2.0 question without answer), or columns: Hugging Face's form
    `{"text": [[...], ...], "answer_start": [[...], ...]}`, or one answer
    per question `{"text": ["John", ...], "answer_start": [0, ...]}`. Contexts are cut
    into windows and answers labeled as the SQuAD reader does
    (`reader.squad_features`), with task.json's `doc_stride` and
    `max_query_length`. An answer whose offsets do not match its text is an error.

    >>> qa.fit((["Who lives in Paris?"], ["John lives in Paris."]),
    ...        [{"text": ["John"], "answer_start": [0]}])
    """

    predicts_like_export = True  # predict(texts) returns the export's answer dict.
    task_name = "span_qa"
    serving_module_class = SpanQAServingModule
    uses_pooler = False
    text_columns = (2,)

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
        ce = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        return {"start_logits": ce, "end_logits": ce}

    def default_loss_weights(self):
        return {"start_logits": 0.5, "end_logits": 0.5}

    def default_metrics(self):
        return {name: [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
                for name in ("start_logits", "end_logits")}

    def _text_dataset(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False):
        """(questions, contexts) with SQuAD answers -> batched (inputs, positions); else as BertTask."""
        texts = text_inputs(x)
        if texts is None or len(texts) != 2 or not _is_answers(y):
            return super()._text_dataset(x, y, sample_weight, batch_size, shuffle)
        from keras_bert.tasks.span_qa import reader as squad

        preprocessor = self._require_preprocessor()
        if sample_weight is not None:
            raise ValueError(
                "sample_weight is not taken with SQuAD answers: a question's windows are "
                "weighed alike. Pass the integer input dict to weigh windows yourself.")
        questions, contexts = (_strings(t) for t in texts)
        if len(questions) != len(contexts):
            raise ValueError(
                f"Expected as many contexts as questions. Received: {len(questions)} "
                f"questions and {len(contexts)} contexts.")
        data = squad.squad_data(questions, contexts, _answer_rows(y, len(questions)))
        info = getattr(self, "task_info", None) or {}
        max_seq_length = preprocessor.truncation_length
        # As the serving module: the saved length, checked (never cut), or its default.
        max_query_length = resolve_query_length(max_seq_length, info.get("max_query_length"),
                                                preprocessor.packer.pair_separator)
        features = squad.squad_features(
            data, preprocessor, info.get("doc_stride", 128), max_query_length, training=True)
        if data.report.num_skipped:
            raise ValueError(f"{data.report.messages[-1]}. Fix or leave out that answer.")
        dataset = squad.squad_dataset(features).apply(
            tf.data.experimental.assert_cardinality(len(features)))
        if shuffle:
            dataset = dataset.shuffle(max(len(features), 1), reshuffle_each_iteration=True)
        return dataset.padded_batch(batch_size or 32).prefetch(tf.data.AUTOTUNE)


def _strings(texts):
    """A batch of strings as a list of str."""
    values = texts.numpy() if hasattr(texts, "numpy") else texts
    return [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in list(values)]


def _is_answers(y):
    """SQuAD answers: a list of {"text", "answer_start"} dicts, or a dict of such columns."""
    if isinstance(y, dict):
        return "answer_start" in y
    return (isinstance(y, (list, tuple)) and len(y) > 0
            and all(isinstance(a, dict) and "answer_start" in a for a in y))


def _answer_rows(y, count):
    """SQuAD answers -> one list of {"text": str, "answer_start": int} per question."""
    if isinstance(y, dict):
        texts, starts = _answer_column(y, "text"), _answer_column(y, "answer_start")
        if len(texts) != len(starts):
            raise ValueError(
                f"A dict of answers holds one entry per question in each column. Received: "
                f"{len(texts)} texts and {len(starts)} answer_start values.")
        y = [{"text": t, "answer_start": s} for t, s in zip(texts, starts)]
    if len(y) != count:
        raise ValueError(
            f"Expected one answer entry per question ({count}). Received: {len(y)} entries.")
    rows = []
    for i, answer in enumerate(y):
        texts, starts = answer.get("text", []), answer.get("answer_start", [])
        if isinstance(texts, (str, bytes)):
            texts = [texts]
        if not isinstance(starts, (list, tuple)) and not hasattr(starts, "__len__"):
            starts = [starts]
        texts, starts = list(texts), list(starts)
        for start in starts:
            if isinstance(start, bool) or not isinstance(start, numbers.Integral):
                raise ValueError(
                    f"answers[{i}] answer_start must be an int character offset (or a list "
                    f"of them). Received: answer_start={answer.get('answer_start')!r}.")
        if len(texts) != len(starts):
            raise ValueError(
                f"answers[{i}] has {len(texts)} texts but {len(starts)} answer_start "
                f"offsets; give one offset per answer text.")
        rows.append([{"text": t.decode("utf-8") if isinstance(t, bytes) else t,
                      "answer_start": int(s)} for t, s in zip(texts, starts)])
    return rows


def _answer_column(y, name):
    """Column `name` of a dict of answers as a list, one entry per question: a list of
    answers (Hugging Face's `datasets` form, [["John"], ...]) or one answer ("John", 0)."""
    column = y.get(name)
    if isinstance(column, np.ndarray) and column.ndim >= 1:
        column = column.tolist()
    if not isinstance(column, (list, tuple)):
        raise ValueError(
            "A dict of answers holds one entry per question in each column: "
            "{'text': ['John', ...], 'answer_start': [0, ...]} (one answer each) or "
            "{'text': [['John'], ...], 'answer_start': [[0], ...]}. Received: "
            f"{name}={column!r}. For one question, pass a list of one answer dict: "
            "[{'text': 'John', 'answer_start': 0}].")
    return list(column)
