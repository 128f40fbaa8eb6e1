"""XLM-RoBERTa's SentencePiece tokenizer, inside the TensorFlow graph."""

import base64
import functools
import hashlib
import json
import os
import re
import struct
import unicodedata

import keras
import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow_text.python.ops.sentencepiece_tokenizer import (
    gen_sentencepiece_tokenizer as _gen_sentencepiece)

from keras_bert import storage
from keras_bert.text.tokenizer import _VocabularyMethods
from keras_bert.text.tokenizer import _bytes_to_chars
from keras_bert.text.tokenizer import _check_bool_options
from keras_bert.text.tokenizer import _clean_up
from keras_bert.text.tokenizer import _code_point_class
from keras_bert.text.tokenizer import _id_rows

# fairseq's dictionary: these four ids, then SentencePiece piece i (i >= 3)
# as id i + 1, then "<mask>" last. SentencePiece's own "<unk>" (0) is id 3;
# its "<s>" and "</s>" (1, 2) are control pieces that encoding never emits.
FAIRSEQ_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")
MASK = "<mask>"
# What a model directory and a .keras file keep: the model proto.
MODEL_FILE = "sentencepiece.model"
_HF_MODEL_FILE = "sentencepiece.bpe.model"
_HF_TOKENIZER_JSON = "tokenizer.json"

# SentencePiece.Type values (sentencepiece_model.proto).
_NORMAL, _UNKNOWN, _CONTROL = 1, 2, 3
_UNIGRAM = 1
# Scores are rounded to multiples of 1 / _GRID: SentencePiece adds them in
# float32, and a word's sums (up to 2**24 / _GRID) are then exact, so
# segmentations of equal score (the same pieces in another order) tie as in
# transformers' float64 sums, and both keep the one whose last piece starts
# first. Scores that differ by less than 1 / _GRID are rare.
_GRID = 2.0 ** 14
# Characters a grapheme continues with (2 and 3 UTF-8 bytes; see
# `_as_transformers_normalizes`): marks, zero-width (non-)joiners.
_MARK = "[\\p{Mn}\\p{Me}\\p{Mc}\\x{200c}\\x{200d}\\x{ff9e}\\x{ff9f}\\x{e33}\\x{eb3}]"
# A grapheme ends after a control character.
_CONTROL_CHAR = (
    "[\\p{Cc}\\p{Zl}\\p{Zp}\\x{ad}\\x{600}-\\x{605}\\x{61c}\\x{6dd}\\x{70f}\\x{180e}\\x{200b}"
    "\\x{200e}-\\x{200f}\\x{2028}-\\x{202e}\\x{2060}-\\x{206f}\\x{feff}\\x{fff9}-\\x{fffb}]")
# Hangul vowel and final jamo continue a grapheme after Hangul.
_JAMO_VT, _HANGUL = "[\\x{1160}-\\x{11ff}]", "[\\x{1100}-\\x{11ff}\\x{ac00}-\\x{d7a3}]"
# Unicode White_Space, by UTF-8 length: transformers splits words on each
# (after normalization), SentencePiece only on " ". Each becomes as many
# spaces as it has bytes, so byte offsets stay those of the input.
_WHITESPACE_BY_LENGTH = (
    (1, "[\t\n\x0b\x0c\r]"),
    (2, "[\u0085\u00a0]"),
    (3, "[\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"),
)


# === Protocol buffer wire format (the few messages a model proto needs) ===

def _varint(value):
    value &= (1 << 64) - 1  # Negative int32 are 10-byte two's complement.
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number, value):
    """One field: int (varint), float (fixed32), str or bytes (length-delimited)."""
    if isinstance(value, float):
        return _varint(number << 3 | 5) + struct.pack("<f", value)
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    if isinstance(value, str):
        value = value.encode("utf-8")
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def _fields(data, what):
    """(number, value) of each field of a message: int, bytes or fixed32 float."""
    position = 0

    def varint():
        nonlocal position
        value = shift = 0
        while True:
            if position >= len(data) or shift > 63:
                raise ValueError(f"{what} is not a SentencePiece model proto (truncated varint).")
            byte = data[position]
            position += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    while position < len(data):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            value = varint()
        elif wire == 1:
            value, position = data[position:position + 8], position + 8
        elif wire == 2:
            size = varint()
            value, position = data[position:position + size], position + size
        elif wire == 5:
            value = struct.unpack("<f", data[position:position + 4])[0]
            position += 4
        else:
            raise ValueError(f"{what} is not a SentencePiece model proto (wire type {wire}).")
        if position > len(data):
            raise ValueError(f"{what} is not a SentencePiece model proto (truncated field).")
        yield number, value


