"""RoBERTa's (GPT-2's) byte-level BPE tokenizer, inside the TensorFlow graph."""

import json
import re

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert import storage
from keras_bert.text.tokenizer import _VocabularyMethods
from keras_bert.text.tokenizer import _check_bool_options
from keras_bert.text.tokenizer import _clean_up
from keras_bert.text.tokenizer import _id_rows

# The files of a model directory (RoBERTa's layout), also a .keras file's assets.
VOCAB_JSON = "vocab.json"
MERGES_TXT = "merges.txt"
TOKENIZER_JSON = "tokenizer.json"
# id attribute -> token, as RoBERTa and XLM-R name them.
_SPECIALS = {"cls_token_id": "<s>", "pad_token_id": "<pad>", "sep_token_id": "</s>",
             "unk_token_id": "<unk>", "mask_token_id": "<mask>"}

# GPT-2's split `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
# as tokenizers (Oniguruma) runs it. \s there is Unicode White_Space (RE2's is
# ASCII); the ranges after \p{L} and \p{N} are Unicode 16's letters and digits,
# which Oniguruma has and TensorFlow's RE2 tables lack. RE2 has no lookahead:
# here each whitespace character is a match of its own, and `_group_spaces`
# joins the runs back as the lookahead would have cut them.
_SPACE = (r"\t\n\x0b\x0c\r \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}"
          r"\x{202f}\x{205f}\x{3000}")
_LETTER = (r"\p{L}\x{1c89}-\x{1c8a}\x{a7cb}-\x{a7cd}\x{a7da}-\x{a7dc}\x{105c0}-\x{105f3}"
           r"\x{10d4a}-\x{10d65}\x{10d6f}-\x{10d85}\x{10ec2}-\x{10ec4}\x{11380}-\x{11389}"
           r"\x{1138b}\x{1138e}\x{11390}-\x{113b5}\x{113b7}\x{113d1}\x{113d3}"
           r"\x{11bc0}-\x{11be0}\x{13460}-\x{143fa}\x{16100}-\x{1611d}\x{16d40}-\x{16d6c}"
           r"\x{18cff}\x{1e5d0}-\x{1e5ed}\x{1e5f0}\x{2ebf0}-\x{2ee5d}")
_NUMBER = (r"\p{N}\x{10d40}-\x{10d49}\x{116d0}-\x{116e3}\x{11bf0}-\x{11bf9}"
           r"\x{16130}-\x{16139}\x{16d70}-\x{16d79}\x{1ccf0}-\x{1ccf9}\x{1e5f1}-\x{1e5fa}")
_SPLIT = (rf"'s|'t|'re|'ve|'m|'ll|'d| ?[{_LETTER}]+| ?[{_NUMBER}]+"
          rf"| ?[^{_SPACE}{_LETTER}{_NUMBER}]+|[{_SPACE}]")
# The same on ASCII texts, which RE2 matches three times faster.
_ASCII_SPLIT = (r"'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\t\n\x0b\x0c\r A-Za-z0-9]+"
                r"|[\t\n\x0b\x0c\r ]")
_NO_MERGE = tf.int64.max


