"""In-graph BERT text normalization and pre-tokenization (private).

Reproduces google-research/bert's `BasicTokenizer` (steps 1-4 of
`BertTokenizer`'s docstring) with TensorFlow ops on code points. The
per-character decisions come from one lookup table computed with Python's
own `unicodedata` (the module the reference uses), built for the first
tokenizer and kept on disk (`unicode_tables`). Every output character keeps
the byte and character span of the input character it came from (offsets).
"""

import functools
import hashlib
import os
import tempfile
import unicodedata
import zipfile

import numpy as np
import tensorflow as tf

# Bits of the per-code-point info word. Bits 8 and up hold the index of the
# code point's uncased expansion (0: maps to itself).
DROP = 1  # Deleted by clean-text.
SPACE = 2  # Separates words.
PUNCT = 4  # A word of its own (punctuation).
CJK = 8  # A word of its own (CJK ideograph).
CASED = 16  # Cased and not case-ignorable (for the final sigma rule).
CASE_IGNORABLE = 32  # Skipped by the final sigma context scan.
EXPANSION_SHIFT = 8

_BLOCK = 256
_NUM_CODE_POINTS = 0x110000
_CAPITAL_SIGMA = 0x03A3
_FINAL_SIGMA = 0x03C2


def _is_cjk(cp):
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B820 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


def _is_punctuation(cp, category):
    return (
        33 <= cp <= 47
        or 58 <= cp <= 64
        or 91 <= cp <= 96
        or 123 <= cp <= 126
        or category.startswith("P")
    )


#: The normalizations of step 3, by name: (lower-case, strip accents).
#: "lower_strip" is BERT's uncased rule; "lower" and "strip" are the halves
#: that transformers' `strip_accents=False` / `strip_accents=True` with
#: `do_lower_case=False` select. A cased tokenizer (neither) has none.
NORMALIZATIONS = {
    "lower_strip": (True, True),
    "lower": (True, False),
    "strip": (False, True),
}
DEFAULT_NORMALIZATION = "lower_strip"


def normalization_of(lowercase, strip_accents):
    """The `NORMALIZATIONS` name of a tokenizer's options, None for none.

    `strip_accents=None` follows `lowercase` (transformers' rule, and
    google-research/bert's: uncased vocabularies strip accents).
    """
    strip = lowercase if strip_accents is None else strip_accents
    for name, rule in NORMALIZATIONS.items():
        if rule == (lowercase, strip):
            return name
    return None


def _normalized_form(char, normalization=DEFAULT_NORMALIZATION):
    """What the reference makes of `char` under `normalization`."""
    lower, strip = NORMALIZATIONS[normalization]
    if lower:
        char = char.lower()
    if not strip:
        return char
    decomposed = unicodedata.normalize("NFD", char)
    return "".join(
        c for c in decomposed if unicodedata.category(c) != "Mn"
    )


_TABLE_NAMES = ("block_index", "blocks", "expansion_values", "expansion_splits")
CACHE_DIR_ENV = "KERAS_BERT_CACHE_DIR"


def cache_dir():
    """Where keras_bert keeps files it can rebuild (str).

    `$KERAS_BERT_CACHE_DIR` if set, else `keras_bert` under
    `$XDG_CACHE_HOME` (default `~/.cache`).
    """
    if os.environ.get(CACHE_DIR_ENV):
        return os.environ[CACHE_DIR_ENV]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache"
    )
    return os.path.join(base, "keras_bert")


def tables_cache_path(normalization=DEFAULT_NORMALIZATION):
    """The cache file of `unicode_tables(normalization)`: one per Unicode
    version, version of this module (a hash of its source) and
    normalization, so a Python with other Unicode data, or a change to the
    rules here, never reads a stale table. None when this module's source
    can't be read (then nothing is cached)."""
    try:
        with open(__file__, "rb") as f:
            source_hash = hashlib.sha256(f.read()).hexdigest()[:16]
    except OSError:
        return None
    suffix = "" if normalization == DEFAULT_NORMALIZATION else f"-{normalization}"
    return os.path.join(
        cache_dir(),
        f"unicode-{unicodedata.unidata_version}-{source_hash}{suffix}.npz",
    )


