"""Overlapping windows over token sequences, in TensorFlow ops: the one implementation.

A text (or a SQuAD context) longer than a model window is read as windows
that start every `stride` tokens until one reaches the end, as
google-research/bert run_squad.py cuts contexts. Used by span QA
(`squad_windows`) and the long-document classifier and token classifier
(`text_windows`); only core TensorFlow ops, so exports keep the op-set guard.
"""

import tensorflow as tf

#: How a classifier combines its window logits.
COMBINE = ("mean", "max")
#: The defaults of a windows dict's keys that are left out.
WINDOW_DEFAULTS = {"stride": 128, "max_windows": 8, "combine": "mean"}


def check_windows(windows, combine=True):
    """A windows setting, checked and completed with `WINDOW_DEFAULTS`.

    Args:
        windows: None (no windows: texts are truncated) or a dict with
            "stride" (int >= 1, tokens between window starts), "max_windows"
            (int >= 1, windows read per text; later tokens are not read) and,
            for classifiers, "combine" ("mean" or "max" of the window logits).
        combine: bool, whether "combine" is a key (classifiers) or not (taggers).

    Returns:
        None, or a new dict with every key.

    Raises:
        ValueError: naming the bad key and value.
    """
    if windows is None:
        return None
    allowed = dict(WINDOW_DEFAULTS)
    if not combine:
        allowed.pop("combine")
    if not isinstance(windows, dict) or set(windows) - set(allowed):
        raise ValueError(
            f"Expected windows to be None or a dict with keys {sorted(allowed)}, e.g. "
            f"windows={allowed}. Received: windows={windows!r}")
    result = {**allowed, **windows}
    for key in ("stride", "max_windows"):
        value = result[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"Expected windows[{key!r}] to be an int >= 1. Received: "
                             f"windows={windows!r}")
    if combine and result["combine"] not in COMBINE:
        raise ValueError(f"Expected windows['combine'] in {COMBINE}. Received: "
                         f"windows={windows!r}")
    return result


def windows_of(options):
    """A model's `windows` argument from a task's options dataclass.

    Args:
        options: classification or token classification options, with
            `window_stride` (None: no windows), `max_windows` and, for
            classifiers, `window_combine` (tools/finetune.py --window-stride,
            --max-windows, --window-combine).

    Returns:
        None, or the checked windows dict (`check_windows`).
    """
    if getattr(options, "window_stride", None) is None:
        return None
    windows = {"stride": options.window_stride, "max_windows": options.max_windows}
    if hasattr(options, "window_combine"):
        windows["combine"] = options.window_combine
    return check_windows(windows, combine="combine" in windows)


def window_layout(context_lengths, window_sizes, doc_stride, max_windows=None):
    """Where each window (feature) of each example starts, and its length.

    Windows start at 0, s, 2s, ... with s = min(doc_stride, window size);
    the last one ends at the end of the context (run_squad.py's loop). An
    empty context has one empty window.

    Args:
        context_lengths: int32 Tensor [B], context tokens of each example.
        window_sizes: int32 Tensor [B], context tokens that fit one window.
        doc_stride: int, tokens between window starts.
        max_windows: int or None, at most this many windows per example
            (context tokens after them are never read); None: no limit.

    Returns:
        A dict of int32 Tensors [F], F = total windows: `example` (row of
        the example), `window_start`, `window_length` (context tokens).

    Example:
    >>> window_layout(tf.constant([10]), tf.constant([4]), 3)["window_start"]
    <tf.Tensor: shape=(3,), dtype=int32, numpy=array([0, 3, 6], dtype=int32)>
    """
    context_lengths = tf.cast(context_lengths, tf.int32)
    window_sizes = tf.cast(window_sizes, tf.int32)
    stride = tf.minimum(doc_stride, window_sizes)
    extra = tf.maximum(context_lengths - window_sizes, 0)
    num_windows = 1 + (extra + stride - 1) // stride  # (B,)
    if max_windows is not None:
        num_windows = tf.minimum(num_windows, max_windows)
    example = tf.repeat(tf.range(tf.size(num_windows)), num_windows)  # (F,)
    index = tf.ragged.range(num_windows).flat_values  # (F,)
    start = index * tf.gather(stride, example)
    length = tf.minimum(
        tf.gather(context_lengths, example) - start, tf.gather(window_sizes, example)
    )
    return {"example": example, "window_start": start, "window_length": length}


