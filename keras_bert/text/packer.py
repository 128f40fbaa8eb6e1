"""Packs one or two segments of ids into BERT's encoder inputs."""

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert.config import check_count
from keras_bert.text.settings import DEFAULT_TRUNCATION, TRUNCATIONS


def _longest_first_lengths(length_a, length_b, budget):
    """Lengths kept by google-research/bert's `_truncate_seq_pair`, in closed form:
    a segment shorter than its half keeps everything and the other gets the
    rest; otherwise A keeps ceil(budget / 2) and B floor(budget / 2).

    Args:
        length_a, length_b: int32 Tensors [batch].
        budget: int32 scalar, tokens left for the two segments.

    Returns:
        Tuple of int32 Tensors [batch]: kept lengths of A and B.
    """
    fits = length_a + length_b <= budget
    keep_b = tf.minimum(length_b, tf.maximum(budget // 2, budget - length_a))
    keep_a = budget - keep_b
    return (
        tf.where(fits, length_a, keep_a),
        tf.where(fits, length_b, keep_b),
    )


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPacker(keras.layers.Layer):
    """Packs token ids as `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`.

    With `pair_separator=2` a pair is packed as RoBERTa and XLM-R pack it,
    `<s> A </s></s> B </s>` (`cls_token_id` is `<s>`, `sep_token_id` `</s>`),
    and every segment id is 0: their tokenizers give one token type.

    Truncates the segments so the packed sequence fits, adds the special
    tokens and pads. All in TensorFlow ops (works in `tf.data` and in an
    exported SavedModel).

    Args:
        cls_token_id: int, id of `[CLS]`.
        sep_token_id: int, id of `[SEP]`.
        pad_token_id: int, id of `[PAD]` (fills the padding).
        sequence_length: int or None. An int pads (and truncates) every
            sequence to exactly this length. None pads to the longest packed
            sequence of the batch, truncating to `max_seq_length`.
        max_seq_length: int, the truncation length when `sequence_length` is
            None (the model's `max_position_embeddings`, 512 for BERT).
            Ignored otherwise.
        truncation: "longest_first" (the paper's rule: trim the longer
            segment one token at a time, B on a tie) or "round_robin"
            (tensorflow-text `RoundRobinTrimmer`); for one or two segments
            the two give the same lengths.
        pair_separator: 1 or 2, the separator tokens between the two
            segments of a pair (the tokenizer's `pair_separator`). 2 also
            gives segment B the segment id 0.
        pad_to_multiple_of: int >= 1, with `sequence_length=None`: the
            batch-longest width is rounded up to a multiple of it (never past
            `max_seq_length`), which limits the distinct shapes an
            XLA-compiled model sees. Ignored otherwise.
        **kwargs: passed to `keras.layers.Layer`.

    Call arguments:
        inputs: int `tf.RaggedTensor` [batch, (len)] (one segment), or a
            tuple/list of one or two of them (pairs). A dense int Tensor
            [len] is one unbatched example.

    Returns:
        dict of int32 Tensors of shape [batch, seq] ([seq] unbatched):
        `token_ids`, `segment_ids` (0 for `[CLS]` A `[SEP]`, 1 for B `[SEP]`
        when `pair_separator` is 1, 0 on padding) and `padding_mask` (1 for real tokens, 0 for padding).

    Example:
    >>> packer = BertPacker(cls_token_id=2, sep_token_id=3, sequence_length=8)
    >>> out = packer((tf.ragged.constant([[10, 11, 12]]),
    ...               tf.ragged.constant([[20, 21]])))
    >>> out["token_ids"].numpy().tolist()
    [[2, 10, 11, 12, 3, 20, 21, 3]]
    >>> out["segment_ids"].numpy().tolist()
    [[0, 0, 0, 0, 0, 1, 1, 1]]
    """

    def __init__(
        self,
        cls_token_id,
        sep_token_id,
        pad_token_id=0,
        sequence_length=128,
        max_seq_length=512,
        truncation=DEFAULT_TRUNCATION,
        pad_to_multiple_of=1,
        pair_separator=1,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if pair_separator not in (1, 2):
            raise ValueError(
                "Expected pair_separator to be 1 ([CLS] A [SEP] B [SEP]) or 2 "
                f"(<s> A </s></s> B </s>). Received: pair_separator={pair_separator!r}"
            )
        for name, value in (
            ("cls_token_id", cls_token_id),
            ("sep_token_id", sep_token_id),
            ("pad_token_id", pad_token_id),
        ):
            if not isinstance(value, int) or value < 0:
                raise ValueError(
                    f"Expected {name} to be a non-negative int. "
                    f"Received: {name}={value!r}"
                )
        least = 2 + pair_separator  # The special tokens of a pair.
        if sequence_length is not None and (
            not isinstance(sequence_length, int) or sequence_length < least
        ):
            raise ValueError(
                f"Expected sequence_length to be None or an int >= {least} (room "
                "for the special tokens of a pair). "
                f"Received: sequence_length={sequence_length!r}"
            )
        if not isinstance(max_seq_length, int) or max_seq_length < least:
            raise ValueError(
                f"Expected max_seq_length to be an int >= {least}. "
                f"Received: max_seq_length={max_seq_length!r}"
            )
        if truncation not in TRUNCATIONS:
            raise ValueError(
                f"Expected truncation to be one of {TRUNCATIONS}. "
                f"Received: truncation={truncation!r}"
            )
        check_count("pad_to_multiple_of", pad_to_multiple_of)
        self.cls_token_id = cls_token_id
        self.sep_token_id = sep_token_id
        self.pad_token_id = pad_token_id
        self.sequence_length = sequence_length
        self.max_seq_length = max_seq_length
        self.truncation = truncation
        self.pad_to_multiple_of = pad_to_multiple_of
        self.pair_separator = pair_separator
        self.built = True

    @property
    def truncation_length(self):
        """int, the longest packed sequence: `sequence_length` when set, else `max_seq_length`."""
        return self.sequence_length or self.max_seq_length

    def num_special_tokens(self, num_segments):
        """int, the special tokens packed around `num_segments` (1 or 2) segments."""
        return 2 if num_segments == 1 else 2 + self.pair_separator

    def second_segment_offset(self, first_length):
        """The packed position of segment B's first token after `first_length` tokens of A."""
        return first_length + 1 + self.pair_separator

    def _standardize(self, inputs):
        """Returns (list of int32 RaggedTensors [batch, (len)], unbatched)."""
        if isinstance(inputs, dict):
            raise ValueError(
                "BertPacker takes a RaggedTensor of ids or a tuple of two "
                f"(pairs). Received a dict with keys {sorted(inputs)}."
            )
        segments = list(inputs) if isinstance(inputs, (list, tuple)) else [
            inputs
        ]
        if len(segments) not in (1, 2):
            raise ValueError(
                "BertPacker packs one or two segments. "
                f"Received: {len(segments)} segments."
            )
        unbatched = False
        result = []
        for segment in segments:
            if not isinstance(segment, tf.RaggedTensor):
                segment = tf.convert_to_tensor(segment)
                if segment.shape.rank == 1:
                    unbatched = True
                    segment = segment[tf.newaxis]
                segment = tf.RaggedTensor.from_tensor(segment)
            if segment.shape.rank != 2:
                raise ValueError(
                    "Expected each segment to be a RaggedTensor of shape "
                    f"[batch, (len)]. Received: shape={segment.shape}."
                )
            result.append(
                tf.cast(segment, tf.int32).with_row_splits_dtype(tf.int64)
            )
        return result, unbatched

    def _trim(self, segments, budget):
        if self.truncation == "round_robin":
            return tf_text.RoundRobinTrimmer(budget).trim(segments)
        lengths = [tf.cast(s.row_lengths(), tf.int32) for s in segments]
        if len(segments) == 1:
            keep = [tf.minimum(lengths[0], budget)]
        else:
            keep = _longest_first_lengths(lengths[0], lengths[1], budget)
        # Keep the first `k` ids of each row: gather them (a few ops, where
        # tf.ragged.boolean_mask takes dozens, which eager callers feel).
        result = []
        for s, k in zip(segments, keep):
            starts = s.row_starts()
            kept = tf.ragged.range(starts, starts + tf.cast(k, tf.int64))
            result.append(tf.gather(s.flat_values, kept))  # [batch, (k)]
        return result

    def call(self, inputs):
        segments, unbatched = self._standardize(inputs)
        count = len(segments)
        num_special = self.num_special_tokens(count)
        segments = self._trim(segments, self.truncation_length - num_special)

        # Every output position gathers its id from one vector: the segments'
        # ids, then [CLS], [SEP] and [PAD]. Where each segment lands in a row
        # follows from the lengths: a few [batch, seq] selects, where a concat
        # of ragged rows is hundreds of ops (slow to trace, and run per request).
        sizes = [tf.shape(s.flat_values, out_type=tf.int32)[0] for s in segments]
        special = sum(sizes[1:], sizes[0])
        source = tf.concat([s.flat_values for s in segments] + [tf.constant(
            [self.cls_token_id, self.sep_token_id, self.pad_token_id], tf.int32)], 0)
        lengths = [tf.cast(s.row_lengths(), tf.int32)[:, tf.newaxis] for s in segments]
        totals = sum(lengths[1:], lengths[0]) + num_special  # [batch, 1]
        if self.sequence_length is not None:
            width = self.sequence_length
        else:
            width = self._batch_width(totals, num_special)
        column = tf.range(width)[tf.newaxis, :]  # [1, seq]
        index = tf.fill(tf.shape(column + totals), special + 2)  # [PAD]
        begin = 1  # After [CLS].
        for k, segment in enumerate(segments):
            seps = 1 if k == count - 1 else self.pair_separator
            first = tf.cast(segment.row_starts(), tf.int32)[:, tf.newaxis] + sum(sizes[:k])
            end = begin + lengths[k]
            index = tf.where((column >= begin) & (column < end), first + column - begin, index)
            index = tf.where((column >= end) & (column < end + seps), special + 1, index)
            begin = end + seps
        index = tf.where(column == 0, special, index)  # [CLS]
        real = column < totals
        segment_ids = tf.zeros_like(index)
        if count == 2 and self.pair_separator == 1:  # B and its [SEP]: segment 1.
            b_begin = 1 + lengths[0] + self.pair_separator
            segment_ids = tf.cast((column >= b_begin) & real, tf.int32)
        outputs = {
            "token_ids": tf.gather(source, index),
            "segment_ids": segment_ids,
            "padding_mask": tf.cast(real, tf.int32),
        }
        if unbatched:
            outputs = {k: v[0] for k, v in outputs.items()}
        return outputs

    def _batch_width(self, totals, num_special):
        """The width of a batch packed to its longest sequence ([batch, 1] `totals`),
        rounded up to `pad_to_multiple_of` (never past max_seq_length), and at
        least the width of the special tokens (`num_special`): an empty batch
        keeps a [CLS] column, so that models reading position 0 (the pooler)
        keep working."""
        width = tf.reduce_max(tf.concat([tf.reshape(totals, [-1]), [0]], 0))
        if self.pad_to_multiple_of > 1:
            multiple = self.pad_to_multiple_of
            width = tf.minimum((width + multiple - 1) // multiple * multiple,
                               self.max_seq_length)
        return tf.maximum(width, num_special)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "cls_token_id": self.cls_token_id,
                "sep_token_id": self.sep_token_id,
                "pad_token_id": self.pad_token_id,
                "sequence_length": self.sequence_length,
                "max_seq_length": self.max_seq_length,
                "truncation": self.truncation,
                "pad_to_multiple_of": self.pad_to_multiple_of,
                "pair_separator": self.pair_separator,
            }
        )
        return config
