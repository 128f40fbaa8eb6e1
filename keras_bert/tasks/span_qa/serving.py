"""SpanQAServingModule: question + context -> answer text and character offsets.

Long contexts are split in the graph into overlapping windows (BERT's
`doc_stride`, as google-research/bert run_squad.py does), all windows of a
batch run as one batch, and the best span over all windows wins. Windows,
max-context tokens, n-best span pairing and the null score are
`windows.py`'s, the code that the fine-tuning reader runs too.
"""

import tensorflow as tf

from keras_bert.config import check_count
from keras_bert.export.serving_module import STRINGS, BertServingModule, check_same_batch
from keras_bert.tasks.span_qa import windows as windows_lib


class SpanQAServingModule(BertServingModule):
    """Serving signatures of a `BertSpanLabeler` (SQuAD-style QA).

    serving_default / answer, on `question` and `context`, string [B]:
        answer  string [B]   context[start:end]; "" when there is no answer
        start   int32 [B]    character offset (Unicode code points) of the
                             answer in `context`; -1 when no answer
        end     int32 [B]    exclusive end offset; -1 when no answer
        score   float32 [B]  start_logit + end_logit of the answer (of the
                             [CLS] "no answer" span when there is none)

    The question is truncated to `max_query_length` tokens. The context is
    read in windows of max_seq_length - 3 - question tokens, `doc_stride` apart,
    at most `max_windows` of them (longer contexts: the rest is not read).
    "No answer" happens when the context has no tokens or, with
    `version_2_with_negative` (SQuAD 2.0 models), when the [CLS] score beats the best
    span by more than `null_score_diff_threshold`. Spans pair the `n_best_size`
    best start and end positions of each window (see `windows.best_spans`).

    `preprocess(question, context)` gives the windows: token_ids,
    segment_ids, padding_mask int32 [F, S] and example int32 [F].

    Args:
        model: a `BertSpanLabeler`.
        max_query_length: int, question tokens kept; refused (as fine-tuning
            refuses it) when it leaves no context token. None (not in
            task.json): 64 as in run_squad.py, or (max_seq_length - 3) // 2
            when that is shorter.
        doc_stride: int (128).
        max_answer_length: int, in tokens (30).
        n_best_size: int, start and end candidates per window (20).
        max_windows: int, windows per example.
        version_2_with_negative: bool.
        null_score_diff_threshold: float.
        **kwargs: `BertServingModule` arguments.
    """

    SIGNATURES = {**BertServingModule.SIGNATURES, "answer": "answer"}
    DEFAULT_SIGNATURE = "answer"
    TASK_OPTIONS = ("max_query_length", "doc_stride", "max_answer_length", "n_best_size",
                    "max_windows", "version_2_with_negative", "null_score_diff_threshold")

    @classmethod
    def options_from_task_info(cls, task_info):
        # tools/finetune.py writes the SQuAD settings the model was trained with.
        return {k: task_info[k] for k in cls.TASK_OPTIONS if k in task_info}

    def __init__(self, model, preprocessor, max_query_length=None,
                 doc_stride=128, max_answer_length=30, n_best_size=20, max_windows=16,
                 version_2_with_negative=False, null_score_diff_threshold=0.0, **kwargs):
        query = 1 if max_query_length is None else max_query_length  # None: set below.
        for name, value in (("max_query_length", query),
                            ("doc_stride", doc_stride),
                            ("max_answer_length", max_answer_length),
                            ("n_best_size", n_best_size),
                            ("max_windows", max_windows)):
            check_count(name, value)
        length = preprocessor.truncation_length
        self.pair_separator = preprocessor.packer.pair_separator
        if length < 5:
            raise ValueError(
                f"Span QA needs room for [CLS] question [SEP] context [SEP]. "
                f"Received: a packed length of {length}."
            )
        # A number that was set is checked as fine-tuning checks it, never cut.
        self.max_query_length = windows_lib.resolve_query_length(
            length, max_query_length, self.pair_separator)
        self.doc_stride = doc_stride
        self.max_answer_length = max_answer_length
        self.n_best_size = n_best_size
        self.max_windows = max_windows
        self.version_2_with_negative = bool(version_2_with_negative)
        self.null_score_diff_threshold = float(null_score_diff_threshold)
        super().__init__(model, preprocessor, **kwargs)

    def _define_signatures(self):
        super()._define_signatures()
        self.answer = tf.function(self._answer, input_signature=[STRINGS, STRINGS],
                                  autograph=False)
        self.preprocess = tf.function(self._windows, input_signature=[STRINGS, STRINGS],
                                      autograph=False)

    def _windows(self, question, context):
        features, _ = self._features(question, context)
        keys = ("token_ids", "segment_ids", "padding_mask", "example")
        return {k: features[k] for k in keys}

    def _features(self, question, context):
        """`windows.squad_windows` of the batch, and the context's character offsets."""
        question, context = check_same_batch(question, context)
        question_ids = self.tokenize(question)[:, : self.max_query_length]  # (B, (q))
        ids, starts, ends = self.tokenize_with_offsets(context)  # (B, (c))
        features = windows_lib.squad_windows(
            question_ids, ids, self.pack, self.truncation_length,
            self.doc_stride, self.max_windows, self.pair_separator,
        )
        return features, (starts.flat_values, ends.flat_values)

    def _answer(self, question, context):
        features, (starts, ends) = self._features(question, context)
        logits = self.run_model(
            {k: features[k] for k in ("token_ids", "segment_ids", "padding_mask")})
        start_logits, end_logits = logits["start_logits"], logits["end_logits"]  # (F, S)
        context_token = features["context_token"]
        span_score, span_start, span_end = windows_lib.best_spans(
            start_logits, end_logits, features["padding_mask"], features["max_context"],
            context_token >= 0, self.max_answer_length, self.n_best_size,
        )
        best = windows_lib.select_answers(
            span_score, windows_lib.null_scores(start_logits, end_logits), features["example"],
            tf.shape(question)[0], self.version_2_with_negative, self.null_score_diff_threshold,
        )
        answerable = best["answerable"]
        window = tf.where(answerable, best["window"], 0)
        first_token = tf.gather_nd(
            context_token, tf.stack([window, tf.gather(span_start, window)], axis=1))
        last_token = tf.gather_nd(
            context_token, tf.stack([window, tf.gather(span_end, window)], axis=1))
        # "No answer" (and empty contexts) read the -1 slot at the end.
        num_tokens = tf.size(starts)
        start = tf.gather(tf.concat([starts, [-1]], 0), tf.where(answerable, first_token, num_tokens))
        end = tf.gather(tf.concat([ends, [-1]], 0), tf.where(answerable, last_token, num_tokens))
        answer = tf.strings.substr(
            context, tf.maximum(start, 0), tf.maximum(end - start, 0), unit="UTF8_CHAR"
        )
        return {
            "answer": answer,
            "start": start,
            "end": end,
            "score": tf.cast(tf.where(answerable, best["score"], best["null_score"]), tf.float32),
        }
