"""BERT's text normalization for LiteRT: bytes in, normalized bytes out, no Flex ops.

tensorflow-text's `FastBertNormalize` follows other rules (it keeps U+FFFD,
turns control characters into spaces, folds "ß" -> "ss"), so
`normalize_for_wordpiece` does the reference's steps on the UTF-8 bytes:
`ByteSplitWithOffsets`, builtin ops that look each code point up in a table of
the reference's rules (`keras_bert.text._unicode`), and `FastWordpieceDetokenize`
over the bytes as "##" pieces to glue them back. A word the WordPiece kernel
would split but the reference keeps (`kernel_word_breaks`), or one longer than
max_chars_per_word, becomes a character no vocabulary token holds: one [UNK].
"""

import functools

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert.text import _unicode

# Bits of the LiteRT action word of a code point; bits 8 and up hold the
# row of its replacement in the body table (0: the character itself).
DELETE = 1
SPACE = 2  # Becomes one space.
ISOLATE = 4  # Gets a space on each side (punctuation, CJK ideograph).
CASED = 8  # Cased, and not case-ignorable (uncased tables only).
CASE_IGNORABLE = 16  # Skipped by the final-sigma context (uncased tables only).
BODY_SHIFT = 8
_BLOCK = 256
_MAX_UTF8_BYTES = 4

#: What a word longer than max_chars_per_word becomes: a control character the
#: reference deletes (no reachable vocabulary token holds it), kept in a word.
UNKNOWN_CHAR = "\u0080"

#: The detokenizer's vocabulary: id 0 a space (the non-suffix piece that starts
#: every text), id b in 1..255 the byte b (U+0000 is deleted, never emitted).
_BYTE_PIECES = [" "] + [b"##" + bytes([b]) for b in range(1, 256)] + ["[UNK]"]


@functools.lru_cache(maxsize=None)
def kernel_word_breaks():
    """Code points (sorted int32 numpy array) that BERT keeps inside a word but the
    LiteRT kernel (ICU's Unicode data, maybe newer than Python's) splits at: found
    by tokenizing "a<c>b" for every code point the reference treats as a letter."""
    info = _unicode._info_of_all_code_points()
    plain = np.nonzero((info & (_unicode.DROP | _unicode.SPACE | _unicode.PUNCT
                                | _unicode.CJK)) == 0)[0].astype(np.int32)
    plain = plain[(plain < 0xD800) | (plain > 0xDFFF)]  # Surrogates are not text.
    with tf.init_scope():
        kernel = tf_text.FastWordpieceTokenizer(
            vocab=["[UNK]", "a", "b"], unknown_token="[UNK]", token_out_type=tf.int32,
            no_pretokenization=False)
        code_points = tf.constant(plain)
        a, b = tf.fill(tf.shape(code_points), ord("a")), tf.fill(tf.shape(code_points), ord("b"))
        texts = tf.strings.unicode_encode(tf.stack([a, code_points, b], 1), "UTF-8")
        pieces = kernel.tokenize(texts).row_lengths().numpy()
    return plain[pieces != 1]  # One piece: "a<c>b" stayed one ([UNK]) word.


