"""SQuAD windows and answer selection: the one implementation, in TensorFlow ops.

google-research/bert run_squad.py, batched. The fine-tuning reader
(`reader.py`, run eagerly once per dataset) and the serving graph
(`serving.py`) both call these functions, so that a question and context get
the same windows, the same max-context tokens and the same answer in both.

`select_answers` picks the best span over an example's windows (the first
window on ties, as the reference's stable sort) and, for SQuAD 2.0, "no
answer" when null score - best > `null_score_diff_threshold`.

Scores are float64, as the reference's Python floats, so ties break the same
way (0.01 * window length in `_check_is_max_context` is not exact in float32).
"""

import tensorflow as tf

from keras_bert.text.windows import split_windows, window_tokens

NO_SPAN = -1e30  # Score of a window without a valid span (finite: JSON has no -inf).


# run_squad.py's max_query_length, the default when none is given.
DEFAULT_MAX_QUERY_LENGTH = 64


def check_query_length(max_seq_length, max_query_length, pair_separator=1):
    """Refuses a question length that leaves no context in a window.

    A window is `[CLS] question [SEP] context [SEP]` (`pair_separator` 2:
    `<s> question </s></s> context </s>`): with max_seq_length < max_query_length
    + 3 + pair_separator a long question leaves no context token. Fine-tuning
    and serving both call this.

    Raises:
        ValueError: naming both numbers and the flags to change.
    """
    specials = 2 + pair_separator
    if max_seq_length < max_query_length + specials + 1:
        raise ValueError(
            f"max_seq_length={max_seq_length} leaves no room for context after a question of "
            f"max_query_length={max_query_length} tokens and {specials} special tokens. Pass a smaller "
            f"max_query_length (--max-query-length) or a larger max_seq_length "
            f"(--max-seq-length)."
        )