def byte_to_char():
    """GPT-2's byte -> character map: list of 256 str, printable bytes as
    themselves, the others (controls, space, ...) as U+0100 onwards."""
    kept = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    chars, extra = {}, 0
    for byte in range(256):
        if byte in kept:
            chars[byte] = chr(byte)
        else:
            chars[byte] = chr(0x100 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


def _take_rows(values, splits, rows):
    """Rows `rows` (int64 [n]) of the ragged (values, row splits), as the same
    pair: `tf.gather` of a RaggedTensor, without its checks (they cost more
    than the gather on short texts)."""
    lengths = tf.gather(splits[1:] - splits[:-1], rows)
    new_splits = tf.concat([[0], tf.cumsum(lengths)], 0)
    position = tf.range(new_splits[-1])
    row = tf.searchsorted(new_splits, position, side="right", out_type=tf.int64) - 1
    source = tf.gather(splits, tf.gather(rows, row)) + position - tf.gather(new_splits, row)
    return tf.gather(values, source), new_splits


def _split_words(texts):
    """GPT-2's words of valid UTF-8 texts [batch]: (words, starts, ends),
    RaggedTensors [batch, (words)] of the words and their byte spans.

    `_SPLIT`'s one-character whitespace matches are joined back: a run of
    whitespace before a non-space is one word less its last character,
    which goes with the next word if it is " " (`_SPLIT` put it there
    already) or is a word alone; a run at the end is one word.
    """
    # tensorflow-text's regex split ends a text at its first NUL: split a
    # copy with another control character there, cut the words from `texts`.
    safe = tf.strings.regex_replace(texts, r"\x00", "\x01")
    ascii_text = tf.strings.regex_full_match(safe, r"[\x01-\x7f]*")
    # One of the two splits of each text is of "": a row's words are the other's.
    ascii_split, other_split = (
        tf_text.regex_split_with_offsets(tf.where(ascii_text, safe, ""), _ASCII_SPLIT,
                                         _ASCII_SPLIT),
        tf_text.regex_split_with_offsets(tf.where(ascii_text, "", safe), _SPLIT, _SPLIT))
    splits = ascii_split[0].row_splits + other_split[0].row_splits
    place = [tf.cast(tf.gather(splits - x.row_splits, x.value_rowids()), tf.int32)
             + tf.range(tf.size(x.flat_values)) for x in (ascii_split[0], other_split[0])]
    flat, starts, ends = (tf.dynamic_stitch(place, [a.flat_values, b.flat_values])
                          for a, b in zip(ascii_split, other_split))
    num_rows = tf.size(texts, out_type=tf.int64)
    position = tf.range(tf.size(flat, out_type=tf.int64))
    rows = tf.searchsorted(splits, position, side="right", out_type=tf.int64) - 1
    first = tf.equal(position, tf.gather(splits, rows))
    last = tf.equal(position + 1, tf.gather(splits, rows + 1))
    is_space = tf.strings.regex_full_match(flat, f"[{_SPACE}]")
    leading_space = tf.strings.substr(flat, 0, 1) == " "
    after = lambda x: tf.concat([x[1:], [False]], 0)  # noqa: E731 (x[i + 1])
    before = tf.concat([[False], is_space[:-1]], 0)  # is_space[i - 1]
    # The last character of a run before a word that has not taken it.
    alone = is_space & ~last & ~after(is_space) & ~after(leading_space & ~is_space)
    start = first | ~is_space | ~before | alone
    group = tf.cumsum(tf.cast(start, tf.int64)) - 1
    word_rows = tf.boolean_mask(rows, start)
    word_starts = tf.math.segment_min(starts, group)
    word_ends = tf.math.segment_max(ends, group)
    words = tf.strings.substr(tf.gather(texts, word_rows), word_starts, word_ends - word_starts)
    return tuple(tf.RaggedTensor.from_value_rowids(x, word_rows, nrows=num_rows, validate=False)
                 for x in (words, word_starts, word_ends))


def _read_json(path):
    try:
        return json.loads(storage.read_bytes(path).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path} is not a JSON file ({e}). Replace it with the "
                         "model's original file.") from None


def _read_merges(path):
    """merges.txt -> list of (left, right): one "left right" a line after
    the "#version" line."""
    merges = []
    text = storage.read_bytes(path).decode("utf-8")
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("#version") or not line:
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not all(parts):
            raise ValueError(
                f"{path} line {number}: expected two tokens separated by one space "
                f"(a BPE merge). Received: {line!r}.")
        merges.append(tuple(parts))
    return merges


def _check_bpe_json(model, path):
    """The options of tokenizer.json's model that RoBERTa's BPE leaves off: a clear error."""
    if model.get("type") != "BPE":
        raise ValueError(
            f"{path} holds a {model.get('type')} model, not byte-level BPE: "
            "BytePairTokenizer reads RoBERTa/GPT-2 folders (a SentencePiece "
            "Unigram model is XLM-R's).")
    for key, plain in (("dropout", None), ("continuing_subword_prefix", ""),
                       ("end_of_word_suffix", ""), ("byte_fallback", False),
                       ("ignore_merges", False)):
        if model.get(key) not in (plain, None):
            raise ValueError(
                f"{path}: BPE option {key}={model[key]!r} is not RoBERTa's byte-level "
                f"BPE (expected {plain!r}); BytePairTokenizer does not run it.")


def _byte_level_options(config, path):
    """tokenizer.json's add_prefix_space and trim_offsets, checked to be byte-level."""
    pre = config.get("pre_tokenizer") or {}
    if config.get("normalizer") or pre.get("type") != "ByteLevel" or not pre.get(
            "use_regex", True):
        raise ValueError(
            f"{path}: expected RoBERTa's text steps (no normalizer, a ByteLevel "
            f"pre-tokenizer with its regex). Received: normalizer="
            f"{config.get('normalizer')!r}, pre_tokenizer={pre!r}.")
    post = config.get("post_processor") or {}
    return {"add_prefix_space": bool(pre.get("add_prefix_space", False)),
            "trim_offsets": bool(post.get("trim_offsets", True))}