@functools.lru_cache(maxsize=None)
def lite_text_tables(normalization):
    """The lookup tables of `normalize_for_wordpiece` (numpy arrays), from
    `keras_bert.text._unicode`'s: the rules of the SavedModel's tokenizer.

    Args:
        normalization: the tokenizer's `normalization`: a name of
            `_unicode.NORMALIZATIONS`, or None (cased: no change); True means
            "lower_strip", False None.

    Returns:
        dict: `block_index` [0x110000 / 256] and `blocks` (a two-level table
        of action words, identical 256-code-point blocks stored once),
        `body_values` (uint8) and `body_splits` (the distinct UTF-8 strings
        that replace a character, as ragged rows; row 0 unused). Cached: the
        callers must not change them.
    """
    if isinstance(normalization, bool):
        normalization = _unicode.DEFAULT_NORMALIZATION if normalization else None
    lowercase = bool(normalization) and _unicode.NORMALIZATIONS[normalization][0]
    info = _unicode._info_of_all_code_points(normalization)
    delete = (info & _unicode.DROP) != 0
    space = (info & _unicode.SPACE) != 0
    punct = (info & _unicode.PUNCT) != 0
    expansion = (info >> _unicode.EXPANSION_SHIFT if normalization
                 else np.zeros_like(info))
    # Punctuation is split off after lower-casing: an expanded character's
    # punctuation is spaced inside its body, an unexpanded one is isolated.
    isolate = ((info & _unicode.CJK) != 0) | (punct & (expansion == 0))
    tables = _unicode.unicode_tables(normalization)
    splits = tables["expansion_splits"]
    bodies = [b""]  # Row 0 is unused: body 0 means the character itself.
    body_row = {}  # Each distinct replacement once (b"": deleted by lower-casing).

    def row_of(body):
        if body not in body_row:
            body_row[body] = len(bodies)
            bodies.append(body)
        return body_row[body]

    rows = np.zeros([len(splits) - 1], np.int64)  # Expansion -> body row.
    for row in range(1, len(splits) - 1) if normalization else ():
        chars = tables["expansion_values"][splits[row]:splits[row + 1]]
        body = "".join(f" {chr(c)} " if info[c] & _unicode.PUNCT else chr(c) for c in chars)
        rows[row] = row_of(body.encode("utf-8"))
    expansion = rows[expansion]
    # A character the kernel would split a word at becomes UNKNOWN_CHAR:
    # in the reference, no vocabulary token holds it, so its word is [UNK].
    expansion[kernel_word_breaks()] = row_of(UNKNOWN_CHAR.encode("utf-8"))
    action = (
        DELETE * delete + SPACE * (space & ~delete) + ISOLATE * (isolate & ~delete & ~space)
        + (expansion << BODY_SHIFT) * (~delete & ~space)
    )
    if lowercase:  # What Python's final-sigma rule looks at.
        action += CASED * ((info & _unicode.CASED) != 0) + CASE_IGNORABLE * (
            (info & _unicode.CASE_IGNORABLE) != 0)
    action = action.astype(np.int32)
    unique_blocks, block_index = np.unique(
        action.reshape([-1, _BLOCK]), axis=0, return_inverse=True)
    return {
        "block_index": block_index.reshape([-1]).astype(np.int32),
        "blocks": unique_blocks.reshape([-1]).astype(np.int32),
        # Bytes: uint8 (the graph widens what it gathers).
        "body_values": np.frombuffer(b"".join(bodies) + b"\0", np.uint8),
        "body_splits": np.cumsum([0] + [len(b) for b in bodies]).astype(np.int32),
    }


def byte_detokenizer():
    """The `FastWordpieceTokenizer` whose detokenize glues byte ids (1..255) into text."""
    return tf_text.FastWordpieceTokenizer(
        vocab=_BYTE_PIECES, suffix_indicator="##", unknown_token="[UNK]",
        token_out_type=tf.int32, no_pretokenization=True, support_detokenization=True)


def _ahead(x, k):
    """x[i + k] at each i of int32 [N], 0 past the end."""
    return tf.concat([x[k:], tf.zeros_like(x[:k])], 0)


def _flag(condition):
    return tf.cast(condition, tf.int32)


def _decode_utf8(b, n1, n2, n3):
    """(length, code_point), int32 [N]: the UTF-8 length and code point of the
    character that starts at each byte of `b` (int32 [N]; n1, n2, n3: the bytes
    1, 2, 3 after each, 0 past its text's end); 0 for a continuation byte or an
    invalid sequence (U+0000, which the tables delete)."""

    def is_continuation(x):
        return (x >= 0x80) & (x < 0xC0)

    # Sequence length by lead byte (0: a continuation byte, or a byte that
    # never starts a valid sequence).
    length = (_flag(b < 0x80) + 2 * _flag((b >= 0xC2) & (b < 0xE0))
              + 3 * _flag((b >= 0xE0) & (b < 0xF0)) + 4 * _flag((b >= 0xF0) & (b < 0xF5)))
    # The second byte's range excludes overlong forms, surrogates and code
    # points past U+10FFFF.
    low = 0x80 + 0x20 * _flag(b == 0xE0) + 0x10 * _flag(b == 0xF0)
    high = 0xBF - 0x20 * _flag(b == 0xED) - 0x30 * _flag(b == 0xF4)
    valid = (length == 1) | (
        (length >= 2) & (n1 >= low) & (n1 <= high)
        & ((length < 3) | is_continuation(n2)) & ((length < 4) | is_continuation(n3)))
    code_point = (
        b * _flag(length == 1)
        + ((b - 0xC0) * 64 + n1 - 0x80) * _flag(length == 2)
        + ((b - 0xE0) * 4096 + (n1 - 0x80) * 64 + n2 - 0x80) * _flag(length == 3)
        + ((b - 0xF0) * 262144 + (n1 - 0x80) * 4096 + (n2 - 0x80) * 64 + n3 - 0x80)
        * _flag(length == 4))
    return length * _flag(valid), tf.where(valid, code_point, 0)