def _read_model_proto(data, what):
    """A SentencePiece ModelProto's pieces [(str, float, type)] and precompiled_charsmap."""
    pieces, charsmap = [], b""
    for number, value in _fields(data, what):
        if number == 1:
            piece = dict(_fields(value, what))
            pieces.append((bytes(piece.get(1, b"")).decode("utf-8"),
                           float(piece.get(2, 0.0)), int(piece.get(3, _NORMAL))))
        elif number == 3:
            charsmap = bytes(dict(_fields(value, what)).get(2, b""))
    return pieces, charsmap


def _write_model_proto(pieces, charsmap):
    """A Unigram ModelProto of the pieces and normalization transformers uses.

    transformers reads any SentencePiece model (BPE ones too) as a Unigram
    model of its piece scores, adds the dummy prefix and removes extra
    whitespace whatever the file says: so does this proto.
    """
    message = b"".join(
        _field(1, _field(1, piece) + _field(2, round(score * _GRID) / _GRID) + _field(3, kind))
        for piece, score, kind in pieces)
    trainer = (_field(3, _UNIGRAM) + _field(4, len(pieces)) + _field(40, 0) + _field(41, 1)
               + _field(42, 2) + _field(43, -1))
    normalizer = (_field(1, "nmt_nfkc" if charsmap else "identity") + _field(2, charsmap)
                  + _field(3, 1) + _field(4, 1) + _field(5, 1))
    return message + _field(2, trainer) + _field(3, normalizer)


def _check_layout(pieces, what):
    """The pieces as fairseq's layout needs them: "<unk>" "<s>" "</s>" first."""
    head = [(p, k) for p, _, k in pieces[:3]]
    if head != [("<unk>", _UNKNOWN), ("<s>", _CONTROL), ("</s>", _CONTROL)]:
        raise ValueError(
            f"{what} does not start with the pieces <unk> <s> </s> (ids 0-2) that XLM-RoBERTa's "
            f"id layout needs. Found: {[p for p, _, _ in pieces[:3]]}. Train it with "
            "--unk_id=0 --bos_id=1 --eos_id=2 --pad_id=-1 (SentencePiece's defaults).")
    # transformers scores every other piece as a Unigram piece.
    return pieces[:3] + [(p, s, _NORMAL) for p, s, _ in pieces[3:]]


def _proto_from_model_file(data, what):
    pieces, charsmap = _read_model_proto(data, what)
    return _write_model_proto(_check_layout(pieces, what), charsmap)


def _proto_from_tokenizer_json(text, what):
    """The model proto of a Hugging Face tokenizer.json with XLM-R's Unigram model."""
    try:
        spec = json.loads(text)
        model = spec["model"]
        vocab = [(str(p), float(s)) for p, s in model["vocab"]]
        kind, unk_id = model.get("type"), model.get("unk_id")
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{what} is not a tokenizer.json with a Unigram model: {e!r}") from None
    if kind != "Unigram" or unk_id != 3 or [p for p, _ in vocab[:4]] != list(
            FAIRSEQ_SPECIALS) or vocab[-1][0] != MASK:
        raise ValueError(
            f"{what} holds a {kind} model (unk_id={unk_id}, first pieces "
            f"{[p for p, _ in vocab[:4]]}, last {vocab[-1][0] if vocab else None!r}), not XLM-R's "
            f"SentencePiece Unigram layout ({list(FAIRSEQ_SPECIALS)} ... {MASK!r}, unk_id=3).")
    charsmap = b""
    normalizer = spec.get("normalizer") or {}
    for step in normalizer.get("normalizers", [normalizer]):
        if step.get("type") == "Precompiled":
            charsmap = base64.b64decode(step.get("precompiled_charsmap") or "")
    pieces = ([("<unk>", 0.0, _UNKNOWN), ("<s>", 0.0, _CONTROL), ("</s>", 0.0, _CONTROL)]
              + [(p, s, _NORMAL) for p, s in vocab[4:-1]])
    return _write_model_proto(pieces, charsmap)


