"""BERT WordPiece tokenizer that runs inside the TensorFlow graph."""

import functools
import json
import os
import re

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert import storage
from keras_bert.text import _unicode
from keras_bert.text.vocab import SPECIAL_TOKENS
from keras_bert.text.vocab import load_bert_vocabulary
from keras_bert.text.vocab import save_vocabulary

_OFFSET_UNITS = ("BYTE", "UTF8_CHAR")
# The vocabulary's file among a .keras file's assets (see `save_assets`).
_VOCAB_TXT = "vocab.txt"
_VOCAB_JSON = "vocabulary.json"


def _wordpiece_vocab(tokens, token_to_id):
    """The vocabulary as FastWordpieceTokenizer accepts it.

    It rejects repeated tokens, and warns on empty ones. Both keep their id
    but get a placeholder that no word can match ("[" is punctuation, so it
    never shares a word with other characters); a repeated token keeps its
    last id, as in the reference's dict.
    """
    return [
        token if token and token_to_id[token] == index
        else f"[keras_bert unreachable {index}]"
        for index, token in enumerate(tokens)
    ]


@functools.lru_cache(maxsize=8)
def _fast_wordpiece(vocab, max_bytes_per_word, no_pretokenization):
    """tensorflow-text's FastWordpieceTokenizer of `vocab` (a tuple of tokens; "##"
    suffixes, "[UNK]" for the unknown, int32 ids), built once per process.

    Building one compiles the vocabulary into the kernel's model (0.07 CPU s
    for BERT's 30,522 tokens, and a tokenizer builds two); the kernel never
    changes, so the tokenizers of one vocabulary share it: a model and its
    preprocessor's copies, a model loaded twice, a fine-tune and its export.
    """
    with tf.init_scope(), tf.device("/CPU:0"):
        return tf_text.FastWordpieceTokenizer(
            vocab=list(vocab),
            suffix_indicator="##",
            max_bytes_per_word=max_bytes_per_word,
            token_out_type=tf.int32,
            unknown_token="[UNK]",
            no_pretokenization=no_pretokenization,
        )


def _fast_path_vocab(tokens, token_to_id, fast_chars):
    """The vocabulary for the fast path's end-to-end FastWordpieceTokenizer.

    Fast-path words are ASCII letter-digit runs or single stand-alone
    characters; every other token gets a placeholder (the kernel would match
    "a b" across a separator). `[UNK]` is kept, by name.
    """
    fast_chars = frozenset(fast_chars)

    def reachable(token):
        word = token[2:] if token.startswith("##") else token
        if word and word.isascii() and word.isalnum():
            return True
        return (
            len(token) == 1 and ord(token) in fast_chars
            and not token.isspace()
        )

    return [
        token if token == "[UNK]" or reachable(token)
        else f"[keras_bert_unreachable_{index}]"
        for index, token in enumerate(_wordpiece_vocab(tokens, token_to_id))
    ]


def _code_point_class(code_points):
    """An RE2 character class matching exactly the sorted code points."""
    parts = []
    start = 0
    while start < len(code_points):
        end = start
        while (
            end + 1 < len(code_points)
            and code_points[end + 1] == code_points[end] + 1
        ):
            end += 1
        low, high = code_points[start], code_points[end]
        parts.append(
            f"\\x{{{low:x}}}" if low == high
            else f"\\x{{{low:x}}}-\\x{{{high:x}}}"
        )
        start = end + 1
    return "[" + "".join(parts) + "]"


# Printable ASCII, tab, newline, carriage return. Not \x0b, \x0c (Cc: the
# reference deletes them, tensorflow-text splits on them) nor \x7f (Cc).
_ASCII_FAST_CHARS = [0x09, 0x0A, 0x0D] + list(range(0x20, 0x7F))


@functools.lru_cache(maxsize=None)
def _fast_path_code_points(normalization, tokenize_chinese_chars,
                           max_chars_per_word):
    """The characters of the texts that take the fast path (sorted tuple).

    `_ASCII_FAST_CHARS` and `_unicode.fast_path_candidates`, less the
    stand-alone characters longer in UTF-8 bytes than `max_chars_per_word`
    (tensorflow-text limits words by bytes).
    """
    alone, space = _unicode.fast_path_candidates(
        normalization, tokenize_chinese_chars)
    chars = _ASCII_FAST_CHARS + [int(c) for c in space]
    chars.extend(
        int(c) for c in alone
        if len(chr(c).encode("utf-8")) <= max_chars_per_word
    )
    return tuple(sorted(chars))


def _fast_path_pattern(normalization, tokenize_chinese_chars,
                       max_chars_per_word):
    """RE2 pattern that a whole text must match to take the fast path."""
    return _code_point_class(_fast_path_code_points(
        normalization, tokenize_chinese_chars, max_chars_per_word)) + "*"