def normalize_for_wordpiece(text, tables, detokenizer, max_chars_per_word):
    """Texts as BERT's reference normalizes them, with LiteRT kernels only.

    Args:
        text: string Tensor [B], any bytes (invalid UTF-8 is deleted).
        tables: dict of constant Tensors of `lite_text_tables`.
        detokenizer: `byte_detokenizer()`.
        max_chars_per_word: int; a longer word becomes `UNKNOWN_CHAR`.

    Returns:
        string Tensor [B]: each text cleaned, lower-cased and stripped of
        accents (uncased tables), whitespace as spaces, punctuation and CJK
        ideographs between spaces, after one leading space.
    """
    pieces = tf_text.ByteSplitter().split(text)
    splits = tf.cast(pieces.row_splits, tf.int32)  # (B + 1,)
    # All bytes of the batch in a row, then 3 zeros: a character's bytes are
    # read ahead of its first byte without an index past the end.
    b = tf.concat([tf.cast(pieces.values, tf.int32),
                   tf.zeros([_MAX_UTF8_BYTES - 1], tf.int32)], 0)  # (N,)
    size = tf.shape(b)
    # Number of texts starting at each byte (empty texts share a start):
    # its running sum, less one, is the text of each byte.
    # (LiteRT's SCATTER_ND fails without updates: each scatter here gets
    # one more, which adds 0, for an empty batch.)
    starts = tf.scatter_nd(tf.expand_dims(tf.concat([splits[:-1], [0]], 0), 1),
                           tf.concat([tf.ones_like(splits[:-1]), [0]], 0), size)
    row = tf.cumsum(starts) - 1
    # The bytes 1, 2, 3 ahead, 0 where they belong to another text.
    n1, n2, n3 = (tf.where(_ahead(row, k) == row, _ahead(b, k), 0) for k in (1, 2, 3))

    length, code_point = _decode_utf8(b, n1, n2, n3)
    block = tf.gather(tables["block_index"], tf.math.floordiv(code_point, _BLOCK))
    action = tf.gather(tables["blocks"], block * _BLOCK + tf.math.floormod(code_point, _BLOCK))
    delete = tf.math.floormod(action, 2) == 1
    space = tf.math.floormod(tf.math.floordiv(action, SPACE), 2) == 1
    isolate = tf.math.floormod(tf.math.floordiv(action, ISOLATE), 2) == 1
    body = tf.math.floordiv(action, 1 << BODY_SHIFT)  # (N,)

    # Each character becomes [space] body [space]: (N, 1 + width + 1).
    body_start = tf.gather(tables["body_splits"], body)
    body_length = tf.where(body > 0, tf.gather(tables["body_splits"], body + 1) - body_start,
                           length * _flag(~delete & ~space))
    width = max(_MAX_UTF8_BYTES,
                int(np.diff(tf.get_static_value(tables["body_splits"])).max(initial=0)))
    j = tf.expand_dims(tf.range(width), 0)  # (1, width)
    own = tf.stack([b, n1, n2, n3] + [tf.zeros_like(b)] * (width - _MAX_UTF8_BYTES), -1)
    replaced = tf.cast(tf.gather(tables["body_values"], tf.minimum(
        tf.expand_dims(body_start, -1) + j, tf.shape(tables["body_values"])[0] - 1)), tf.int32)
    body_bytes = tf.where(tf.expand_dims(body > 0, -1), replaced, own)
    # "Σ" lower-cases to "σ" (CF 83), or to "ς" (CF 82) at the end of a word.
    final = _final_sigma(code_point, action, delete, row)
    body_bytes = tf.where(tf.expand_dims(final, -1) & (j == 1), 0x82, body_bytes)
    emitted = tf.concat([
        tf.expand_dims(space | isolate, -1),
        j < tf.expand_dims(body_length, -1),
        tf.expand_dims(isolate, -1)], -1)
    blank = tf.fill(tf.shape(tf.expand_dims(b, -1)), 0x20)
    out = tf.concat([blank, body_bytes, blank], -1)

    emitted = tf.reshape(emitted, [-1])
    values = tf.boolean_mask(tf.reshape(out, [-1]), emitted)  # (E,)
    value_row = tf.boolean_mask(
        tf.reshape(tf.tile(tf.expand_dims(row, 1), [1, width + 2]), [-1]), emitted)
    num_rows = tf.shape(splits)[0] - 1
    values, value_row = _unknown_long_words(values, value_row, num_rows, max_chars_per_word)

    # Text r's ids: a space (id 0, the detokenizer's one non-suffix piece)
    # and its bytes, at r + (bytes of the texts before it) + 1 onwards.
    counts = tf.scatter_nd(tf.expand_dims(tf.concat([value_row, [num_rows]], 0), 1),
                           tf.concat([tf.ones_like(value_row), [0]], 0),
                           tf.expand_dims(num_rows + 1, 0))[:-1]  # (B,)
    out_splits = tf.concat([[0], tf.cumsum(counts + 1)], 0)  # (B + 1,)
    position = tf.range(tf.shape(values)[0]) + value_row + 1
    ids = tf.scatter_nd(tf.expand_dims(tf.concat([position, [0]], 0), 1),
                        tf.concat([values, [0]], 0), out_splits[-1:] + 1)
    ids = tf.reshape(ids, [-1])[:-1]  # A known rank, for the op's wrapper.
    return detokenizer.detokenize(tf.RaggedTensor.from_row_splits(
        ids, tf.cast(out_splits, tf.int64), validate=False))  # The op's splits dtype.