def _utf8(cps):
    """UTF-8 bytes of BMP code points: int array [N, 3] (zero-padded), lengths [N]."""
    length = 1 + (cps >= 0x80) + (cps >= 0x800)
    lead = np.select([length == 1, length == 2], [cps, 0xC0 | cps >> 6], 0xE0 | cps >> 12)
    middle = np.where(length == 2, 0x80 | (cps & 0x3F), 0x80 | ((cps >> 6) & 0x3F))
    last = np.where(length == 3, 0x80 | (cps & 0x3F), 0)
    return np.stack([lead, np.where(length > 1, middle, 0), last], axis=1), length


def _trie_lookup(units, utf8, length):
    """Which byte strings (rows of `utf8`, `length` bytes each) are keys of a
    darts-clone double array, all at once; and where each key's value is."""
    def offset(unit):
        return (unit >> 10) << ((unit & (1 << 9)) >> 6)

    position = np.full(len(utf8), offset(units[0]))
    alive = np.ones(len(utf8), bool)
    leaf = np.zeros(len(utf8), bool)
    for k in range(utf8.shape[1]):
        active = alive & (k < length)
        child = position ^ utf8[:, k]
        unit = units[np.minimum(child, len(units) - 1)]
        matched = (child < len(units)) & ((unit & ((1 << 31) | 0xFF)) == utf8[:, k])
        alive &= ~active | matched
        position = np.where(active & matched, child ^ offset(unit), position)
        leaf = np.where(active & (k == length - 1), matched & ((unit >> 8) & 1 == 1), leaf)
    return alive & leaf, position


def _charsmap_keys(charsmap):
    """What transformers' reading of the precompiled charsmap depends on.

    The charsmap is `[trie size: uint32][darts-clone double array][normalized
    strings]`.

    Returns:
        (code points of the BMP characters it maps on their own,
        {ASCII character: code points of the 2-byte marks it maps with},
        bool: whether it deletes "\x01").
    """
    if not charsmap:
        return [], {}, False
    (size,) = struct.unpack("<I", charsmap[:4])
    units = np.frombuffer(charsmap[4:4 + size], "<u4").astype(np.int64)
    cps = np.setdiff1d(np.arange(1, 0x10000), np.arange(0xD800, 0xE000))
    found, position = _trie_lookup(units, *_utf8(cps))
    deletes_x01 = bool(found[0]) and charsmap[4 + size + int(
        units[position[0]] & ((1 << 31) - 1))] == 0
    marks = np.array([c for c in range(0x300, 0x800) if unicodedata.category(chr(c))[0] == "M"])
    bases = np.repeat(np.arange(1, 0x80), len(marks))
    mark_bytes, _ = _utf8(np.tile(marks, 0x7F))
    pairs, _ = _trie_lookup(units, np.stack([bases, mark_bytes[:, 0], mark_bytes[:, 1]], 1),
                            np.full(len(bases), 3))
    with_marks = {}
    for base, mark in zip(bases[pairs], np.tile(marks, 0x7F)[pairs]):
        with_marks.setdefault(chr(base), []).append(int(mark))
    return cps[found].tolist(), with_marks, deletes_x01


@functools.lru_cache(maxsize=None)
def _composing_marks():
    """The characters NFKC may compose with the one before them: the marks of
    each character's NFKD after its first, and Hangul vowel and final jamo."""
    marks = set(range(0x1160, 0x1200))
    for cp in range(0x80, 0x30000):
        for char in unicodedata.normalize("NFKD", chr(cp))[1:]:
            if unicodedata.category(char)[0] == "M":
                marks.add(ord(char))
    return frozenset(marks)


