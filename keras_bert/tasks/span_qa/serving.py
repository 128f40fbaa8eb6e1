"""SpanQAServingModule: question + context -> answer text and character offsets.

Long contexts are split in the graph into overlapping windows (BERT's
`doc_stride`, as google-research/bert run_squad.py does), all windows of a
batch run as one batch, and the best span over all windows wins. The span
rules are the reference's: the start must be a context token in the window
where it has the most context (`_check_is_max_context`), the end a context
token of the same window, start <= end, at most `max_answer_length` tokens;
the score is start_logit + end_logit. The reference keeps the n_best_size
(20) highest start and end logits before pairing them; here every valid
pair is scored, which gives the same best answer unless that answer's start
or end logit is outside the top 20 of its window.
"""

import tensorflow as tf

from keras_bert.export.serving_module import STRINGS, BertServingModule, check_same_batch

_NEG = -1e30  # Score of an impossible span (finite: JSON has no -inf).


def window_layout(context_lengths, window_sizes, doc_stride, max_windows):
    """Where each window (feature) of each example starts, and its length.

    Windows start at 0, s, 2s, ... with s = min(doc_stride, window size);
    the last one ends at the end of the context (run_squad.py's loop).

    Args:
        context_lengths: int32 [B], context tokens of each example.
        window_sizes: int32 [B], context tokens that fit one window.
        doc_stride: int, tokens between window starts.
        max_windows: int, at most this many windows per example; context
            tokens after them are never read.

    Returns:
        A dict of int32 [F] Tensors, F = total windows: `example` (row of the
        example), `window_start`, `window_length` (context tokens).
    """
    stride = tf.minimum(doc_stride, window_sizes)
    extra = tf.maximum(context_lengths - window_sizes, 0)
    num_windows = tf.minimum(1 + (extra + stride - 1) // stride, max_windows)  # (B,)
    example = tf.repeat(tf.range(tf.size(num_windows)), num_windows)  # (F,)
    index = tf.ragged.range(num_windows).flat_values  # (F,)
    start = index * tf.gather(stride, example)
    length = tf.minimum(
        tf.gather(context_lengths, example) - start, tf.gather(window_sizes, example)
    )
    return {"example": example, "window_start": start, "window_length": length}


def max_context_mask(in_context, position, window_start, window_length, token_index,
                     num_tokens):
    """True where a context token has its most context in this window.

    run_squad.py `_check_is_max_context`: score = min(left, right context)
    + 0.01 * window length; on ties the first window wins.

    Args:
        in_context: bool [F, S], position holds a context token.
        position: int32 [F, S], index of the token within its window.
        window_start, window_length: int32 [F].
        token_index: int32 [F, S], index of the token among all context
            tokens of the batch (any value where not `in_context`).
        num_tokens: int32 scalar, context tokens in the batch.

    Returns:
        bool [F, S].
    """
    length = window_length[:, None]
    score = tf.cast(tf.minimum(position, length - 1 - position), tf.float32) + 0.01 * tf.cast(
        length, tf.float32
    )
    segment = tf.where(in_context, token_index, num_tokens)  # num_tokens: a dump slot.
    best = tf.math.unsorted_segment_max(score, segment, num_tokens + 1)
    feature = tf.broadcast_to(tf.range(tf.shape(score)[0])[:, None], tf.shape(score))
    is_best = in_context & tf.equal(score, tf.gather(best, segment))
    first = tf.math.unsorted_segment_min(
        tf.where(is_best, feature, tf.int32.max), segment, num_tokens + 1
    )
    return in_context & tf.equal(tf.gather(first, segment), feature)


def best_spans(start_logits, end_logits, valid_start, valid_end, max_answer_length):
    """Best (start, end) position pair of each feature.

    Args:
        start_logits, end_logits: float32 [F, S].
        valid_start, valid_end: bool [F, S].
        max_answer_length: int, longest span in tokens.

    Returns:
        (score float32 [F], start int32 [F], end int32 [F]); score is _NEG
        where the feature has no valid span.
    """
    seq = tf.shape(start_logits)[1]
    ends = tf.range(seq)[:, None] + tf.range(max_answer_length)[None, :]  # (S, D)
    inside = ends < seq
    ends = tf.minimum(ends, seq - 1)
    end_score = tf.gather(end_logits, ends, axis=1)  # (F, S, D)
    ok = (
        valid_start[:, :, None]
        & tf.gather(valid_end, ends, axis=1)
        & inside[None]
    )
    score = tf.where(ok, start_logits[:, :, None] + end_score, _NEG)
    flat = tf.reshape(score, [tf.shape(score)[0], -1])  # (F, S * D)
    best = tf.argmax(flat, axis=-1, output_type=tf.int32)
    start = best // max_answer_length
    return tf.reduce_max(flat, axis=-1), start, start + best % max_answer_length


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
    span by more than `null_score_diff_threshold`.

    `preprocess(question, context)` gives the windows: token_ids,
    segment_ids, padding_mask int32 [F, S] and example int32 [F].

    Args:
        model: a `BertSpanLabeler`.
        max_query_length: int (64 in run_squad.py).
        doc_stride: int (128).
        max_answer_length: int, in tokens (30).
        max_windows: int, windows per example.
        version_2_with_negative: bool.
        null_score_diff_threshold: float.
        **kwargs: `BertServingModule` arguments.
    """

    SIGNATURES = {**BertServingModule.SIGNATURES, "answer": "answer"}
    DEFAULT_SIGNATURE = "answer"
    TASK_OPTIONS = ("max_query_length", "doc_stride", "max_answer_length", "max_windows",
                    "version_2_with_negative", "null_score_diff_threshold")

    @classmethod
    def options_from_task_info(cls, task_info):
        # tools/finetune.py writes the SQuAD settings the model was trained with.
        return {k: task_info[k] for k in cls.TASK_OPTIONS if k in task_info}

    def __init__(self, model, tokenizer, vocab_file, max_seq_length, max_query_length=64,
                 doc_stride=128, max_answer_length=30, max_windows=16,
                 version_2_with_negative=False, null_score_diff_threshold=0.0, **kwargs):
        for name, value in (("max_query_length", max_query_length),
                            ("doc_stride", doc_stride),
                            ("max_answer_length", max_answer_length),
                            ("max_windows", max_windows)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"Expected {name} to be an int >= 1. Received: {name}={value!r}")
        length = kwargs.get("sequence_length") or max_seq_length
        if length < 5:
            raise ValueError(
                f"Span QA needs room for [CLS] question [SEP] context [SEP]. "
                f"Received: a packed length of {length}."
            )
        # At least one context token per window.
        self.max_query_length = min(max_query_length, length - 4)
        self.doc_stride = doc_stride
        self.max_answer_length = max_answer_length
        self.max_windows = max_windows
        self.version_2_with_negative = bool(version_2_with_negative)
        self.null_score_diff_threshold = float(null_score_diff_threshold)
        super().__init__(model, tokenizer, vocab_file, max_seq_length, **kwargs)

    def _define_signatures(self):
        super()._define_signatures()
        self.answer = tf.function(self._answer, input_signature=[STRINGS, STRINGS])
        self.preprocess = tf.function(self._windows, input_signature=[STRINGS, STRINGS])

    def _windows(self, question, context):
        return self._features(question, context)[0]

    def _features(self, question, context):
        """Packed windows [F, S] (+ example [F]) and the bookkeeping of `_answer`."""
        length = self.sequence_length or self.max_seq_length
        question, context = check_same_batch(question, context)
        question_ids = self.tokenize(question)[:, : self.max_query_length]  # (B, (q))
        ids, starts, ends = self.tokenize_with_offsets(context)  # (B, (c))
        question_lengths = tf.cast(question_ids.row_lengths(), tf.int32)
        layout = window_layout(
            tf.cast(ids.row_lengths(), tf.int32),
            length - 3 - question_lengths,
            self.doc_stride,
            self.max_windows,
        )
        example = layout["example"]
        context_row = tf.gather(tf.cast(ids.row_starts(), tf.int32), example)  # (F,)
        first = context_row + layout["window_start"]
        window_ids = tf.gather(
            ids.flat_values, tf.ragged.range(first, first + layout["window_length"])
        )
        question_row = tf.gather(tf.cast(question_ids.row_starts(), tf.int32), example)
        window_question = tf.gather(
            question_ids.flat_values,
            tf.ragged.range(question_row, question_row + tf.gather(question_lengths, example)),
        )
        inputs = self.pack((window_question, window_ids))
        inputs["example"] = example
        bookkeeping = dict(layout, question_lengths=question_lengths, context_row=context_row,
                           starts=starts, ends=ends)
        return inputs, bookkeeping

    def _answer(self, question, context):
        inputs, book = self._features(question, context)
        example = inputs.pop("example")
        logits = self.run_model(inputs)
        start_logits, end_logits = logits["start_logits"], logits["end_logits"]  # (F, S)

        # Context token j of a window sits at position q + 2 + j.
        seq = tf.shape(start_logits)[1]
        offset = tf.gather(book["question_lengths"], example) + 2  # (F,)
        position = tf.range(seq)[None, :] - offset[:, None]  # (F, S)
        in_context = (position >= 0) & (position < book["window_length"][:, None])
        # Index of the token among all context tokens of the batch.
        token = (book["context_row"] + book["window_start"])[:, None] + position
        num_tokens = tf.cast(tf.size(book["starts"].flat_values), tf.int32)
        valid_start = max_context_mask(
            in_context, position, book["window_start"], book["window_length"],
            token, num_tokens,
        )
        span_score, span_start, span_end = best_spans(
            start_logits, end_logits, valid_start, in_context, self.max_answer_length
        )

        # The best window of each example; the lowest [CLS] score over windows.
        batch = tf.shape(question)[0]
        feature = tf.range(tf.shape(example)[0])
        best = tf.math.unsorted_segment_max(span_score, example, batch)  # (B,)
        chosen = tf.math.unsorted_segment_min(
            tf.where(tf.equal(span_score, tf.gather(best, example)), feature, tf.int32.max),
            example, batch,
        )
        null = tf.math.unsorted_segment_min(start_logits[:, 0] + end_logits[:, 0], example, batch)
        answerable = best > _NEG / 2
        if self.version_2_with_negative:
            answerable &= null - best <= self.null_score_diff_threshold

        chosen = tf.where(answerable, chosen, 0)
        row = tf.stack([chosen, tf.gather(span_start, chosen)], axis=1)
        first_token = tf.gather_nd(token, row)
        last_token = tf.gather_nd(token, tf.stack([chosen, tf.gather(span_end, chosen)], axis=1))
        # A -1 slot at the end answers for "no answer" (and empty contexts).
        start_table = tf.concat([book["starts"].flat_values, [-1]], 0)
        end_table = tf.concat([book["ends"].flat_values, [-1]], 0)
        start = tf.gather(start_table, tf.where(answerable, first_token, num_tokens))
        end = tf.gather(end_table, tf.where(answerable, last_token, num_tokens))
        answer = tf.strings.substr(
            context, tf.maximum(start, 0), tf.maximum(end - start, 0), unit="UTF8_CHAR"
        )
        return {
            "answer": answer,
            "start": start,
            "end": end,
            "score": tf.where(answerable, best, null),
        }