# transformers' `clean_up_tokenization`, in its order: (pattern, replacement).
_CLEAN_UP_SPACES = (
    (" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"),
    (" n't", "n't"), (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"),
    (" 're", "'re"),
)


def _check_never_split(never_split):
    """`never_split` as a list of distinct str (order kept), or a clear error."""
    if never_split is None:
        return []
    if isinstance(never_split, str) or not isinstance(
            never_split, (list, tuple, set, frozenset)):
        raise ValueError(
            "Expected never_split to be a list of tokens (str). Received: "
            f"never_split={never_split!r}. Write never_split=[{never_split!r}] for one.")
    tokens = []
    for token in never_split:
        if not isinstance(token, str) or not token or any(c.isspace() for c in token):
            raise ValueError(
                "Expected each never_split token to be a non-empty str without "
                f"whitespace (a whole word of the text). Received: {token!r} in "
                f"never_split={never_split!r}.")
        if token not in tokens:
            tokens.append(token)
    return sorted(tokens) if isinstance(never_split, (set, frozenset)) else tokens


def _bytes_to_chars(texts, offsets):
    """Byte offsets into valid UTF-8 texts -> code point offsets.

    Args:
        texts: string Tensor [batch], valid UTF-8.
        offsets: tuple of int32 RaggedTensors [batch, (n)], each offset at a
            character boundary of its row's text (or at its end).
    """
    _, char_starts = tf.strings.unicode_decode_with_offsets(texts, "UTF-8")
    char_starts = char_starts.with_row_splits_dtype(tf.int64)
    # Byte positions in the concatenation of all texts: sorted, row by row.
    row_base = tf.cumsum(
        tf.cast(tf.strings.length(texts), tf.int64), exclusive=True
    )
    flat_starts = tf.cast(char_starts.flat_values, tf.int64) + tf.gather(
        row_base, char_starts.value_rowids()
    )
    converted = []
    for x in offsets:
        rows = x.value_rowids()
        position = tf.cast(x.flat_values, tf.int64) + tf.gather(row_base, rows)
        # Characters starting before the position, less earlier rows' ones.
        before = tf.searchsorted(
            flat_starts, position, side="left", out_type=tf.int64
        )
        index = before - tf.gather(char_starts.row_splits, rows)
        converted.append(x.with_flat_values(tf.cast(index, tf.int32)))
    return tuple(converted)


def as_string_tensor(texts):
    """A Python str / bytes, or a list of them, as a string Tensor (Keras'
    `Layer.__call__` takes only tensors); anything else passes through."""
    if isinstance(texts, (str, bytes)) or (
        isinstance(texts, list)
        and all(isinstance(t, (str, bytes)) for t in texts)
    ):
        return tf.constant(texts, tf.string)
    return texts


def _id_rows(value, name, rank):
    """`decode`'s ids as Python ints: a list of int (rank 1) or of lists (rank 2)."""
    if isinstance(value, tf.RaggedTensor):
        value = value.to_list()
    elif isinstance(value, tf.Tensor):
        value = value.numpy()
    if hasattr(value, "tolist"):  # NumPy arrays and scalars.
        value = value.tolist()
    if rank == 1 and isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    rows = value if rank == 2 else [value]
    if not isinstance(rows, (list, tuple)) or not all(
            isinstance(row, (list, tuple)) and all(
                isinstance(i, int) and not isinstance(i, bool) for i in row)
            for row in rows):
        what = "one sequence of int ids" if rank == 1 else "a batch of sequences of int ids"
        other = ("; for a batch, call batch_decode" if rank == 1 else
                 "; for one sequence, call decode")
        raise ValueError(
            f"Expected {name} to be {what}{other}. Received: {name}={value!r:.200}")
    return [int(i) for i in rows[0]] if rank == 1 else [[int(i) for i in r] for r in rows]


def _check_bool_options(**options):
    """A clear error for the first option that is not True or False."""
    for name, value in options.items():
        if not isinstance(value, bool):
            raise ValueError(
                f"Expected {name} to be True or False. Received: {name}={value!r}"
            )


def _clean_up(text):
    """transformers' `clean_up_tokenization` of a str, or in the graph of a
    string Tensor (each replace global and left to right, as str.replace)."""
    for old, new in _CLEAN_UP_SPACES:
        if isinstance(text, str):
            text = text.replace(old, new)
        else:
            text = tf.strings.regex_replace(text, re.escape(old), new)
    return text


class _VocabularyMethods:
    """What the three tokenizer layers share: the vocabulary, its lookups and
    special tokens, input checks, `batch_decode`.

    A class using it sets `_vocabulary` (list of str, or None before it has
    one), `_token_to_id`, `_vocab_tensor` (string Tensor of the tokens), the
    five `*_token_id`s, `pair_separator` and `_NO_VOCABULARY` (the error of a
    tokenizer without one: what to call to set it).
    """

    def _require_vocabulary(self):
        if self._vocabulary is None:
            raise ValueError(self._NO_VOCABULARY)
        return self._vocabulary

    @property
    def vocabulary(self):
        """The tokens, as a list of str indexed by id."""
        return list(self._require_vocabulary())

    @property
    def vocab_size(self):
        """int: number of ids."""
        return len(self._require_vocabulary())

    @property
    def _special_ids(self):
        return {self.pad_token_id, self.unk_token_id, self.cls_token_id,
                self.sep_token_id, self.mask_token_id}

    def token_to_id(self, token):
        """The id of one token (str). Raises KeyError naming it if absent."""
        self._require_vocabulary()
        if token not in self._token_to_id:
            raise KeyError(
                f"Token {token!r} is not in the vocabulary "
                f"({self.vocab_size} tokens)."
            )
        return self._token_to_id[token]

    def id_to_token(self, token_id):
        """The token (str) of one id (Python int)."""
        token_id = int(token_id)
        if not 0 <= token_id < self.vocab_size:
            raise ValueError(
                f"Expected an id in [0, {self.vocab_size}). "
                f"Received: token_id={token_id}"
            )
        return self._vocabulary[token_id]

    def ids_to_tokens(self, ids):
        """Maps ids to token strings, in the graph.

        Args:
            ids: int Tensor or RaggedTensor of any shape.

        Returns:
            A string Tensor or RaggedTensor of the same shape.
        """
        self._require_vocabulary()
        if isinstance(ids, tf.RaggedTensor):
            return tf.ragged.map_flat_values(self.ids_to_tokens, ids)
        return tf.gather(self._vocab_tensor, tf.cast(ids, tf.int32))

    def get_special_tokens_mask(self, token_ids_0, token_ids_1=None,
                                already_has_special_tokens=False):
        """1 for a special token, 0 for a text token (transformers' method).

        Args:
            token_ids_0: list of int, the ids of a text (without special
                tokens, unless `already_has_special_tokens`).
            token_ids_1: optional list of int, the second text of a pair.
            already_has_special_tokens: bool. True: the ids are packed
                already; each id of the five special tokens is marked.

        Returns:
            list of int: for the text (or pair) as `BertPacker` packs it,
            `[CLS] A [SEP] B [SEP]` (`pair_separator` 1) or
            `<s> A </s></s> B </s>` (2); or for the ids as given.
        """
        if already_has_special_tokens:
            if token_ids_1 is not None:
                raise ValueError(
                    "token_ids_1 must be None with already_has_special_tokens=True: "
                    "pass the packed ids as token_ids_0.")
            special = self._special_ids
            return [int(int(i) in special) for i in token_ids_0]
        mask = [1] + [0] * len(token_ids_0) + [1]
        if token_ids_1 is not None:
            mask += [1] * (self.pair_separator - 1) + [0] * len(token_ids_1) + [1]
        return mask

    def _unpadded_rows(self, ids):
        """`detokenize`'s ids as an int32 RaggedTensor [batch, (tokens)]
        without pad ids, and whether they were one sequence [tokens]."""
        one = False
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.convert_to_tensor(ids)
            one = ids.shape.rank == 1
            ids = tf.RaggedTensor.from_tensor(ids[tf.newaxis] if one else ids)
        ids = tf.cast(ids, tf.int32)
        return tf.ragged.boolean_mask(ids, tf.not_equal(ids, self.pad_token_id)), one

    def batch_decode(self, sequences, *args, **kwargs):
        """Each sequence of ids -> its text (`decode` on each), as transformers'
        `batch_decode`.

        Args:
            sequences: a list of lists of int, a 2-D NumPy array or Tensor
                (a padded batch keeps its pad ids unless `skip_special_tokens`),
                or an int RaggedTensor [batch, (ids)].
            *args, **kwargs: `decode`'s other arguments.

        Returns:
            list of str, one per sequence.
        """
        return [self.decode(row, *args, **kwargs)
                for row in _id_rows(sequences, "sequences", rank=2)]

    def _prepare(self, inputs, unit="BYTE"):
        """Checked inputs as a string Tensor [batch], and whether they were
        one scalar string."""
        self._require_vocabulary()
        if unit not in _OFFSET_UNITS:
            raise ValueError(
                f"Expected unit to be one of {_OFFSET_UNITS}. "
                f"Received: unit={unit!r}"
            )
        if not isinstance(inputs, (tf.Tensor, tf.RaggedTensor)):
            inputs = tf.convert_to_tensor(inputs)
        name = type(self).__name__
        if inputs.dtype != tf.string:
            raise ValueError(
                f"{name} expects a string Tensor of shape [batch]. "
                f"Received: dtype={inputs.dtype.name}. Tokenize text, not ids."
            )
        rank = inputs.shape.rank
        if rank not in (0, 1):
            raise ValueError(
                f"{name} expects a string Tensor of shape [batch] or a "
                f"scalar. Received: shape={inputs.shape}. Flatten it first "
                "(tf.reshape(x, [-1]))."
            )
        return (inputs[tf.newaxis] if rank == 0 else inputs), rank == 0

    def save_assets(self, dir_path):
        """Writes `save_vocabulary_files` into a `.keras` file's assets (Keras calls this)."""
        self.save_vocabulary_files(dir_path)

    def __call__(self, inputs, *args, **kwargs):
        return super().__call__(as_string_tensor(inputs), *args, **kwargs)


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTokenizer(_VocabularyMethods, keras.layers.Layer):
    """BERT WordPiece tokenizer, in-graph and id-for-id with the reference.

    Gives the same ids as google-research/bert's `FullTokenizer` (and Hugging
    Face's slow `BertTokenizer`) with TensorFlow ops only, so it runs in
    `tf.data.Dataset.map`, in `tf.function` and in an exported SavedModel:

    1. clean text: delete U+0000, U+FFFD and control/format characters
       (Unicode Cc, Cf; tab, newline and carriage return are whitespace);
    2. split on whitespace; every CJK ideograph is a word of its own;
    3. `lowercase=True` only: Python `str.lower()` (final sigma included), NFD,
       drop combining marks (Mn). No compatibility folding: "ﬁ", "ß", "µ", "①"
       stay what they are, as in the reference;
    4. split off punctuation (ASCII 33-47, 58-64, 91-96, 123-126, Unicode P*);
    5. greedy longest-match-first WordPiece with "##" continuations
       (tensorflow-text's `FastWordpieceTokenizer`); a word that cannot be
       covered, or that has more than `max_chars_per_word` characters (code
       points, not bytes), becomes one `[UNK]`.

    Texts that need none of steps 1-3 but ASCII lower-casing (printable
    ASCII and whitespace, punctuation or CJK ideographs that step 3 leaves
    unchanged) take a faster path, tensorflow-text's end-to-end
    `FastWordpieceTokenizer`, text by text inside the graph, with the same
    ids and offsets. Invalid UTF-8 decodes as U+FFFD, which step 1 deletes.
    The options of transformers' `BertTokenizer` follow its rules, id for id.

    Args:
        vocabulary: list of str (one token per id), or the path of a
            `vocab.txt` file with one token per line; None for one that
            `set_vocabulary` or `load_assets` sets later. A `.keras` file
            keeps it as an asset (`vocab.txt`), not in the config.
        lowercase: bool. True for uncased vocabularies (lower-case and strip
            accents), False for cased ones (text kept as it is).
        max_chars_per_word: int. Longer words become `[UNK]` (100 in BERT).
        strip_accents: None (the default: follows `lowercase`), True or
            False: NFD and drop combining marks, with or without
            lower-casing.
        tokenize_chinese_chars: bool. True (BERT): every CJK ideograph is a
            word of its own. False for Japanese and other texts whose
            ideographs belong to words.
        never_split: None or a list of str: a whitespace-separated word equal
            to one (as written or after step 3) is neither normalized nor
            split, and becomes that token's id (or `[UNK]`). Texts then all
            take the per-character path.
        special_tokens_in_strings: bool. True: "[MASK]", "[CLS]", ... in the
            text, even inside a word, become one special token id each
            (transformers' default); False (BERT's reference): tokenized as
            text ("[", "mask", "]").
        clean_up_tokenization_spaces: bool, what `detokenize` does by
            default: True removes the space that joining pieces leaves
            before punctuation, as transformers' decode does ("unwanted,
            running"); False keeps the pieces as joined ("unwanted , running").
        remove_control_chars: bool. True (BERT): step 1 deletes control and
            format characters. False (transformers' option): they are kept
            as characters of their words (a separator where `str.isspace()`
            is True); U+0000 and invalid UTF-8 are still deleted.
        **kwargs: passed to `keras.layers.Layer`.

    Attributes:
        pad_token_id, unk_token_id, cls_token_id, sep_token_id,
        mask_token_id: int ids of `[PAD]`, `[UNK]`, `[CLS]`, `[SEP]`, `[MASK]`.
        vocab_size: int. vocabulary: list of str.
        vocabulary_file: the path given as `vocabulary`, or None for a list.

    Call arguments:
        inputs: string Tensor of shape [batch] (or a scalar string). A
            Python str or list of str is converted with `tf.constant`.

    Returns:
        int32 `tf.RaggedTensor` of shape [batch, (num_tokens)] (int32 Tensor
        [num_tokens] for a scalar input): the WordPiece ids, without special
        tokens. Pack them with `BertPacker`.

    Example:
    >>> tokenizer = BertTokenizer(
    ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "qu",
    ...      "##ick", "fox", "!"])
    >>> tokenizer(tf.constant(["The quick fox!", "fox"])).to_list()
    [[5, 6, 7, 8, 9], [8]]
    """

    #: Separator tokens between the two texts of a pair: `[CLS] A [SEP] B [SEP]`.
    pair_separator = 1
    _NO_VOCABULARY = (
        "This BertTokenizer has no vocabulary yet (a config holds none: it "
        "is saved as an asset of the .keras file). Load the model with "
        "keras.models.load_model('model.keras'), or call "
        "set_vocabulary('vocab.txt')."
    )

    def __init__(
        self,
        vocabulary,
        lowercase=True,
        max_chars_per_word=100,
        strip_accents=None,
        tokenize_chinese_chars=True,
        never_split=None,
        special_tokens_in_strings=False,
        clean_up_tokenization_spaces=False,
        remove_control_chars=True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        _check_bool_options(
            lowercase=lowercase,
            tokenize_chinese_chars=tokenize_chinese_chars,
            special_tokens_in_strings=special_tokens_in_strings,
            clean_up_tokenization_spaces=clean_up_tokenization_spaces,
            remove_control_chars=remove_control_chars,
        )
        if strip_accents not in (None, True, False):
            raise ValueError(
                "Expected strip_accents to be None (follow lowercase), True or "
                f"False. Received: strip_accents={strip_accents!r}"
            )
        if not isinstance(max_chars_per_word, int) or max_chars_per_word < 1:
            raise ValueError(
                "Expected max_chars_per_word to be a positive int. "
                f"Received: max_chars_per_word={max_chars_per_word!r}"
            )
        self.lowercase = lowercase
        self.max_chars_per_word = max_chars_per_word
        self.strip_accents = strip_accents
        self.tokenize_chinese_chars = tokenize_chinese_chars
        self.never_split = _check_never_split(never_split)
        self.special_tokens_in_strings = special_tokens_in_strings
        self.clean_up_tokenization_spaces = clean_up_tokenization_spaces
        self.remove_control_chars = remove_control_chars
        self.vocabulary_file = None
        self._vocabulary = None
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)
        self.built = True

    def set_vocabulary(self, vocabulary):
        """Sets the tokens and builds the in-graph tables from them.

        Args:
            vocabulary: list of str (one token per id), or the path of a
                `vocab.txt` file with one token per line.
        """
        tokens, token_to_id, _ = load_bert_vocabulary(
            vocabulary, f"BERT needs all of {list(SPECIAL_TOKENS)}; add the missing line(s) to "
            "the vocabulary, or build one with tools/build_vocab.py.")
        max_chars_per_word = self.max_chars_per_word
        normalization = self.normalization
        self.vocabulary_file = (
            os.fspath(vocabulary)
            if isinstance(vocabulary, (str, os.PathLike))
            else None
        )
        self._vocabulary = tokens
        self._token_to_id = token_to_id
        self.pad_token_id = self._token_to_id["[PAD]"]
        self.unk_token_id = self._token_to_id["[UNK]"]
        self.cls_token_id = self._token_to_id["[CLS]"]
        self.sep_token_id = self._token_to_id["[SEP]"]
        self.mask_token_id = self._token_to_id["[MASK]"]

        # never_split, and the special tokens when written in the text: the
        # words kept whole, and the id each becomes (vocabulary or [UNK]).
        kept = self.never_split + [
            t for t in SPECIAL_TOKENS
            if self.special_tokens_in_strings and t not in self.never_split]
        fast_vocab = _fast_path_vocab(
            tokens, self._token_to_id,
            _fast_path_code_points(normalization, self.tokenize_chinese_chars,
                                   max_chars_per_word))
        with tf.init_scope(), tf.device("/CPU:0"):
            self._tables = {
                name: tf.constant(array)
                for name, array in _unicode.unicode_tables(
                    normalization, self.remove_control_chars).items()
            }
            self._vocab_tensor = tf.constant(tokens, tf.string)
            self._never_split = (
                tf.constant(kept, tf.string) if kept else None)
            self._never_split_ids = tf.constant(
                [self._token_to_id.get(t, self.unk_token_id) for t in kept] or [0],
                tf.int32)
            # Our own rule below limits words by characters; a word of
            # max_chars_per_word code points has at most 4x the bytes.
            self._wordpiece = _fast_wordpiece(
                tuple(_wordpiece_vocab(tokens, self._token_to_id)),
                max_bytes_per_word=4 * max_chars_per_word, no_pretokenization=True)
            # The fast path (`_fast_path_mask`); None when no token is
            # reachable by it, or with never_split (checked per character).
            self._fast_wordpiece = None
            if not self.never_split and any(
                    token == t for token, t in zip(tokens, fast_vocab)
                    if token != "[UNK]"):
                self._fast_wordpiece = _fast_wordpiece(
                    tuple(fast_vocab), max_bytes_per_word=max_chars_per_word,
                    no_pretokenization=False)
        # RE2 pattern of the texts that take the fast path.
        self._fast_path_pattern = _fast_path_pattern(
            normalization, self.tokenize_chinese_chars, max_chars_per_word
        )
        # RE2 pattern of the texts holding a special token.
        self._special_pattern = "(?s).*(?:{}).*".format(
            "|".join(re.escape(t) for t in SPECIAL_TOKENS))

    @property
    def has_vocabulary(self):
        """bool: False until `set_vocabulary` (or `load_assets`) has run."""
        return self._vocabulary is not None

    @property
    def normalization(self):
        """str or None: the `_unicode.NORMALIZATIONS` name of step 3."""
        return _unicode.normalization_of(self.lowercase, self.strip_accents)

    def detokenize(self, ids, clean_up_tokenization_spaces=None):
        """Joins ids back into (normalized) text, in the graph.

        "##" pieces are glued to the piece before them, other pieces are
        separated by one space, `[PAD]` ids are dropped (other special
        tokens are kept). The text is the normalized one (lower-cased for
        uncased vocabularies), with spaces around punctuation, less the
        ones transformers' clean-up removes when `clean_up_tokenization_spaces`.

        Args:
            ids: int Tensor or RaggedTensor of shape [batch, (num_tokens)], or
                of shape [num_tokens].
            clean_up_tokenization_spaces: None (the tokenizer's setting) or
                bool: remove the space before ".", "?", "!", ",", and in
                " ' ", " n't", " 'm", " 's", " 've", " 're" (transformers'
                rule, in its order).

        Returns:
            string Tensor of shape [batch] (a scalar for rank-1 input).

        Example:
        >>> tokenizer.detokenize(tokenizer(tf.constant(["The quick fox!"])))
        <tf.Tensor: shape=(1,), dtype=string, numpy=array([b'the quick fox !'], dtype=object)>
        """
        if clean_up_tokenization_spaces is None:
            clean_up_tokenization_spaces = self.clean_up_tokenization_spaces
        ids, one = self._unpadded_rows(ids)
        tokens = self.ids_to_tokens(ids).flat_values
        is_suffix = tf.strings.regex_full_match(tokens, "##.+")
        text = tf.where(
            is_suffix,
            tf.strings.regex_replace(tokens, "^##", ""),
            tokens,
        )
        row_starts = tf.gather(ids.row_splits, ids.value_rowids())
        first = tf.equal(tf.range(tf.size(tokens), dtype=row_starts.dtype),
                         row_starts)
        separator = tf.where(is_suffix | first, "", " ")
        joined = ids.with_flat_values(tf.strings.join([separator, text]))
        text = tf.strings.reduce_join(joined, axis=-1)
        if clean_up_tokenization_spaces:
            text = _clean_up(text)
        return text[0] if one else text

    def decode(self, token_ids, skip_special_tokens=False, clean_up_tokenization_spaces=True):
        """One sequence of ids -> its (normalized) text, as transformers' `decode`.

        Python, not graph ops (use `detokenize` inside a `tf.function`).

        Args:
            token_ids: a Python int or list of int, or a 1-D NumPy array or
                Tensor of ids (e.g. one row of a preprocessor's `token_ids`).
            skip_special_tokens: bool. True drops `[PAD]`, `[UNK]`, `[CLS]`,
                `[SEP]` and `[MASK]` (transformers' special ids, `[UNK]`
                included); False keeps them as written.
            clean_up_tokenization_spaces: bool, True by default (transformers'
                BertTokenizer): "unwanted, running" rather than the joined
                "unwanted , running" (see `detokenize` for the rule).

        Returns:
            str.

        Example:
        >>> ids = tokenizer(["unwanted, running"])[0]
        >>> tokenizer.decode(ids)
        'unwanted, running'
        """
        ids = _id_rows(token_ids, "token_ids", rank=1)
        skipped = self._special_ids if skip_special_tokens else set()
        tokens = [self.id_to_token(i) for i in ids if i not in skipped]
        text = " ".join(tokens).replace(" ##", "").strip()
        return _clean_up(text) if clean_up_tokenization_spaces else text

    def _fast_path_mask(self, inputs):
        """Which texts (bool [batch]) the fast path tokenizes exactly.

        For texts matching `_fast_path_pattern` (never invalid UTF-8) the
        reference's normalization is ASCII lower-casing and its word split
        is tensorflow-text's own, so that kernel alone gives its ids. A text
        holding a special token to cut out takes the per-character path.
        """
        is_fast = tf.strings.regex_full_match(inputs, self._fast_path_pattern)
        if self.special_tokens_in_strings:
            is_fast &= ~tf.strings.regex_full_match(inputs, self._special_pattern)
        return is_fast

    def _route(self, inputs, fast_fn, slow_fn):
        """Runs `fast_fn` on the fast texts and `slow_fn` on the others; both
        return tuples of RaggedTensors [n, (tokens)], put back in input order.

        Most texts take the fast path: when every text of the batch does (a
        request of one text, most often), the per-character path's ~600 ops
        and the reordering do not run.
        """
        if self._fast_wordpiece is None:
            return slow_fn(inputs)
        is_fast = self._fast_path_mask(inputs)
        return tf.cond(tf.reduce_all(is_fast), lambda: fast_fn(inputs),
                       lambda: self._route_mixed(inputs, is_fast, fast_fn, slow_fn))

    @staticmethod
    def _route_mixed(inputs, is_fast, fast_fn, slow_fn):
        fast_rows = tf.where(is_fast)[:, 0]
        slow_rows = tf.where(~is_fast)[:, 0]
        fast = fast_fn(tf.gather(inputs, fast_rows))
        slow = slow_fn(tf.gather(inputs, slow_rows))
        order = tf.math.invert_permutation(
            tf.concat([fast_rows, slow_rows], 0)
        )
        return tuple(
            tf.gather(tf.concat([f, s], axis=0), order)
            for f, s in zip(fast, slow)
        )

    def _fast_input(self, inputs):
        # Only ASCII letters change (byte for byte: offsets are kept).
        return tf.strings.lower(inputs) if self.lowercase else inputs

    def _fast_ids(self, inputs):
        return (self._fast_wordpiece.tokenize(self._fast_input(inputs)),)

    def _fast_ids_with_offsets(self, inputs, unit):
        ids, starts, ends = self._fast_wordpiece.tokenize_with_offsets(
            self._fast_input(inputs)
        )
        starts = tf.cast(starts, tf.int32)
        ends = tf.cast(ends, tf.int32)
        if unit == "UTF8_CHAR":
            starts, ends = _bytes_to_chars(inputs, (starts, ends))
        return ids, starts, ends

    def _tokenize(self, inputs):
        """Returns flat pieces and the bookkeeping needed for offsets."""
        words = _unicode.pretokenize(
            inputs, self._tables, self.lowercase,
            strip_accents=self.strip_accents,
            tokenize_chinese_chars=self.tokenize_chinese_chars,
            never_split=self._never_split,
            cut_at=SPECIAL_TOKENS if self.special_tokens_in_strings else ())
        too_long = words["word_num_chars"] > self.max_chars_per_word
        if self._never_split is not None:
            # A never_split word is one token, its own id or [UNK], whatever
            # its length: one "[UNK]" piece here, its id below.
            kept = words["word_never_split"]
            too_long |= kept >= 0
        # "[UNK]" is a vocabulary token, so WordPiece maps it to one [UNK].
        word_strings = tf.where(too_long, "[UNK]", words["words"])
        pieces, piece_starts, piece_ends = (
            self._wordpiece.tokenize_with_offsets(word_strings)
        )
        if self._never_split is not None:
            piece_kept = tf.gather(kept, pieces.value_rowids())
            pieces = pieces.with_flat_values(tf.where(
                piece_kept >= 0,
                tf.gather(self._never_split_ids, tf.maximum(piece_kept, 0)),
                pieces.flat_values))
        row_splits = tf.gather(pieces.row_splits, words["word_row_splits"])
        return pieces, piece_starts, piece_ends, row_splits, too_long, words

    def _slow_ids(self, inputs):
        pieces, _, _, row_splits, _, _ = self._tokenize(inputs)
        return (
            tf.RaggedTensor.from_row_splits(
                pieces.values, row_splits, validate=False
            ),
        )

    def _slow_ids_with_offsets(self, inputs, unit):
        pieces, starts, ends, row_splits, too_long, words = self._tokenize(
            inputs
        )
        piece_word = tf.cast(pieces.value_rowids(), tf.int32)
        word_first = tf.gather(words["word_char_splits"], piece_word)
        word_last = tf.gather(words["word_char_splits"], piece_word + 1) - 1
        char_byte_start = words["char_byte_start"]
        word_byte = tf.gather(char_byte_start, word_first)

        def char_at(byte):  # Normalized character holding this byte.
            found = tf.searchsorted(
                char_byte_start[tf.newaxis], byte[tf.newaxis], side="right"
            )[0]
            return tf.cast(found, tf.int32) - 1

        first_char = char_at(word_byte + tf.cast(starts.values, tf.int32))
        last_char = char_at(word_byte + tf.cast(ends.values, tf.int32) - 1)
        whole_word = tf.gather(too_long, piece_word)
        first_char = tf.where(whole_word, word_first, first_char)
        last_char = tf.where(whole_word, word_last, last_char)
        if unit == "BYTE":
            start = tf.gather(words["orig_byte_start"], first_char)
            end = tf.gather(words["orig_byte_end"], last_char)
        else:
            start = tf.gather(words["orig_char_start"], first_char)
            end = tf.gather(words["orig_char_end"], last_char)
        return tuple(
            tf.RaggedTensor.from_row_splits(values, row_splits, validate=False)
            for values in (pieces.values, start, end)
        )

    def call(self, inputs):
        inputs, scalar = self._prepare(inputs)
        (ids,) = self._route(inputs, self._fast_ids, self._slow_ids)
        return ids[0] if scalar else ids

    def tokenize_with_offsets(self, inputs, unit="BYTE"):
        """Tokenizes, and tells where each token comes from in the input.

        Offsets are relative to the ORIGINAL input string (before cleaning,
        lower-casing or accent stripping), so `text[start:end]` is the
        original text of the token: an answer span in SQuAD, a word in NER.
        `end` is exclusive. A "##" piece covers its part of the word; an
        `[UNK]` word covers the whole word. When one input character becomes
        several normalized ones (a Hangul syllable is NFD-decomposed into
        jamo), pieces inside it all carry that character's span.

        Args:
            inputs: string Tensor of shape [batch] (or a scalar string).
            unit: "BYTE" (offsets in UTF-8 bytes, for `tf.strings.substr`) or
                "UTF8_CHAR" (offsets in code points, for slicing a Python
                `str`).

        Returns:
            A tuple `(ids, starts, ends)` of int32 RaggedTensors of shape
            [batch, (num_tokens)] (int32 Tensors for a scalar input).

        Example:
        >>> ids, starts, ends = tokenizer.tokenize_with_offsets(
        ...     tf.constant(["Der Fuchs!"]), unit="UTF8_CHAR")
        """
        inputs, scalar = self._prepare(inputs, unit)
        outputs = self._route(
            inputs,
            lambda x: self._fast_ids_with_offsets(x, unit),
            lambda x: self._slow_ids_with_offsets(x, unit),
        )
        return tuple(x[0] for x in outputs) if scalar else outputs

    def save_assets(self, dir_path):
        """Writes the vocabulary into a `.keras` file's assets (Keras calls this):
        `vocab.txt`, or `vocabulary.json` when a token cannot be one line of it
        (a line break, surrounding whitespace, a leading byte order mark)."""
        tokens = self._require_vocabulary()
        if tokens[0].startswith("\ufeff") or any(
                t != t.strip() or "\n" in t or "\r" in t for t in tokens):
            storage.write_bytes(storage.join(dir_path, _VOCAB_JSON),
                                json.dumps(tokens, ensure_ascii=False).encode("utf-8"))
        else:
            save_vocabulary(tokens, storage.join(dir_path, _VOCAB_TXT))

    def load_assets(self, dir_path):
        """Reads the vocabulary that `save_assets` wrote (Keras calls this)."""
        path = storage.join(dir_path, _VOCAB_JSON)
        if storage.exists(path):
            self.set_vocabulary(json.loads(storage.read_bytes(path).decode("utf-8")))
        else:
            self.set_vocabulary(storage.join(dir_path, _VOCAB_TXT))
        # The path is inside Keras' temporary folder: not a file to keep.
        self.vocabulary_file = None

    def get_config(self):
        # The vocabulary is an asset (`save_assets`), not hundreds of KB here.
        config = super().get_config()
        config.update(
            {
                "vocabulary": None,
                "lowercase": self.lowercase,
                "max_chars_per_word": self.max_chars_per_word,
                "strip_accents": self.strip_accents,
                "tokenize_chinese_chars": self.tokenize_chinese_chars,
                "never_split": list(self.never_split) or None,
                "special_tokens_in_strings": self.special_tokens_in_strings,
                "clean_up_tokenization_spaces": self.clean_up_tokenization_spaces,
                "remove_control_chars": self.remove_control_chars,
            }
        )
        return config