def _lstrip_tokens(added_tokens, path):
    """The special tokens that take the whitespace before them, from a file's
    added tokens (dicts with "content", "lstrip", ...); a clear error for an
    added token that BytePairTokenizer does not run as transformers would."""
    lstrip = []
    for token in added_tokens:
        if token["content"] not in _SPECIALS.values() or token.get("rstrip") or token.get(
                "single_word"):
            raise ValueError(
                f"{path}: added token {token!r} is not one of RoBERTa's special tokens "
                f"{list(_SPECIALS.values())} as BytePairTokenizer runs them (no rstrip, "
                "no single_word).")
        if token.get("lstrip"):
            lstrip.append(token["content"])
    return lstrip


def read_bpe_folder(folder):
    """A Hugging Face folder's byte-level BPE files.

    tokenizer.json when present (as transformers prefers it), else
    vocab.json + merges.txt (and tokenizer_config.json's add_prefix_space and
    trim_offsets, when present).

    Returns:
        (vocabulary, merges, options): dict token -> id, list of (left,
        right), dict of `BytePairTokenizer` arguments.
    """
    path = storage.join(folder, TOKENIZER_JSON)
    if storage.exists(path):
        config = _read_json(path)
        model = config.get("model") or {}
        _check_bpe_json(model, path)
        options = _byte_level_options(config, path)
        vocabulary = dict(model.get("vocab") or {})
        added = config.get("added_tokens") or []
        vocabulary.update({token["content"]: token["id"] for token in added})
        options["lstrip_tokens"] = _lstrip_tokens(added, path)
        merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m)
                  for m in model.get("merges") or []]
        return vocabulary, merges, options
    vocab_path, merges_path = (storage.join(folder, n) for n in (VOCAB_JSON, MERGES_TXT))
    if not (storage.exists(vocab_path) and storage.exists(merges_path)):
        found = sorted(storage.listdir(folder)) if storage.isdir(folder) else None
        raise FileNotFoundError(
            f"{folder} holds no byte-level BPE tokenizer: expected {TOKENIZER_JSON}, "
            f"or {VOCAB_JSON} and {MERGES_TXT} (RoBERTa's files). Found: "
            f"{found if found is not None else 'no such folder'}.")
    options = {}
    config_path = storage.join(folder, "tokenizer_config.json")
    if storage.exists(config_path):
        config = _read_json(config_path)
        options = {k: bool(config[k]) for k in ("add_prefix_space", "trim_offsets")
                   if k in config}
        options["lstrip_tokens"] = _lstrip_tokens(
            (config.get("added_tokens_decoder") or {}).values(), config_path)
    return _read_json(vocab_path), _read_merges(merges_path), options