def max_context_mask(in_context, position, window_length, token_index, num_tokens):
    """True where a context token has its most context in this window.

    run_squad.py `_check_is_max_context`: score = min(left, right context)
    + 0.01 * window length, in float64; on ties the first window wins.

    Args:
        in_context: bool [F, S], the position holds a context token.
        position: int32 [F, S], index of the token within its window.
        window_length: int32 [F].
        token_index: int32 [F, S], index of the token among all context
            tokens of the batch (any value where not `in_context`).
        num_tokens: int32 scalar, context tokens in the batch.

    Returns:
        bool [F, S].
    """
    length = window_length[:, None]
    score = tf.cast(tf.minimum(position, length - 1 - position), tf.float64) + 0.01 * tf.cast(
        length, tf.float64
    )
    segment = tf.where(in_context, token_index, num_tokens)  # num_tokens: a dump slot.
    best = tf.math.unsorted_segment_max(score, segment, num_tokens + 1)
    feature = tf.broadcast_to(tf.range(tf.shape(score)[0])[:, None], tf.shape(score))
    is_best = in_context & tf.equal(score, tf.gather(best, segment))
    first = tf.math.unsorted_segment_min(
        tf.where(is_best, feature, tf.int32.max), segment, num_tokens + 1
    )
    return in_context & tf.equal(tf.gather(first, segment), feature)


def split_windows(ids, window_sizes, stride, max_windows=None):
    """The windows of a batch of token sequences, as a ragged batch of windows.

    Args:
        ids: int RaggedTensor [B, (n)].
        window_sizes: int32 Tensor [B] (or scalar), tokens of one window.
        stride: int, tokens between window starts.
        max_windows: int or None, see `window_layout`.

    Returns:
        dict: `windows` int32 RaggedTensor [F, (w)]; int32 [F] `example`,
        `window_start`, `window_length` and `first` (index into
        `ids.flat_values` of the window's first token).
    """
    ids = tf.cast(ids, tf.int32)
    lengths = ids.row_lengths()
    window_sizes = tf.broadcast_to(tf.cast(window_sizes, tf.int32), tf.shape(lengths))
    layout = window_layout(lengths, window_sizes, stride, max_windows)
    first = tf.gather(tf.cast(ids.row_starts(), tf.int32), layout["example"]) + layout[
        "window_start"]
    windows = tf.gather(ids.flat_values,
                        tf.ragged.range(first, first + layout["window_length"]))  # (F, (w))
    return {"windows": windows, "first": first, **layout}


def window_tokens(layout, offset, seq, num_tokens):
    """Which token sits at each packed position of each window, and where it has max context.

    Args:
        layout: `split_windows`' dict (`first`, `window_length`).
        offset: int32 [F] or scalar, packed position of a window's first
            token (1 after [CLS]; q + 2 after [CLS] question [SEP]).
        seq: int32 scalar, packed width S.
        num_tokens: int32 scalar, tokens in the batch (`ids.flat_values`).

    Returns:
        (token int32 [F, S]: index into the batch's flat tokens, -1 where
        the position holds no window token; max_context bool [F, S]).
    """
    position = tf.range(seq)[None, :] - tf.reshape(offset, [-1, 1])  # (F, S)
    in_context = (position >= 0) & (position < layout["window_length"][:, None])
    token = layout["first"][:, None] + position
    max_context = max_context_mask(in_context, position, layout["window_length"], token,
                                   num_tokens)
    return tf.where(in_context, token, -1), max_context


def text_windows(ids, pack, max_seq_length, stride, max_windows=None):
    """Packed `[CLS] window [SEP]` windows of a batch of single texts.

    Args:
        ids: int RaggedTensor [B, (n)], WordPiece ids of each text.
        pack: callable, `BertPacker` or alike: a tuple of one ragged
            [F, (w)] -> dict of int32 [F, S]; windows always fit.
        max_seq_length: int, packed length of a window (max_seq_length - 2 tokens).
        stride: int, tokens between window starts.
        max_windows: int or None, see `window_layout`.

    Returns:
        dict: `token_ids`, `segment_ids`, `padding_mask` int32 [F, S];
        int32 [F] `example`, `window_start`, `window_length`; `token` int32
        [F, S] (index into `ids.flat_values`, -1 on [CLS], [SEP], padding);
        `max_context` bool [F, S]; `num_windows` int32 [B].
    """
    layout = split_windows(ids, max_seq_length - 2, stride, max_windows)
    outputs = dict(pack((layout["windows"],)))
    seq = tf.shape(outputs["token_ids"])[1]
    num_tokens = tf.cast(tf.size(ids.flat_values), tf.int32)
    outputs["token"], outputs["max_context"] = window_tokens(layout, 1, seq, num_tokens)
    outputs.update({k: layout[k] for k in ("example", "window_start", "window_length")})
    outputs["num_windows"] = tf.math.unsorted_segment_sum(
        tf.ones_like(layout["example"]), layout["example"], ids.nrows(out_type=tf.int32))
    return outputs