def _read_tables(path):
    """The tables saved at `path`, or None if absent or unreadable."""
    try:
        with np.load(path, allow_pickle=False) as data:
            tables = {name: data[name] for name in _TABLE_NAMES}
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile):
        return None
    if any(t.dtype != np.int32 or t.ndim != 1 for t in tables.values()):
        return None
    return tables


def _write_tables(path, tables):
    """Saves the tables at `path` atomically; False where it can't."""
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, exist_ok=True)
        fd, temp = tempfile.mkstemp(
            dir=directory, prefix=".unicode-", suffix=".npz.tmp"
        )
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **tables)
        # Readers see the old file or the whole new one, never a part.
        os.replace(temp, path)
        return True
    except OSError:
        try:
            os.remove(temp)
        except OSError:
            pass
        return False


def load_or_build_tables(path, normalization=DEFAULT_NORMALIZATION):
    """The tables from the cache file `path`, built and saved if missing or
    unreadable (still returned when it can't be written; None: only built)."""
    tables = None if path is None else _read_tables(path)
    if tables is None:
        tables = build_unicode_tables(normalization)
        if path is not None:
            _write_tables(path, tables)
    return tables


@functools.lru_cache(maxsize=None)
def unicode_tables(normalization=DEFAULT_NORMALIZATION, remove_control_chars=True):
    """The lookup tables (`build_unicode_tables`): read once per process from
    `tables_cache_path()`, built and saved there on a miss. A cased tokenizer
    (None) uses the default tables and ignores their expansions."""
    normalization = normalization or DEFAULT_NORMALIZATION
    if not remove_control_chars:
        return keep_control_chars(unicode_tables(normalization), normalization)
    return load_or_build_tables(tables_cache_path(normalization), normalization)


def _char_bits(char, category, normalization, expansions, remove_control_chars=True):
    """The info word of one assigned character; appends its expansion, if any,
    to `expansions` (ragged rows of code points)."""
    cp = ord(char)
    bits = 0
    if char in "\t\n\r":
        bits |= SPACE
    elif cp == 0 or cp == 0xFFFD or (
            remove_control_chars and category in ("Cc", "Cf")):
        return DROP
    if category == "Zs" or char.isspace():
        bits |= SPACE
    if _is_punctuation(cp, category):
        bits |= PUNCT
    if _is_cjk(cp):
        bits |= CJK
    if category not in ("Co", "Cs"):
        # Python's own "cased" and "case-ignorable" properties, probed
        # through its final sigma rule: "<c>Σ" gets a final sigma iff c
        # is cased and not case-ignorable; "A<c>Σ" iff c is either.
        alone = (char + "Σ").lower()[-1] == "ς"
        after_cased = ("A" + char + "Σ").lower()[-1] == "ς"
        if alone:
            bits |= CASED
        elif after_cased:
            bits |= CASE_IGNORABLE
        uncased = _normalized_form(char, normalization)
        if uncased != char:
            bits |= len(expansions) << EXPANSION_SHIFT
            expansions.append([ord(c) for c in uncased])
    return bits