@keras.saving.register_keras_serializable(package="keras_bert")
class BytePairTokenizer(_VocabularyMethods, keras.layers.Layer):
    """RoBERTa's byte-level BPE tokenizer, in-graph and id-for-id with transformers.

    Gives the ids of transformers' `RobertaTokenizer` (the tokenizers
    library's BPE) of the same files, with TensorFlow and tensorflow-text ops
    only, so it runs in `tf.data`, `tf.function` and exported SavedModels:

    1. invalid UTF-8 becomes U+FFFD (Python's `errors="replace"`);
       `add_prefix_space` puts a space before a text that does not start
       with one;
    2. GPT-2's regex splits the text into words: contractions, an optional
       space then letters, digits or other characters, whitespace runs;
    3. each word's UTF-8 bytes become GPT-2's byte characters, which are
       merged pair by pair, lowest merge rank first, into vocabulary tokens.

    Args:
        vocabulary: dict token -> id, or the path of a `vocab.json`; None for
            one that `set_vocabulary` or `load_assets` sets later. Must hold
            `<s>`, `<pad>`, `</s>`, `<unk>` and `<mask>`.
        merges: list of "left right" str or (left, right) pairs, highest
            priority first, or the path of a `merges.txt`.
        add_prefix_space: bool. True: a text is tokenized as if a space came
            before it, so its first word gets the same ids as inside a
            sentence (what transformers needs for words given one by one).
        trim_offsets: bool. True (RoBERTa): a token's offsets leave out the
            spaces it starts or ends with.
        special_tokens_in_strings: bool. False: "<mask>" in the text is
            tokenized as text. True (transformers' way): the five special
            tokens written in the text become their ids, and the text
            between them is tokenized piece by piece.
        lstrip_tokens: list of special tokens that, written in the text,
            take the whitespace before them (roberta-base's tokenizer.json
            says so of `<mask>`); `from_folder` reads them from the files.
        clean_up_tokenization_spaces: bool, `detokenize`'s default: True
            removes the space that transformers' clean-up removes before
            punctuation.
        **kwargs: passed to `keras.layers.Layer`.

    Call arguments:
        inputs: string Tensor [batch] or scalar (a Python str or list of str
            is converted).

    Returns:
        int32 RaggedTensor [batch, (num_tokens)] (int32 Tensor [num_tokens]
        for a scalar): the ids, without special tokens.

    Example:
    >>> tokenizer = BytePairTokenizer.from_folder("path/to/roberta-base")
    >>> tokenizer(["Hello world"]).to_list()
    [[31414, 232]]
    """

    # Separators between the two texts of a pair: `<s> a </s></s> b </s>`.
    pair_separator = 2
    _NO_VOCABULARY = (
        "This BytePairTokenizer has no vocabulary yet (a config holds none: "
        "it is saved as an asset of the .keras file). Load the model with "
        "keras.models.load_model, or use BytePairTokenizer.from_folder(FOLDER).")

    def __init__(self, vocabulary=None, merges=None, add_prefix_space=False,
                 trim_offsets=True, special_tokens_in_strings=False, lstrip_tokens=(),
                 clean_up_tokenization_spaces=False, **kwargs):
        super().__init__(**kwargs)
        _check_bool_options(add_prefix_space=add_prefix_space, trim_offsets=trim_offsets,
                            special_tokens_in_strings=special_tokens_in_strings,
                            clean_up_tokenization_spaces=clean_up_tokenization_spaces)
        self.add_prefix_space = add_prefix_space
        self.trim_offsets = trim_offsets
        self.special_tokens_in_strings = special_tokens_in_strings
        if isinstance(lstrip_tokens, str) or not set(lstrip_tokens) <= set(_SPECIALS.values()):
            raise ValueError(f"Expected lstrip_tokens to be a list of {list(_SPECIALS.values())}. "
                             f"Received: lstrip_tokens={lstrip_tokens!r}")
        self.lstrip_tokens = sorted(lstrip_tokens)
        self.clean_up_tokenization_spaces = clean_up_tokenization_spaces
        self._vocabulary = None
        if (vocabulary is None) != (merges is None):
            raise ValueError("Pass both vocabulary and merges, or neither (for "
                             "load_assets to set them).")
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, merges)
        self.built = True

    @property
    def lowercase(self):
        """False: byte-level BPE keeps the text as it is."""
        return False

    @classmethod
    def from_folder(cls, folder, **kwargs):
        """The tokenizer of a Hugging Face RoBERTa folder (see `read_bpe_folder`).

        Args:
            folder: str, a local or gfile folder.
            **kwargs: constructor arguments that replace the files' ones.
        """
        vocabulary, merges, options = read_bpe_folder(folder)
        return cls(vocabulary, merges, **{**options, **kwargs})

    def save_vocabulary_files(self, folder):
        """Writes vocab.json and merges.txt (RoBERTa's files) into `folder`;
        `from_folder` reads them back."""
        self._require_vocabulary()
        vocab = {token: i for i, token in enumerate(self._vocabulary)}
        storage.write_bytes(storage.join(folder, VOCAB_JSON),
                            json.dumps(vocab, ensure_ascii=False).encode("utf-8"))
        lines = ["#version: 0.2"] + [f"{a} {b}" for a, b in self._merges]
        storage.write_bytes(storage.join(folder, MERGES_TXT),
                            ("\n".join(lines) + "\n").encode("utf-8"))

    def set_vocabulary(self, vocabulary, merges):
        """Sets the vocabulary and merges and builds the in-graph tables.

        Args:
            vocabulary: dict token -> id, or the path of a vocab.json.
            merges: list of "left right" str or pairs, or the path of a
                merges.txt.
        """
        if isinstance(vocabulary, str):
            vocabulary = _read_json(vocabulary)
        if isinstance(merges, str):
            merges = _read_merges(merges)
        if not isinstance(vocabulary, dict) or not all(
                isinstance(t, str) and isinstance(i, int) for t, i in vocabulary.items()):
            raise ValueError("Expected vocabulary to be a dict token (str) -> id (int) or "
                             f"the path of a vocab.json. Received: {str(vocabulary):.200}")
        size = max(vocabulary.values(), default=-1) + 1
        tokens = [None] * size
        for token, index in vocabulary.items():
            tokens[index] = token
        if None in tokens or min(vocabulary.values(), default=0) < 0:
            missing = tokens.index(None) if None in tokens else min(vocabulary.values())
            raise ValueError(f"The vocabulary's ids are not 0 ... {size - 1}: no token has "
                             f"id {missing}. Use the model's own vocab.json.")
        for name, token in _SPECIALS.items():
            if token not in vocabulary:
                raise ValueError(
                    f"The vocabulary has no {token!r}: RoBERTa's byte-level BPE needs "
                    f"{list(_SPECIALS.values())}.")
            setattr(self, name, vocabulary[token])
        ranks = {}
        pairs = []
        for rank, merge in enumerate(merges):
            left, right = merge.split(" ") if isinstance(merge, str) else merge
            for token in (left, right, left + right):
                if token not in vocabulary:
                    raise ValueError(f"Merge {rank} ({left!r} {right!r}) needs {token!r}, "
                                     "which the vocabulary lacks. Use the merges and "
                                     "vocabulary of one model.")
            key = vocabulary[left] * size + vocabulary[right]
            ranks[key] = (rank << 32) | vocabulary[left + right]  # A later repeat wins.
            pairs.append((left, right))
        chars = byte_to_char()
        # object.__setattr__: Keras and TensorFlow would wrap these lists and
        # dicts for tracking, element by element (seconds for 50,000 tokens).
        object.__setattr__(self, "_vocabulary", tokens)
        object.__setattr__(self, "_token_to_id", dict(vocabulary))
        object.__setattr__(self, "_merges", pairs)
        # Leftmost, then longest (tokenizers' added vocabulary).
        self._special_pattern = "|".join(
            (f"[{_SPACE}]*" if t in self.lstrip_tokens else "") + re.escape(t)
            for t in sorted(_SPECIALS.values(), key=len, reverse=True))
        with tf.init_scope(), tf.device("/CPU:0"):
            self._size = tf.constant(size, tf.int64)
            self._merge_table = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    tf.constant(list(ranks) or [-1], tf.int64),
                    tf.constant(list(ranks.values()) or [_NO_MERGE], tf.int64)),
                default_value=_NO_MERGE)
            self._byte_ids = tf.constant([vocabulary.get(c, -1) for c in chars], tf.int32)
            # Bytes of each token: GPT-2 characters are one byte each.
            self._token_bytes = tf.constant([len(t) for t in tokens], tf.int32)
            # Spaces ("Ġ") a token starts and ends with, for trim_offsets.
            self._leading_spaces = tf.constant(
                [len(t) - len(t.lstrip("\u0120")) for t in tokens], tf.int64)
            self._trailing_spaces = tf.constant(
                [len(t) - len(t.rstrip("\u0120")) for t in tokens], tf.int64)
            self._vocab_tensor = tf.constant(tokens, tf.string)
            self._special_table = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    tf.constant(list(_SPECIALS.values())),
                    tf.constant([vocabulary[t] for t in _SPECIALS.values()], tf.int32)),
                default_value=-1)
            # Character (code point < 324) -> its byte, for detokenize.
            char_bytes = [chr(c).encode("utf-8") for c in range(324)]
            for byte, char in enumerate(chars):
                char_bytes[ord(char)] = bytes([byte])
            self._char_bytes = tf.constant(char_bytes, tf.string)
            # The words whose merges end in one token (most words of a text):
            # word bytes -> id, looked up before the merge loop.
            self._word_table = None
            values = {c: b for b, c in enumerate(chars)}
            words = [bytes(values[c] for c in t) for t in tokens if all(c in values for c in t)]
            ids, splits = tf.function(self._merge_loop, autograph=False)(
                tf.constant(words or [b""], tf.string))
            single = splits[1:] - splits[:-1] == 1
            self._word_table = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    tf.boolean_mask(tf.constant(words or [b""], tf.string), single),
                    tf.gather(ids, tf.boolean_mask(splits[:-1], single))),
                default_value=-1)

    @property
    def merges(self):
        """The merges, list of (left, right), highest priority first."""
        self._require_vocabulary()
        return list(self._merges)

    def _words(self, texts):
        """Valid UTF-8 texts [batch] -> (words, starts, ends, prefixed): the
        words (string RaggedTensor [batch, (words)]) and their byte spans in
        the texts as `add_prefix_space` left them, and int64 [batch], 1 where
        it put a space first."""
        prefixed = tf.zeros_like(texts, tf.int64)
        if self.add_prefix_space:
            prefixed = tf.cast(~tf.strings.regex_full_match(texts, "(?s)( .*|)"), tf.int64)
            texts = tf.where(prefixed > 0, tf.strings.join([" ", texts]), texts)
        return (*_split_words(texts), prefixed)

    def _merge(self, words):
        """Byte-level BPE of each word: string Tensor [n] -> int32 RaggedTensor [n, (ids)]."""
        unique, index = tf.unique(words, out_idx=tf.int64)
        if self._word_table is None:
            values, splits = self._merge_loop(unique)
        else:
            # One-token words from the table, the others through the merge loop.
            found = self._word_table.lookup(unique)
            hit = tf.where(found >= 0)[:, 0]
            rest = tf.where(found < 0)[:, 0]
            values, splits = self._merge_loop(tf.gather(unique, rest))
            num_hit = tf.size(hit, out_type=tf.int64)
            values = tf.concat([tf.gather(found, hit), values], 0)
            splits = tf.concat([tf.range(num_hit), splits + num_hit], 0)
            index = tf.gather(tf.math.invert_permutation(tf.concat([hit, rest], 0)), index)
        return tf.RaggedTensor.from_row_splits(*_take_rows(values, splits, index), validate=False)

    def _merge_loop(self, unique):
        """BPE of distinct words: string Tensor [n] -> (ids, row_splits), int32
        [pieces] and int64 [n + 1]."""
        # (symbols,): each byte's GPT-2 character id; a byte the vocabulary
        # lacks is dropped, as tokenizers' BPE without an unknown token does.
        raw = tf.io.decode_raw(tf.strings.reduce_join(unique), tf.uint8)
        ids = tf.gather(self._byte_ids, tf.cast(raw, tf.int32))
        word = tf.repeat(tf.range(tf.size(unique, out_type=tf.int64)),
                         tf.cast(tf.strings.length(unique), tf.int64))
        word = tf.boolean_mask(word, ids >= 0)
        ids = tf.boolean_mask(ids, ids >= 0)
        num_words = tf.size(unique)

        def step(ids, word, _):
            # Pair p = (ids[p], ids[p + 1]) inside one word: its merge as
            # rank << 32 | merged id, or _NO_MERGE.
            same = tf.equal(word[:-1], word[1:])
            keys = tf.cast(ids[:-1], tf.int64) * self._size + tf.cast(ids[1:], tf.int64)
            merge = tf.where(same, self._merge_table.lookup(keys), _NO_MERGE)
            best = tf.math.unsorted_segment_min(merge, word[:-1], num_words)
            hit = (merge < _NO_MERGE) & tf.equal(merge, tf.gather(best, word[:-1]))
            # Repeats overlap ("a a a" for "a a"): every other one of a run, from the left.
            run_start = hit & ~tf.concat([[False], hit[:-1]], 0)
            run = tf.cumsum(tf.cast(run_start, tf.int64)) - 1
            first = tf.gather(tf.concat([tf.where(run_start)[:, 0], [0]], 0), tf.maximum(run, 0))
            take = hit & tf.equal((tf.range(tf.size(hit, out_type=tf.int64)) - first) % 2, 0)
            merged = tf.where(take, tf.cast(merge & 0xFFFFFFFF, tf.int32), ids[:-1])
            keep = ~tf.concat([[False], take], 0)
            ids = tf.boolean_mask(tf.concat([merged, ids[-1:]], 0), keep)
            return ids, tf.boolean_mask(word, keep), tf.reduce_any(take)

        ids, word, _ = tf.while_loop(
            lambda ids, word, more: more, step, (ids, word, tf.size(ids) > 1),
            shape_invariants=(tf.TensorShape([None]), tf.TensorShape([None]),
                              tf.TensorShape([])))
        # `word` is sorted: each word's first symbol.
        return ids, tf.searchsorted(word, tf.range(tf.cast(num_words, tf.int64) + 1),
                                    out_type=tf.int64)

    def _segments(self, texts):
        """Valid UTF-8 texts [batch] -> (segments, starts, row_splits, special).

        With `special_tokens_in_strings`, each text is cut into the special
        tokens written in it (with the whitespace before an `lstrip_tokens`
        one) and the text between them, as transformers' added vocabulary
        does; else each text is one segment. `segments`: string [segments],
        `starts`: int64 [segments], byte offset in its text; `row_splits`:
        int64 [batch + 1]; `special`: int32 [segments], the special token's
        id or -1 for text.
        """
        if not self.special_tokens_in_strings:
            size = tf.size(texts, out_type=tf.int64)
            return texts, tf.zeros([size], tf.int64), tf.range(size + 1), -tf.ones([size], tf.int32)
        # The NUL-safe copy, as in `_split_words`.
        parts, starts, ends = tf_text.regex_split_with_offsets(
            tf.strings.regex_replace(texts, r"\x00", "\x01"), self._special_pattern,
            self._special_pattern)
        rows = parts.value_rowids()
        starts, ends = starts.flat_values, ends.flat_values
        segments = tf.strings.substr(tf.gather(texts, rows), starts, ends - starts)
        special = tf.where(tf.strings.regex_full_match(segments, self._special_pattern),
                           self._special_table.lookup(tf.strings.regex_replace(
                               segments, f"^[{_SPACE}]+", "")), -1)
        return segments, starts, parts.row_splits, special

    def _tokenize(self, inputs, offsets):
        """(ids, starts, ends, leads, row_splits, texts): flat ids, the texts
        as valid UTF-8, and with `offsets` each token's byte span in its text
        and the spaces `trim_offsets` may leave out of its start."""
        texts = tf.strings.unicode_transcode(inputs, "UTF-8", "UTF-8", errors="replace",
                                             replacement_char=0xFFFD)
        segments, segment_starts, segment_splits, special = self._segments(texts)
        words, word_starts, _, prefixed = self._words(tf.where(special >= 0, "", segments))
        pieces = self._merge(words.flat_values)
        ids = pieces.flat_values
        values = [ids]
        if offsets:
            piece_word = pieces.value_rowids()
            length = tf.cast(tf.gather(self._token_bytes, ids), tf.int64)
            # (pieces,) byte spans in the segment that add_prefix_space made.
            before = tf.cumsum(length, exclusive=True)
            start = (tf.gather(word_starts.flat_values, piece_word) + before
                     - tf.gather(before, tf.gather(pieces.row_splits, piece_word)))
            end = start + length
            # Its space is aligned to the first character, at byte 0.
            segment = tf.gather(words.value_rowids(), piece_word)
            shift = tf.gather(prefixed, segment)
            base = tf.gather(segment_starts, segment)
            values += [tf.maximum(start - shift, 0) + base, tf.maximum(end - shift, shift) + base,
                       tf.gather(self._leading_spaces, ids)]
        # [segments, (pieces)], then the special tokens' segments: one id each.
        splits = tf.gather(pieces.row_splits, words.row_splits)
        values = [tf.RaggedTensor.from_row_splits(v, splits, validate=False) for v in values]
        if self.special_tokens_in_strings:
            is_special = special >= 0
            one = tf.RaggedTensor.from_row_lengths(
                tf.boolean_mask(special, is_special), tf.cast(is_special, tf.int64), validate=False)
            # A special token spans what it matched; the whitespace it took
            # counts as its leading spaces for trim_offsets.
            ends = segment_starts + tf.cast(tf.strings.length(segments), tf.int64)
            taken = tf.cast(tf.strings.length(segments, unit="UTF8_CHAR") - tf.gather(
                self._token_bytes, tf.maximum(special, 0)), tf.int64)
            extra = [one] + [one.with_flat_values(tf.boolean_mask(x, is_special))
                             for x in (segment_starts, ends, taken)][:len(values) - 1]
            values = [tf.concat([v, e], axis=1) for v, e in zip(values, extra)]
        row_splits = tf.gather(values[0].row_splits, segment_splits)
        flat = [v.flat_values for v in values] + [None] * (4 - len(values))
        return (*flat, row_splits, texts)

    def call(self, inputs):
        inputs, scalar = self._prepare(inputs)
        ids, _, _, _, row_splits, _ = self._tokenize(inputs, offsets=False)
        ids = tf.RaggedTensor.from_row_splits(ids, row_splits, validate=False)
        return ids[0] if scalar else ids

    def tokenize_with_offsets(self, inputs, unit="BYTE"):
        """Tokenizes, and tells where each token comes from in the input.

        The spans are transformers' `offset_mapping`: whole characters (a
        token holding some bytes of an emoji spans the emoji), and with
        `trim_offsets` a token's leading and trailing spaces left out.

        Args:
            inputs: string Tensor [batch] or scalar.
            unit: "BYTE" (UTF-8 byte offsets, for `tf.strings.substr`) or
                "UTF8_CHAR" (code point offsets, for slicing a Python str).

        Returns:
            (ids, starts, ends): int32 RaggedTensors [batch, (num_tokens)]
            (Tensors for a scalar input); `end` is exclusive.
        """
        inputs, scalar = self._prepare(inputs, unit)
        ids, start, end, lead, row_splits, texts = self._tokenize(inputs, offsets=True)
        position = tf.range(tf.size(ids, out_type=tf.int64))
        row = tf.searchsorted(row_splits, position, side="right") - 1
        # Whole characters, as code point offsets: the same in `inputs` (one
        # U+FFFD per invalid sequence). A piece ends with the character
        # holding its last byte.
        chars, char_starts = tf.strings.unicode_decode_with_offsets(texts, "UTF-8")
        row_base = tf.cumsum(tf.cast(tf.strings.length(texts), tf.int64), exclusive=True)
        flat_starts = char_starts.flat_values + tf.gather(row_base, char_starts.value_rowids())
        first_char = tf.gather(chars.row_splits, row)
        base = tf.gather(row_base, row)
        start = tf.searchsorted(flat_starts, start + base, side="right",
                                out_type=tf.int64) - 1 - first_char
        end = tf.searchsorted(flat_starts, end - 1 + base, side="right",
                              out_type=tf.int64) - first_char
        if self.trim_offsets:  # tokenizers' byte_level process_offsets.
            trail = tf.gather(self._trailing_spaces, ids)
            if self.add_prefix_space:
                is_first = tf.equal(position, tf.gather(row_splits, row))
                lead = tf.where((is_first | tf.equal(start, 0)) & tf.equal(lead, 1),
                                tf.zeros_like(lead), lead)
            start = tf.minimum(start + lead, end)
            end = tf.where(end >= trail, tf.maximum(end - trail, start), end)
        if unit == "BYTE":
            _, orig_starts = tf.strings.unicode_decode_with_offsets(
                inputs, "UTF-8", errors="replace", replacement_char=0xFFFD)
            # Each row's character starts and its length: [chars + 1] per row.
            bounds = tf.concat(
                [orig_starts, tf.cast(tf.strings.length(inputs), tf.int64)[:, None]], axis=1)
            offset = tf.gather(bounds.row_splits, row)
            start, end = (tf.gather(bounds.flat_values, x + offset) for x in (start, end))
        outputs = tuple(tf.RaggedTensor.from_row_splits(tf.cast(x, tf.int32), row_splits,
                                                        validate=False)
                        for x in (ids, start, end))
        return tuple(x[0] for x in outputs) if scalar else outputs

    def detokenize(self, ids, clean_up_tokenization_spaces=None):
        """Joins ids back into text, in the graph: GPT-2's characters become
        their bytes again (invalid UTF-8 as U+FFFD), `<pad>` ids are dropped.

        Args:
            ids: int Tensor or RaggedTensor [batch, (num_tokens)] or [num_tokens].
            clean_up_tokenization_spaces: None (the tokenizer's setting) or bool.

        Returns:
            string Tensor [batch] (a scalar for rank-1 input).
        """
        if clean_up_tokenization_spaces is None:
            clean_up_tokenization_spaces = self.clean_up_tokenization_spaces
        ids, one = self._unpadded_rows(ids)
        chars = tf.strings.unicode_decode(tf.strings.reduce_join(self.ids_to_tokens(ids), axis=-1),
                                          "UTF-8")
        code = chars.flat_values
        table = tf.gather(self._char_bytes, tf.minimum(code, 323))
        own = tf.strings.unicode_encode(code[:, None], "UTF-8")
        text = tf.strings.reduce_join(chars.with_flat_values(tf.where(code < 324, table, own)),
                                      axis=-1)
        text = tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace",
                                            replacement_char=0xFFFD)
        if clean_up_tokenization_spaces:
            text = _clean_up(text)
        return text[0] if one else text

    def decode(self, token_ids, skip_special_tokens=False, clean_up_tokenization_spaces=None):
        """One sequence of ids -> its text, as transformers' `decode` (Python).

        Args:
            token_ids: int, list of int, 1-D NumPy array or Tensor.
            skip_special_tokens: bool. True drops the five special tokens.
            clean_up_tokenization_spaces: None (the tokenizer's setting) or
                bool: transformers' clean-up of spaces before punctuation.

        Returns:
            str.
        """
        if clean_up_tokenization_spaces is None:
            clean_up_tokenization_spaces = self.clean_up_tokenization_spaces
        ids = _id_rows(token_ids, "token_ids", rank=1)
        skipped = self._special_ids if skip_special_tokens else set()
        values = {c: b for b, c in enumerate(byte_to_char())}
        data = bytearray()
        for i in ids:
            if i in skipped:
                continue
            for char in self.id_to_token(i):
                data.extend([values[char]] if char in values else char.encode("utf-8"))
        text = data.decode("utf-8", errors="replace")
        return _clean_up(text) if clean_up_tokenization_spaces else text

    def load_assets(self, dir_path):
        """Reads what `save_assets` wrote (Keras calls this)."""
        self.set_vocabulary(storage.join(dir_path, VOCAB_JSON),
                            storage.join(dir_path, MERGES_TXT))

    def get_config(self):
        config = super().get_config()
        config.update({
            "vocabulary": None,
            "merges": None,
            "add_prefix_space": self.add_prefix_space,
            "trim_offsets": self.trim_offsets,
            "special_tokens_in_strings": self.special_tokens_in_strings,
            "lstrip_tokens": list(self.lstrip_tokens),
            "clean_up_tokenization_spaces": self.clean_up_tokenization_spaces,
        })
        return config