def _final_sigma(code_point, action, delete, row):
    """Python's final-sigma rule: which "Σ" (bool [N]) lower-case to "ς".

    A capital sigma after a cased character and not before one, case-ignorable
    and deleted characters skipped, within its text (a space or CJK
    ideograph, neither cased, ends the context as the reference's word
    split does). Always False with cased tables (no CASED bits).
    """
    cased = tf.math.floormod(tf.math.floordiv(action, CASED), 2) == 1
    ignorable = tf.math.floormod(tf.math.floordiv(action, CASE_IGNORABLE), 2) == 1
    stop = ~delete & ~ignorable  # Characters the context scans stop at.
    stops = tf.boolean_mask(tf.range(tf.shape(code_point)[0]), stop)
    before = tf.cumsum(_flag(stop), exclusive=True)
    previous = tf.gather(tf.concat([[-1], stops], 0), before)  # -1: none.
    following = tf.gather(tf.concat([stops, [-1]], 0), before + _flag(stop))

    def cased_at(position):
        at = tf.maximum(position, 0)
        return (position >= 0) & tf.equal(tf.gather(row, at), row) & tf.gather(cased, at)

    return tf.equal(code_point, 0x3A3) & cased_at(previous) & ~cased_at(following)


def _unknown_long_words(values, value_row, num_rows, max_chars_per_word):
    """Each word of more than `max_chars_per_word` characters becomes `UNKNOWN_CHAR`
    (one [UNK], as the reference makes it; the LiteRT kernel limits bytes).

    `values` (int32 [E]) are the normalized bytes of the batch's `num_rows` texts,
    `value_row` (int32 [E]) the text of each; returns both without dropped bytes.
    """
    # One more byte, a space in a text of its own: no segment op gets
    # empty input (an empty batch), and the last word ends.
    values = tf.concat([values, [0x20]], 0)
    value_row = tf.concat([value_row, tf.expand_dims(num_rows, 0)], 0)
    size = tf.shape(values)[0]
    index = tf.range(size)
    is_space = tf.equal(values, 0x20)
    first = tf.concat([[True], tf.not_equal(value_row[1:], value_row[:-1])], 0)
    after_space = tf.concat([[True], is_space[:-1]], 0)
    # Segments: each space, and each run of other bytes within a text.
    segment = tf.cumsum(_flag(first | is_space | after_space)) - 1
    is_char = ~is_space & ((values < 0x80) | (values >= 0xC0))  # Not a continuation.
    chars = tf.gather(tf.math.unsorted_segment_sum(_flag(is_char), segment, size), segment)
    rank = index - tf.gather(tf.math.unsorted_segment_min(index, segment, size), segment)
    long = chars > max_chars_per_word
    unknown = UNKNOWN_CHAR.encode("utf-8")  # 2 bytes; a long word has at least 2.
    values = tf.where(long & (rank == 0), unknown[0],
                      tf.where(long & (rank == 1), unknown[1], values))
    keep = (~long | (rank < 2)) & (value_row < num_rows)
    return tf.boolean_mask(values, keep), tf.boolean_mask(value_row, keep)