def resolve_query_length(max_seq_length, max_query_length=None, pair_separator=1):
    """The question length to use: the one given, checked (`check_query_length`),
    or when none was set (a model without fine-tuning settings) run_squad.py's
    64, or half the window when that is shorter. Never cut silently."""
    if max_query_length is None:
        max_query_length = max(1, min(DEFAULT_MAX_QUERY_LENGTH,
                                      (max_seq_length - 2 - pair_separator) // 2))
    check_query_length(max_seq_length, max_query_length, pair_separator)
    return max_query_length


def squad_windows(question_ids, context_ids, pack, max_seq_length, doc_stride,
                  max_windows=None, pair_separator=1):
    """Packed `[CLS] question [SEP] window [SEP]` windows of a batch of examples.

    Args:
        question_ids: int RaggedTensor [B, (q)], question WordPiece ids,
            already cut to `max_query_length`.
        context_ids: int RaggedTensor [B, (c)], context WordPiece ids.
        pack: callable, `BertPacker` or alike: (segment A, segment B) ragged
            [F, (len)] -> dict of int32 [F, S] `token_ids`, `segment_ids`,
            `padding_mask`. Windows always fit, so it never truncates.
        max_seq_length: int, packed length of a window (specials included);
            a window holds max_seq_length - 2 - pair_separator - q context
            tokens.
        doc_stride: int, tokens between window starts.
        max_windows: int or None, see `keras_bert.text.windows.window_layout`.
        pair_separator: int, `pack`'s separators between question and
            window (2 for `<s> question </s></s> window </s>`).

    Returns:
        dict: `token_ids`, `segment_ids`, `padding_mask` int32 [F, S] (from
        `pack`); int32 [F] `example`, `window_start`, `window_length`,
        `context_offset` (position of the window's first context token,
        q + 1 + pair_separator); `context_token` int32 [F, S], index into
        `context_ids.flat_values` of the token at each position, -1 where
        the position holds no context token; `max_context` bool [F, S].
    """
    question_ids = tf.cast(question_ids, tf.int32)
    question_lengths = tf.cast(question_ids.row_lengths(), tf.int32)
    layout = split_windows(
        context_ids, max_seq_length - 2 - pair_separator - question_lengths, doc_stride,
        max_windows)
    example = layout["example"]
    questions = tf.gather(question_ids, example)  # (F, (q))
    outputs = dict(pack((questions, layout["windows"])))

    # Context token j of a window sits at position q + 1 + pair_separator + j.
    offset = tf.gather(question_lengths, example) + 1 + pair_separator  # (F,)
    seq = tf.shape(outputs["token_ids"])[1]
    num_tokens = tf.cast(tf.size(context_ids.flat_values), tf.int32)
    outputs.update({k: layout[k] for k in ("example", "window_start", "window_length")})
    outputs["context_offset"] = offset
    outputs["context_token"], outputs["max_context"] = window_tokens(
        layout, offset, seq, num_tokens)
    return outputs


def best_spans(start_logits, end_logits, padding_mask, valid_start, valid_end,
               max_answer_length, n_best_size=20):
    """Best (start, end) position pair of each window, as run_squad.py pairs them.

    The `n_best_size` highest start and end logits of the window's real
    tokens (padding never takes a place; the lower position first on ties)
    are paired; the valid pair of highest start + end logit wins, the first
    (start rank, then end rank) on ties.

    Args:
        start_logits, end_logits: float Tensors [F, S].
        padding_mask: int or bool [F, S], 1 on the window's tokens.
        valid_start: bool [F, S], positions a span may start at (context
            tokens with their max context in this window).
        valid_end: bool [F, S], positions a span may end at (context tokens).
        max_answer_length: int, longest span in tokens.
        n_best_size: int, start and end candidates per window.

    Returns:
        (score float64 [F], start int32 [F], end int32 [F]); score is
        `NO_SPAN` where the window has no valid pair.
    """
    real = tf.cast(padding_mask, tf.bool)
    k = tf.minimum(n_best_size, tf.shape(start_logits)[1])

    def top(logits):
        logits = tf.convert_to_tensor(logits)
        logits = tf.where(real, logits, tf.constant(-float("inf"), logits.dtype))
        return tf.math.top_k(logits, k, sorted=True).indices  # (F, k), stable.

    starts, ends = top(start_logits), top(end_logits)
    s, e = starts[:, :, None], ends[:, None, :]  # (F, k, 1), (F, 1, k)
    ok = (
        tf.gather(valid_start, starts, batch_dims=1)[:, :, None]
        & tf.gather(valid_end, ends, batch_dims=1)[:, None, :]
        & (e >= s)
        & (e - s + 1 <= max_answer_length)
    )
    score = (tf.gather(tf.cast(start_logits, tf.float64), starts, batch_dims=1)[:, :, None]
             + tf.gather(tf.cast(end_logits, tf.float64), ends, batch_dims=1)[:, None, :])
    flat = tf.reshape(tf.where(ok, score, NO_SPAN), [tf.shape(score)[0], k * k])  # (F, k * k)
    best = tf.reduce_max(flat, axis=-1)
    # The first of equal scores (tf.argmax leaves ties unspecified).
    pair = tf.reduce_min(
        tf.where(tf.equal(flat, best[:, None]), tf.range(tf.shape(flat)[1])[None, :],
                 tf.int32.max), axis=-1)
    pair = tf.minimum(pair, k * k - 1)  # NaN logits equal nothing: stay in range.
    start = tf.gather(starts, pair // k, batch_dims=1)
    end = tf.gather(ends, pair % k, batch_dims=1)
    return best, start, end


def null_scores(start_logits, end_logits):
    """float64 [F]: the "no answer" ([CLS], position 0) score of each window."""
    return tf.cast(start_logits[:, 0], tf.float64) + tf.cast(end_logits[:, 0], tf.float64)


def select_answers(span_score, null_score, example, num_examples,
                   version_2_with_negative=False, null_score_diff_threshold=0.0):
    """The best window of each example, and whether it answers.

    Args:
        span_score: float64 [F], best span score of each window (`best_spans`).
        null_score: float64 [F], the [CLS] score of each window (`null_scores`).
        example: int32 [F], the example of each window.
        num_examples: int32 scalar, B.
        version_2_with_negative: bool, SQuAD 2.0 "no answer" rule.
        null_score_diff_threshold: float, see the module docstring.

    Returns:
        dict of Tensors [B]: `score` float64 (best span score, `NO_SPAN`
        when none), `window` int32 (the window of that span), `null_score`
        float64 (smallest null score over the windows), `answerable` bool.
    """
    feature = tf.range(tf.shape(example)[0])
    best = tf.math.unsorted_segment_max(span_score, example, num_examples)
    window = tf.math.unsorted_segment_min(
        tf.where(tf.equal(span_score, tf.gather(best, example)), feature, tf.int32.max),
        example, num_examples,
    )
    null = tf.math.unsorted_segment_min(null_score, example, num_examples)
    answerable = best > NO_SPAN / 2
    if version_2_with_negative:
        answerable &= null - best <= null_score_diff_threshold
    return {"score": best, "window": window, "null_score": null, "answerable": answerable}