def _as_transformers_normalizes(texts, keys):
    """The texts as tensorflow-text's SentencePiece op must see them for
    transformers' ids.

    1. Each byte of an invalid UTF-8 sequence becomes a space: transformers
       sees U+FFFD there, which XLM-R's normalization makes a space.
    2. transformers (tokenizers' Precompiled normalizer) replaces a grapheme
       of under 6 bytes by the mapping of its shortest prefix that the
       charsmap maps: the first character (U+FFFD included), or an ASCII
       letter and the mark after it. The marks after that prefix are dropped:
       they become "\x01"s, which the charsmap deletes. (SentencePiece maps
       the longest prefix, and the rest after it.)
    3. It maps each character of a longer grapheme on its own: a "\x01" goes
       before each character there that SentencePiece would compose with the
       one before it.
    A grapheme here is a character and the marks (and Hangul vowel and final
    jamo) after it. Steps 1 and 2 keep byte lengths.

    Args:
        texts: string Tensor [batch].
        keys: None, or RE2 patterns (one character the charsmap maps, an
            ASCII letter and a mark that it maps together, `composing`).

    Returns:
        (string Tensor [batch], int64 RaggedTensor [batch, (inserted)]: the
        positions of the "\x01"s of step 3 in the texts returned).
    """
    invalid = tf.not_equal(
        tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace"), texts)
    if keys is not None:
        key_class, pairs, composing = keys
        invalid |= tf.strings.regex_full_match(
            texts, f"(?s).*(?:(?:{key_class}|{pairs}){_MARK}|[^\\x00-\\x7f]{composing}).*")
    rows = tf.cast(invalid, tf.int32)
    kept, changed = tf.dynamic_partition(texts, rows, 2)
    row_index = tf.dynamic_partition(tf.range(tf.size(texts, tf.int64)), rows, 2)
    codes, starts = tf.strings.unicode_decode_with_offsets(changed, "UTF-8", errors="replace")
    row_of = starts.value_rowids()
    # Each character's bytes, as they are in the text.
    text_starts = tf.cumsum(tf.cast(tf.strings.length(changed), tf.int64), exclusive=True)
    flat = starts.flat_values
    chars = tf.strings.reduce_join(tf.RaggedTensor.from_row_splits(
        tf.strings.bytes_split(changed).flat_values,
        tf.concat([flat + tf.gather(text_starts, row_of),
                   [tf.reduce_sum(tf.cast(tf.strings.length(changed), tf.int64))]], axis=0),
        validate=False), axis=1)
    lengths = tf.cast(tf.strings.length(chars), tf.int64)
    index = tf.range(tf.size(flat, tf.int64))
    bad = tf.equal(codes.flat_values, 0xFFFD) & tf.not_equal(chars, "\ufffd")
    fill = tf.strings.substr(tf.fill(tf.shape(flat), " " * 4), tf.zeros_like(flat), lengths)
    inserted = tf.zeros_like(bad)
    if keys is not None:
        first_in_row = tf.equal(index, tf.gather(starts.row_splits, row_of))
        def after(pattern):  # Whether the character before matches.
            return tf.concat([[False], tf.strings.regex_full_match(chars, pattern)], 0)[:-1]

        is_mark = ~first_in_row & ~after(_CONTROL_CHAR) & (
            tf.strings.regex_full_match(chars, _MARK)
            | after(_HANGUL) & tf.strings.regex_full_match(chars, _JAMO_VT))
        grapheme = tf.cumsum(tf.cast(~is_mark, tf.int64)) - 1
        count = tf.reduce_sum(tf.cast(~is_mark, tf.int64))
        head = tf.math.unsorted_segment_min(index, grapheme, count)
        size = tf.math.unsorted_segment_sum(tf.where(bad, tf.constant(3, tf.int64), lengths),
                                            grapheme, count)
        # The shortest mapped prefix: 1 character, 2 (a letter and a mark), or none.
        with_next = tf.strings.join([chars, tf.concat([chars, [""]], axis=0)[1:]])
        prefix = tf.where(bad | tf.strings.regex_full_match(chars, key_class), 1,
                          tf.where(tf.strings.regex_full_match(with_next, pairs), 2, 0))
        prefix = tf.gather(tf.where(size < 6, tf.gather(prefix, head), 0), grapheme)
        dropped = is_mark & (prefix > 0) & (index - tf.gather(head, grapheme) >= tf.cast(
            prefix, tf.int64))
        fill = tf.where(dropped, tf.strings.substr(
            tf.fill(tf.shape(flat), "\x01" * 4), tf.zeros_like(flat), lengths), fill)
        bad |= dropped
        inserted = is_mark & tf.gather(size >= 6, grapheme) & tf.strings.regex_full_match(
            chars, composing)
        fill = tf.where(inserted, tf.strings.join(["\x01", chars]), fill)
        bad |= inserted
    fixed = tf.strings.reduce_join(starts.with_flat_values(tf.where(bad, fill, chars)), axis=1)
    # Where each "\x01" of step 3 is: its character's start, plus those before it in its row.
    before = tf.cumsum(tf.cast(inserted, tf.int64), exclusive=True)
    before -= tf.gather(before, tf.gather(starts.row_splits, row_of))
    positions = tf.boolean_mask(flat + before, inserted)
    return (tf.dynamic_stitch([tf.cast(i, tf.int32) for i in row_index], [kept, fixed]),
            tf.RaggedTensor.from_value_rowids(
                positions, tf.gather(row_index[1], tf.boolean_mask(row_of, inserted)),
                nrows=tf.size(texts, tf.int64)))


def _count_before(positions, offsets):
    """For each offset of row r (int32 RaggedTensor [batch, (n)]): how many of
    row r's sorted `positions` (int64 RaggedTensor [batch, (k)]) are below it."""
    scale = tf.reduce_max(tf.concat([tf.cast(offsets.flat_values, tf.int64),
                                     positions.flat_values, [0]], axis=0)) + 1
    keys = positions.flat_values + scale * positions.value_rowids()
    rows = offsets.value_rowids()
    found = tf.searchsorted(keys, tf.cast(offsets.flat_values, tf.int64) + scale * rows,
                            side="left", out_type=tf.int64)
    return offsets.with_flat_values(tf.cast(
        found - tf.gather(positions.row_splits, rows), tf.int32))


class _SentencePieceModel(tf.saved_model.experimental.TrackableResource):
    """tensorflow-text's SentencePiece model resource, under a name of its own.

    tensorflow-text's `SentencepieceTokenizer` leaves its resource to the kernel that made
    it, so `tf.random.set_seed` (which clears eager kernels) deletes it and every later
    call fails ("Resource ... SentencepieceOp does not exist"). A shared name (the
    proto's digest) keeps it in the resource manager; equal protos share one.
    """

    def __init__(self, proto):
        super().__init__()
        self._proto = proto
        self._shared_name = "keras_bert_sentencepiece_" + hashlib.sha256(proto).hexdigest()[:32]
        _ = self.resource_handle  # Creates the resource.

    def _create_resource(self):
        return _gen_sentencepiece.sentencepiece_op(model=self._proto,
                                                   shared_name=self._shared_name)

    def tokenize(self, texts):
        """string Tensor [n] -> int32 RaggedTensor [n, (pieces)] of SentencePiece ids."""
        ids, splits = _gen_sentencepiece.sentencepiece_tokenize_op(
            self.resource_handle, texts, 0, 1.0, False, False, False, tf.int32)
        return tf.RaggedTensor.from_row_splits(ids, splits, validate=False)

    def tokenize_with_offsets(self, texts):
        """(ids, byte starts, byte ends) RaggedTensors [n, (pieces)]."""
        ids, splits, starts, ends = _gen_sentencepiece.sentencepiece_tokenize_with_offsets_op(
            self.resource_handle, texts, 0, 1.0, False, False, False, tf.int32)
        return tuple(tf.RaggedTensor.from_row_splits(x, splits, validate=False)
                     for x in (ids, starts, ends))


@keras.saving.register_keras_serializable(package="keras_bert")
class SentencePieceTokenizer(_VocabularyMethods, keras.layers.Layer):
    """XLM-RoBERTa's SentencePiece tokenizer, in-graph, id for id with transformers.

    Gives the ids of transformers' `XLMRobertaTokenizer` (the Rust one of
    `tokenizer.json`, or of `sentencepiece.bpe.model`) with tensorflow-text's
    SentencePiece op, so it runs in `tf.data`, `tf.function` and a SavedModel
    that TF Serving loads. Ids follow fairseq's layout: `<s>`=0, `<pad>`=1,
    `</s>`=2, `<unk>`=3, SentencePiece piece i (i >= 3) is i + 1, `<mask>` is
    the last id. Texts are normalized by the model's precompiled charsmap
    (NFKC for XLM-R), split on Unicode whitespace and each word prefixed with
    "▁"; the pieces come from the Unigram model of the piece scores (as in
    transformers, whatever the model type the file was trained with).
    Consecutive unknown characters are one `<unk>`.

    Args:
        proto: bytes of a SentencePiece model proto, or the path of a
            `.model` file; None for one that `load_assets` sets later. A
            `.keras` file keeps it as an asset (`sentencepiece.model`).
        special_tokens_in_strings: bool. True (transformers' default): "<s>",
            "</s>", "<pad>", "<unk>" and "<mask>" written in the text become
            their ids, and the text on each side is tokenized on its own.
            False: they are tokenized as text.
        **kwargs: passed to `keras.layers.Layer`.

    Call arguments:
        inputs: string Tensor of shape [batch] (or a scalar string); a
            Python str or list of str is converted.

    Returns:
        int32 `tf.RaggedTensor` [batch, (num_tokens)] (an int32 Tensor
        [num_tokens] for a scalar): ids without special tokens.

    Example:
    >>> tokenizer = SentencePieceTokenizer.from_folder("xlm-roberta-base")
    >>> tokenizer(["Hello world"]).to_list()  # doctest: +SKIP
    [[35378, 8999]]
    """

    # `<s> a </s></s> b </s>`: two separators between a pair's texts.
    pair_separator = 2
    _NO_VOCABULARY = (
        "This SentencePieceTokenizer has no model yet (a config holds none: it is an "
        "asset of the .keras file). Load the model with keras.models.load_model, or "
        "call set_proto('sentencepiece.model').")

    def __init__(self, proto=None, special_tokens_in_strings=True, **kwargs):
        super().__init__(**kwargs)
        _check_bool_options(special_tokens_in_strings=special_tokens_in_strings)
        self.special_tokens_in_strings = special_tokens_in_strings
        self._proto = self._vocabulary = None
        if proto is not None:
            self.set_proto(proto)
        self.built = True

    @property
    def lowercase(self):
        """False: the model's normalization is all there is (read-only)."""
        return False

    def set_proto(self, proto):
        """Sets the model and builds the in-graph op from it.

        Args:
            proto: bytes of a SentencePiece model proto, or the path of a
                `.model` file.
        """
        if isinstance(proto, (bytes, bytearray)):
            what, data = "The SentencePiece model bytes", bytes(proto)
        else:
            what = f"The SentencePiece model file {os.fspath(proto)}"
            data = storage.read_bytes(os.fspath(proto))
        self._proto = _proto_from_model_file(data, what)
        pieces, charsmap = _read_model_proto(self._proto, what)
        self._vocabulary = list(FAIRSEQ_SPECIALS) + [p for p, _, _ in pieces[3:]] + [MASK]
        self._token_to_id = {}
        for index, token in enumerate(self._vocabulary):
            self._token_to_id.setdefault(token, index)
        (self.cls_token_id, self.pad_token_id, self.sep_token_id,
         self.unk_token_id) = range(4)
        self.mask_token_id = len(self._vocabulary) - 1
        with tf.init_scope(), tf.device("/CPU:0"):
            self._sentencepiece = _SentencePieceModel(self._proto)
            self._vocab_tensor = tf.constant(self._vocabulary, tf.string)
            self._special_tensor = tf.constant(FAIRSEQ_SPECIALS + (MASK,), tf.string)
        self._special_pattern = "|".join(re.escape(t) for t in FAIRSEQ_SPECIALS + (MASK,))
        keys, with_marks, deletes_x01 = _charsmap_keys(charsmap)
        self._keys = None
        if deletes_x01:
            # Marks SentencePiece may map with the character before them.
            composing = _composing_marks().union(
                c for c in keys if unicodedata.category(chr(c))[0] == "M" or c in (0xFF9E, 0xFF9F))
            self._keys = (_code_point_class(sorted(set(keys + [0xFFFD]))), "|".join(
                f"\\x{{{ord(base):x}}}{_code_point_class(marks)}"
                for base, marks in sorted(with_marks.items())) or "\\b\\B",  # (never matches)
                _code_point_class(sorted(composing)))

    @classmethod
    def from_folder(cls, path, **kwargs):
        """The tokenizer of a Hugging Face folder or a model directory.

        Reads `tokenizer.json` (XLM-R's Unigram model, as transformers does
        when it is there), else `sentencepiece.bpe.model` or
        `sentencepiece.model`.

        Args:
            path: the folder.
            **kwargs: passed to the constructor.
        """
        json_path = storage.join(path, _HF_TOKENIZER_JSON)
        if storage.exists(json_path):
            proto = _proto_from_tokenizer_json(
                storage.read_bytes(json_path).decode("utf-8"), f"The file {json_path}")
            return cls(proto, **kwargs)
        for name in (_HF_MODEL_FILE, MODEL_FILE):
            if storage.exists(storage.join(path, name)):
                return cls(storage.join(path, name), **kwargs)
        raise FileNotFoundError(
            f"The folder {path} holds no SentencePiece tokenizer: none of {_HF_TOKENIZER_JSON}, "
            f"{_HF_MODEL_FILE}, {MODEL_FILE}. Give the folder of an XLM-RoBERTa checkpoint "
            "(as transformers' save_pretrained writes it).")

    def save_vocabulary_files(self, folder):
        """Writes `sentencepiece.model` into `folder` (what `from_folder` reads back)."""
        storage.write_bytes(storage.join(folder, MODEL_FILE), self.proto)
        return [storage.join(folder, MODEL_FILE)]

    @property
    def proto(self):
        """bytes: the model proto the op runs (Unigram, fairseq's specials kept)."""
        self._require_vocabulary()
        return self._proto

    def detokenize(self, ids):
        """Joins ids back into (normalized) text, in the graph.

        "▁" becomes a space, the text's first space is dropped, `<pad>` ids
        are dropped (other special tokens are kept as written).

        Args:
            ids: int Tensor or RaggedTensor [batch, (num_tokens)], or [num_tokens].

        Returns:
            string Tensor [batch] (a scalar for rank-1 input).
        """
        ids, one = self._unpadded_rows(ids)
        text = tf.strings.reduce_join(self.ids_to_tokens(ids), axis=-1)
        text = tf.strings.regex_replace(tf.strings.regex_replace(text, "▁", " "), "^ ", "")
        return text[0] if one else text

    def decode(self, token_ids, skip_special_tokens=False, clean_up_tokenization_spaces=False):
        """One sequence of ids -> its (normalized) text, as transformers' `decode`.

        Python, not graph ops (use `detokenize` inside a `tf.function`).

        Args:
            token_ids: an int, a list of int, a 1-D NumPy array or Tensor.
            skip_special_tokens: bool. True drops `<s> <pad> </s> <unk> <mask>`.
            clean_up_tokenization_spaces: bool: remove the space before
                ".", "?", "!", "," and in " n't", " 's", ... (transformers' rule).

        Returns:
            str.
        """
        ids = _id_rows(token_ids, "token_ids", rank=1)
        skipped = self._special_ids if skip_special_tokens else set()
        text = "".join(self.id_to_token(i) for i in ids if i not in skipped).replace("▁", " ")
        text = text[1:] if text.startswith(" ") else text
        return _clean_up(text) if clean_up_tokenization_spaces else text

    def _tokenize(self, texts, with_offsets):
        """ids (and byte starts and ends): RaggedTensors [batch, (tokens)]."""
        texts, inserted = _as_transformers_normalizes(texts, self._keys)
        for length, pattern in _WHITESPACE_BY_LENGTH:
            texts = tf.strings.regex_replace(texts, pattern, " " * length)
        # Words (and special tokens written in the text) are tokenized one by
        # one, as transformers does: each gets its "▁", and Unigram scores add
        # up word by word (so equal-score segmentations tie exactly, see
        # `_write_model_proto`). The split op stops at NUL: it sees the texts
        # with NUL as \x01, and then the chunks are cut from the texts.
        kept = self._special_pattern if self.special_tokens_in_strings else ""
        pieces, starts, ends = tf_text.regex_split_with_offsets(
            tf.strings.regex_replace(texts, "\x00", "\x01"), " +|" + kept if kept else " +", kept)
        chunks = tf.cond(
            tf.reduce_any(tf.strings.regex_full_match(texts, "(?s).*\x00.*")),
            lambda: tf.strings.substr(tf.gather(texts, starts.value_rowids()), starts.flat_values,
                                      ends.flat_values - starts.flat_values),
            lambda: pieces.flat_values)
        if kept:
            matches = tf.equal(chunks[:, tf.newaxis], self._special_tensor)  # [chunks, 5]
            is_special = tf.reduce_any(matches, axis=1)
            chunks = tf.where(is_special, "", chunks)
        if with_offsets:
            ids, token_starts, token_ends = self._sentencepiece.tokenize_with_offsets(chunks)
            outputs = [ids, tf.cast(token_starts, tf.int32), tf.cast(token_ends, tf.int32)]
        else:
            outputs = [self._sentencepiece.tokenize(chunks)]
        # SentencePiece's <unk> (0) is fairseq's 3; piece i >= 3 is i + 1.
        outputs[0] = outputs[0].with_flat_values(
            tf.where(tf.equal(outputs[0].flat_values, 0), 3, outputs[0].flat_values + 1))
        if kept:
            # A special chunk is one token (its row above is empty): its id, its span.
            specials = [tf.gather([0, 1, 2, 3, self.mask_token_id],
                                  tf.argmax(tf.cast(matches, tf.int32), axis=1)),
                        tf.zeros_like(is_special, tf.int32),
                        tf.cast(ends.flat_values - starts.flat_values, tf.int32)]
            outputs = [tf.concat([x, tf.RaggedTensor.from_row_lengths(
                special[is_special], tf.cast(is_special, tf.int64))], axis=1)
                for x, special in zip(outputs, specials)]
        if with_offsets:
            shift = tf.gather(tf.cast(starts.flat_values, tf.int32), outputs[1].value_rowids())
            outputs[1:] = [x.with_flat_values(x.flat_values + shift) for x in outputs[1:]]
        outputs = [tf.RaggedTensor.from_row_splits(x, starts.row_splits, validate=False)
                   .merge_dims(1, 2) for x in outputs]
        # Offsets in the texts as given: less the "\x01"s inserted before them.
        return outputs[:1] + [x - _count_before(inserted, x) for x in outputs[1:]]

    def call(self, inputs):
        inputs, scalar = self._prepare(inputs)
        (ids,) = self._tokenize(inputs, with_offsets=False)
        return ids[0] if scalar else ids

    def tokenize_with_offsets(self, inputs, unit="BYTE"):
        """Tokenizes, and tells where each token comes from in the input.

        Args:
            inputs: string Tensor [batch] (or a scalar string).
            unit: "BYTE" (UTF-8 byte offsets) or "UTF8_CHAR" (code points).

        Returns:
            `(ids, starts, ends)`, int32 RaggedTensors [batch, (num_tokens)]
            (Tensors for a scalar input); `end` is exclusive. A lone "▁"
            (a word whose first piece has none) covers no text: start == end
            (transformers gives it the next character's span).
        """
        inputs, scalar = self._prepare(inputs, unit)
        ids, starts, ends = self._tokenize(inputs, with_offsets=True)
        if unit == "UTF8_CHAR":
            starts, ends = _bytes_to_chars(inputs, (starts, ends))
        outputs = (ids, starts, ends)
        return tuple(x[0] for x in outputs) if scalar else outputs

    def load_assets(self, dir_path):
        """Reads the model proto that `save_assets` wrote (Keras calls this)."""
        self.set_proto(storage.read_bytes(storage.join(dir_path, MODEL_FILE)))

    def get_config(self):
        # The model is an asset (`save_assets`), not megabytes here.
        config = super().get_config()
        config.update({"proto": None,
                       "special_tokens_in_strings": self.special_tokens_in_strings})
        return config