def keep_control_chars(tables, normalization=DEFAULT_NORMALIZATION):
    """`tables` with the control and format characters (Cc, Cf) kept as text.

    Such a character is an ordinary character of its word, a separator
    where Python's `str.isspace()` says so (U+0085, U+001C-U+001F);
    U+0000 and U+FFFD are still deleted. Only the blocks holding such
    characters are copied.

    Args:
        tables: dict of numpy arrays from `build_unicode_tables(normalization)`.
        normalization: the name they were built for.

    Returns:
        A new dict of the same arrays.
    """
    info = _info_of(tables)
    dropped = [int(cp) for cp in np.flatnonzero(info == DROP) if cp not in (0, 0xFFFD)]
    splits = tables["expansion_splits"]
    expansions = [list(tables["expansion_values"][splits[i]:splits[i + 1]])
                  for i in range(len(splits) - 1)]
    block_index = tables["block_index"].copy()
    blocks = list(tables["blocks"].reshape([-1, _BLOCK]))
    by_block = {}
    for cp in dropped:
        by_block.setdefault(cp // _BLOCK, []).append(cp)
    for number, members in sorted(by_block.items()):
        block = blocks[block_index[number]].copy()
        for cp in members:
            char = chr(cp)
            block[cp % _BLOCK] = _char_bits(char, unicodedata.category(char), normalization,
                                            expansions, remove_control_chars=False)
        block_index[number] = len(blocks)
        blocks.append(block)
    return _pack(block_index, np.concatenate(blocks), expansions)


def _pack(block_index, blocks, expansions):
    """The tables dict: int32 arrays, `expansions` (lists of code points) as ragged rows."""
    lengths = [len(e) for e in expansions]
    return {
        "block_index": block_index.reshape([-1]).astype(np.int32),
        "blocks": blocks.reshape([-1]).astype(np.int32),
        "expansion_values": np.array([c for e in expansions for c in e], np.int32),
        "expansion_splits": np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32),
    }


def build_unicode_tables(normalization=DEFAULT_NORMALIZATION):
    """Builds the lookup tables from Python's `unicodedata` (seconds).

    Args:
        normalization: a name of `NORMALIZATIONS`: what the expansions hold.

    Returns:
        A dict of numpy arrays:
        `block_index` int32 [0x110000 / 256]: block number per 256 code points;
        `blocks` int32 [num_blocks * 256]: info word per code point;
        `expansion_values` int32 and `expansion_splits` int32: the
        normalized form of each code point that it changes, as ragged rows
        (row 0 is a dummy).
    """
    if normalization not in NORMALIZATIONS:
        raise ValueError(
            f"Expected normalization to be one of {sorted(NORMALIZATIONS)}. "
            f"Received: normalization={normalization!r}"
        )
    expansions = [[0]]  # Row 0: unused dummy, keeps gathers in range.
    info = np.zeros([_NUM_CODE_POINTS], np.int32)
    for cp in range(_NUM_CODE_POINTS):
        char = chr(cp)
        category = unicodedata.category(char)
        if category == "Cn":
            # Unassigned: an ordinary (non-cased) character, except in the
            # CJK ranges, which the reference tests by number alone.
            if _is_cjk(cp):
                info[cp] = CJK
            continue
        info[cp] = _char_bits(char, category, normalization, expansions)
    # Two-level table: identical 256-code-point blocks are stored once.
    block_rows = info.reshape([-1, _BLOCK])
    unique_blocks, block_index = np.unique(block_rows, axis=0, return_inverse=True)
    return _pack(block_index, unique_blocks, expansions)


def _info_of(tables):
    """int32 [0x110000]: the info word of every code point."""
    code_points = np.arange(_NUM_CODE_POINTS)
    return tables["blocks"][tables["block_index"][code_points // _BLOCK] * _BLOCK
                            + code_points % _BLOCK]


def _info_of_all_code_points(normalization=DEFAULT_NORMALIZATION):
    return _info_of(unicode_tables(normalization))


@functools.lru_cache(maxsize=None)
def fast_path_candidates(normalization, tokenize_chinese_chars=True):
    """Non-ASCII characters that texts on the fast path may hold.

    Characters that the reference keeps as they are (not deleted, not
    changed by `normalization`) and that are separators or words of their
    own (punctuation; CJK ideographs with `tokenize_chinese_chars`), so
    tensorflow-text's own pre-tokenization agrees. Punctuation and
    whitespace must have had the same category in Unicode 3.2, so that any
    ICU that tensorflow-text links agrees; combining characters are left out
    (canonical reordering).

    Returns:
        A pair of sorted int arrays `(alone, space)`: the candidate
        stand-alone characters and the candidate separators.
    """
    info = _info_of_all_code_points(normalization)
    ok = (info & DROP) == 0
    if normalization:
        ok &= np.right_shift(info, EXPANSION_SHIFT) == 0
    if not tokenize_chinese_chars:
        ok &= (info & CJK) == 0
    ok[:0x80] = False
    alone, space = [], []
    for cp in np.flatnonzero(ok & ((info & (PUNCT | CJK | SPACE)) != 0)):
        char = chr(cp)
        bits = int(info[cp])
        if unicodedata.combining(char):
            continue
        if bits & CJK and not bits & (PUNCT | SPACE):
            alone.append(cp)
            continue
        if unicodedata.ucd_3_2_0.category(char) != unicodedata.category(char):
            continue
        if bits & SPACE and not bits & (PUNCT | CJK):
            space.append(cp)
        elif bits & PUNCT and not bits & (SPACE | CJK):
            alone.append(cp)
    return np.array(alone, np.int64), np.array(space, np.int64)


def _kept(keep, *tensors):
    """Each of the parallel per-character tensors [num_chars] at the positions `keep` is True
    (the positions found once for all of them: a boolean_mask each builds its own)."""
    positions = tf.reshape(tf.where(keep), [-1])
    return [tf.gather(tensor, positions) for tensor in tensors]


def _lookup(tables, code_points):
    """Info word for each code point. int32 Tensor, same shape."""
    # Code points are non-negative: shifts and masks, not // and %.
    block = tf.gather(
        tables["block_index"], tf.bitwise.right_shift(code_points, 8)
    )
    return tf.gather(
        tables["blocks"],
        tf.bitwise.bitwise_or(
            tf.bitwise.left_shift(block, 8), code_points & (_BLOCK - 1)
        ),
    )


def row_ids_of(row_splits, size):
    """Row of each of `size` values split by `row_splits` (int32 [size]).

    Same as `RaggedTensor.value_rowids()` or `tf.repeat(range, lengths)`,
    several times faster on CPU: each row start past 0 adds one, and the
    running sum gives the row (empty rows at the end add nothing).
    """
    starts = tf.cast(row_splits[1:-1], tf.int32)
    return tf.cumsum(
        tf.math.bincount(starts, minlength=size, maxlength=size)
    )


def _utf8_length(code_points):
    return (
        1
        + tf.cast(code_points >= 0x80, tf.int32)
        + tf.cast(code_points >= 0x800, tf.int32)
        + tf.cast(code_points >= 0x10000, tf.int32)
    )


def _final_sigma(code_points, info, row_ids):
    """True where Python's `str.lower()` turns U+03A3 into a final sigma.

    The rule: the sigma follows a cased character (case-ignorable characters
    in between are skipped) and is not followed by one. Whitespace is neither
    cased nor case-ignorable, so scanning the whole (cleaned) text gives the
    same answer as scanning the reference's whitespace-separated token.
    """
    n = tf.shape(code_points)[0]
    anchor = tf.equal(info & CASE_IGNORABLE, 0)  # Chars the scan stops on.
    anchor_pos = tf.cast(tf.where(anchor)[:, 0], tf.int32)
    num_anchors = tf.shape(anchor_pos)[0]
    anchors_through = tf.cumsum(tf.cast(anchor, tf.int32))
    anchors_before = anchors_through - tf.cast(anchor, tf.int32)
    padded = tf.concat([anchor_pos, [n]], 0)  # n: "no such character".

    prev_pos = tf.gather(padded, tf.maximum(anchors_before - 1, 0))
    prev_ok = (anchors_before > 0) & tf.equal(
        tf.gather(row_ids, tf.minimum(prev_pos, n - 1)), row_ids
    )
    prev_cased = prev_ok & tf.not_equal(
        tf.gather(info, tf.minimum(prev_pos, n - 1)) & CASED, 0
    )

    next_pos = tf.gather(padded, tf.minimum(anchors_through, num_anchors))
    next_ok = (next_pos < n) & tf.equal(
        tf.gather(row_ids, tf.minimum(next_pos, n - 1)), row_ids
    )
    next_cased = next_ok & tf.not_equal(
        tf.gather(info, tf.minimum(next_pos, n - 1)) & CASED, 0
    )
    return (
        tf.equal(code_points, _CAPITAL_SIGMA) & prev_cased & ~next_cased
    )


def never_split_index(strings, never_split):
    """Index of each string in `never_split`, -1 where absent.

    Args:
        strings: string Tensor [n].
        never_split: string Tensor [k], k >= 1 (a few tokens: an [n, k]
            comparison, no hash table to track in the SavedModel).

    Returns:
        int32 Tensor [n].
    """
    equal = tf.equal(tf.expand_dims(strings, 1), tf.expand_dims(never_split, 0))
    return tf.where(
        tf.reduce_any(equal, 1),
        tf.argmax(tf.cast(equal, tf.int32), 1, output_type=tf.int32),
        -1,
    )


def _protected(code_points, raw_id, nonspace, num_raw, never_split):
    """Per word (`raw_id` of each character): whether its non-space
    characters make a word of `never_split`."""
    words = tf.strings.unicode_encode(
        tf.RaggedTensor.from_value_rowids(
            tf.boolean_mask(code_points, nonspace),
            tf.cast(tf.boolean_mask(raw_id, nonspace), tf.int64),
            nrows=tf.cast(num_raw, tf.int64),
            validate=False),
        "UTF-8",
    )
    return never_split_index(words, never_split) >= 0


def _cut_segments(code_points, row_ids, cut_at):
    """Segment number of each character (int32 [n]): a new one at each
    occurrence of a string of `cut_at` and after it, so that no word spans
    its edges (transformers cuts special tokens out of the text first).

    Args:
        code_points, row_ids: int32 [n], the characters of the batch and the
            text of each.
        cut_at: tuple of str: each is matched by comparing its characters
            at each position (a few compares per character, core ops only).
    """
    n = tf.size(code_points)
    edge = tf.zeros([n], tf.bool)
    for token in cut_at:
        length = len(token)
        padded = tf.concat([code_points, tf.fill([length], -1)], 0)
        padded_rows = tf.concat([row_ids, tf.fill([length], -1)], 0)
        starts = tf.ones([n], tf.bool)
        for k, char in enumerate(token):
            starts &= tf.equal(padded[k:k + n], ord(char)) & tf.equal(
                padded_rows[k:k + n], row_ids)
        after = tf.concat([tf.zeros([length], tf.bool), starts], 0)[:n]
        edge |= starts | after
    return tf.cumsum(tf.cast(edge, tf.int32))


def pretokenize(texts, tables, lowercase, strip_accents=None,
                tokenize_chinese_chars=True, never_split=None, cut_at=()):
    """Splits a batch of strings into normalized words, as the reference does.

    Args:
        texts: string Tensor of shape [batch]. Invalid UTF-8 bytes are
            decoded as U+FFFD and then deleted, as the reference deletes
            U+FFFD.
        tables: dict of constant Tensors from
            `unicode_tables(normalization_of(lowercase, strip_accents))`.
        lowercase: bool. Lower-case (uncased vocabularies).
        strip_accents: bool or None (follows `lowercase`): NFD and drop
            combining marks.
        tokenize_chinese_chars: bool. Each CJK ideograph is a word.
        never_split: None, or a string Tensor [k >= 1]: a whitespace-separated
            word equal to one of them, before or after normalization, is
            kept whole (and, before, not normalized), as transformers does.
        cut_at: tuple of str (ASCII, none inside another's occurrence):
            each occurrence in the text, before clean-up, is a word
            boundary on both sides (special tokens written in the text; put
            them in `never_split` too, to keep them whole).

    Returns:
        A dict of flat Tensors:
        `words`: string [num_words], normalized words of the whole batch;
        `word_row_splits`: int64 [batch + 1], words of each input string;
        `word_num_chars`: int32 [num_words], length in code points;
        `word_char_splits`: int32 [num_words + 1], normalized characters of
            each word (indices into the arrays below);
        `char_byte_start`: int32 [num_chars], byte offset of each normalized
            character within the concatenation of all `words`;
        `orig_byte_start`, `orig_byte_end`, `orig_char_start`,
        `orig_char_end`: int32 [num_chars], span in the ORIGINAL input string
            of the input character each normalized character came from;
        with `never_split` only, `word_never_split`: int32 [num_words], the
        index of each word in `never_split`, -1 for none.
    """
    strip = lowercase if strip_accents is None else strip_accents
    batch_size = tf.shape(texts, out_type=tf.int64)[0]
    chars, byte_starts = tf.strings.unicode_decode_with_offsets(
        texts,
        "UTF-8",
        errors="replace",
        replacement_char=0xFFFD,
    )
    chars = chars.with_row_splits_dtype(tf.int64)
    byte_starts = tf.cast(byte_starts.with_row_splits_dtype(tf.int64), tf.int32)
    code_points = chars.flat_values
    row_ids = row_ids_of(chars.row_splits, tf.size(code_points))
    byte_start = byte_starts.flat_values
    # Each character ends where the next one starts, the last at the end.
    row_starts = tf.cast(chars.row_splits[:-1], tf.int32)
    row_limits = tf.cast(chars.row_splits[1:], tf.int32)
    next_index = tf.range(tf.size(code_points)) + 1
    is_last = tf.equal(next_index, tf.gather(row_limits, row_ids))
    text_bytes = tf.strings.length(texts)
    byte_end = tf.where(
        is_last,
        tf.gather(text_bytes, row_ids),
        tf.gather(
            tf.concat([byte_start, [0]], 0),
            tf.minimum(next_index, tf.size(code_points)),
        ),
    )
    char_index = tf.range(tf.size(code_points)) - tf.gather(row_starts, row_ids)

    # Segments: words never span an edge of a `cut_at` string. (Without
    # one, row_ids stands in: no extra pass on the default path.)
    segment = _cut_segments(code_points, row_ids, cut_at) if cut_at else row_ids

    # 1. Clean text.
    info = _lookup(tables, code_points)
    keep = tf.equal(info & DROP, 0)
    code_points, info, row_ids, byte_start, byte_end, char_index = _kept(
        keep, code_points, info, row_ids, byte_start, byte_end, char_index)
    segment = _kept(keep, segment)[0] if cut_at else row_ids

    # Whitespace-separated words (CJK ideographs apart), for never_split.
    cjk_bits = CJK if tokenize_chinese_chars else 0
    if never_split is not None:
        space = tf.not_equal(info & SPACE, 0)
        isolated = tf.not_equal(info & cjk_bits, 0)
        first_in_row = tf.not_equal(
            tf.concat([[-1], row_ids[:-1]], 0), row_ids) | tf.not_equal(
            tf.concat([[-1], segment[:-1]], 0), segment)
        starts_raw = ~space & (
            first_in_row | isolated
            | tf.concat([[True], space[:-1] | isolated[:-1]], 0)
        )
        num_raw = tf.reduce_sum(tf.cast(starts_raw, tf.int32))
        raw_id = tf.maximum(tf.cumsum(tf.cast(starts_raw, tf.int32)) - 1, 0)
        raw_kept = _protected(code_points, raw_id, ~space, num_raw, never_split)

    # 3. Lower-case and/or strip accents: each code point becomes 0..n others.
    if lowercase or strip:
        expansion = tf.bitwise.right_shift(info, EXPANSION_SHIFT)
        if never_split is not None:  # Kept words keep their text.
            expansion = tf.where(tf.gather(raw_kept, raw_id), 0, expansion)
        if lowercase:
            # The context scan costs a dozen passes: only run it on a sigma.
            final_sigma = tf.cond(
                tf.reduce_any(tf.equal(code_points, _CAPITAL_SIGMA)),
                lambda: _final_sigma(code_points, info, row_ids),
                lambda: tf.zeros_like(code_points, tf.bool),
            )
            if never_split is not None:
                final_sigma &= ~tf.gather(raw_kept, raw_id)
        else:
            final_sigma = tf.zeros_like(code_points, tf.bool)
        splits = tables["expansion_splits"]
        out_len = tf.where(
            expansion > 0,
            tf.gather(splits, expansion + 1) - tf.gather(splits, expansion),
            1,
        )
        out_end = tf.cumsum(out_len)
        out_start = out_end - out_len
        # The input character of each output one: tf.repeat(range, out_len).
        source = row_ids_of(
            tf.concat([[0], out_end], 0), tf.reduce_sum(out_len)
        )
        within = tf.range(tf.size(source)) - tf.gather(out_start, source)
        src_expansion = tf.gather(expansion, source)
        expanded = tf.gather(
            tables["expansion_values"],
            tf.gather(splits, src_expansion) + within,
        )
        new_code_points = tf.where(
            src_expansion > 0, expanded, tf.gather(code_points, source)
        )
        new_code_points = tf.where(
            tf.gather(final_sigma, source), _FINAL_SIGMA, new_code_points
        )
        src_info = tf.gather(info, source)
        code_points = new_code_points
        row_ids = tf.gather(row_ids, source)
        byte_start = tf.gather(byte_start, source)
        byte_end = tf.gather(byte_end, source)
        char_index = tf.gather(char_index, source)
        segment = tf.gather(segment, source) if cut_at else row_ids
        if never_split is not None:
            raw_id = tf.gather(raw_id, source)
        # Punctuation is split after lower-casing, so look it up again.
        info = (src_info & (SPACE | CJK)) | (
            _lookup(tables, code_points) & PUNCT
        )

    # 2 and 4. Word boundaries: whitespace separates, CJK and punctuation
    # characters stand alone.
    space = tf.not_equal(info & SPACE, 0)
    if never_split is None:
        alone = tf.not_equal(info & (PUNCT | cjk_bits), 0)
    else:
        # A kept word (as it was, or as normalized) splits at no punctuation.
        kept = _protected(code_points, raw_id, ~space, num_raw, never_split)
        kept = tf.gather(raw_kept | kept, raw_id) & ~space
        alone = tf.not_equal(info & cjk_bits, 0) | (
            tf.not_equal(info & PUNCT, 0) & ~kept)
    previous_row = tf.concat([[-1], row_ids[:-1]], 0)
    first_in_row = tf.not_equal(previous_row, row_ids)
    if cut_at:
        first_in_row |= tf.not_equal(tf.concat([[-1], segment[:-1]], 0), segment)
    previous_space = tf.concat([[True], space[:-1]], 0)
    previous_alone = tf.concat([[True], alone[:-1]], 0)
    starts_word = ~space & (
        first_in_row | alone | previous_alone | previous_space
    )
    keep = ~space
    code_points, starts_word, row_ids, byte_start, byte_end, char_index = _kept(
        keep, code_points, starts_word, row_ids, byte_start, byte_end, char_index)

    num_chars = tf.size(code_points)
    word_first_char = tf.cast(tf.where(starts_word)[:, 0], tf.int32)
    word_char_splits = tf.concat([word_first_char, [num_chars]], 0)
    word_chars = tf.RaggedTensor.from_row_splits(
        code_points, word_char_splits, validate=False
    )
    words = tf.strings.unicode_encode(word_chars, "UTF-8")
    word_rows = tf.gather(row_ids, word_first_char)
    # validate=False: the rows are sorted by construction, and the checks were
    # most of this function's ops.
    word_row_splits = tf.RaggedTensor.from_value_rowids(
        word_first_char, tf.cast(word_rows, tf.int64), nrows=batch_size, validate=False
    ).row_splits
    result = {
        "words": words,
        "word_row_splits": word_row_splits,
        "word_num_chars": word_char_splits[1:] - word_char_splits[:-1],
        "word_char_splits": word_char_splits,
        "char_byte_start": tf.cumsum(_utf8_length(code_points), exclusive=True),
        "orig_byte_start": byte_start,
        "orig_byte_end": byte_end,
        "orig_char_start": char_index,
        "orig_char_end": char_index + 1,
    }
    if never_split is not None:
        result["word_never_split"] = never_split_index(words, never_split)
    return result
