"""Raw strings in, BERT encoder inputs out: tokenizer + packer."""

import inspect

import keras

from keras_bert import sources
from keras_bert.text.packer import BertPacker
from keras_bert.text.settings import (DEFAULT_MAX_SEQ_LENGTH, DEFAULT_TRUNCATION,
                                      MIN_SEQ_LENGTH, TextSettings)
from keras_bert.text.tokenizer import BertTokenizer
from keras_bert.text.tokenizer import as_string_tensor
from keras_bert.text.tokenizer_files import load_tokenizer


#: sequence_length when neither length is given.
DEFAULT_SEQUENCE_LENGTH = 128


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPreprocessor(keras.layers.Layer):
    """Tokenizes and packs raw text into the encoder's input dict.

    Single texts become `[CLS] A [SEP]`, pairs `[CLS] A [SEP] B [SEP]`, or
    `<s> A </s></s> B </s>` with a SentencePiece or BPE tokenizer of the
    RoBERTa family (its `pair_separator`; see `BertPacker`). Only TensorFlow and
    tensorflow-text ops run, so it works in `tf.data.Dataset.map` and inside
    a `tf.function` saved with `tf.saved_model.save` (a process that loads
    the SavedModel needs `import tensorflow_text`, not keras_bert).

    In a `.keras` file the settings are in the config and the vocabulary
    is an asset (the tokenizer's files), so the config stays a few KB.

    Args:
        tokenizer: a `BertTokenizer`, `SentencePieceTokenizer` or
            `BytePairTokenizer`.
        sequence_length: int: every batch padded (and cut) to exactly this
            length; None: each batch padded to its longest text, cut at
            max_seq_length; "auto" (default): max_seq_length when that is
            given, else 128.
        max_seq_length: int, the cut when sequence_length is None; None
            (default): sequence_length, or 512 when that is None. Give one of
            the two lengths: the other follows (and setting one later moves
            the other where they would cross).
        truncation: "longest_first" or "round_robin"; see `BertPacker`.
        **kwargs: passed to `keras.layers.Layer`.

    Call arguments:
        inputs: string Tensor [batch] (or a scalar string: one unbatched
            example), or a tuple/list of two of them for sentence pairs.
            Python str and lists of str are converted with `tf.constant`.
        inputs_b: the second texts of pairs, as a second argument instead
            (what `tf.data.Dataset.map` passes for a dataset of pairs).

    Returns:
        dict of int32 Tensors [batch, seq] ([seq] unbatched): `token_ids`,
        `segment_ids`, `padding_mask` (1 = real token).

    Example:
    >>> preprocessor = BertPreprocessor.from_vocab_file(
    ...     "vocab.txt", lowercase=True, sequence_length=16)
    >>> x = preprocessor(tf.constant(["The quick brown fox."]))
    >>> sorted(x)
    ['padding_mask', 'segment_ids', 'token_ids']
    >>> pairs = preprocessor((tf.constant(["Who?"]), tf.constant(["Me."])))
    >>> pairs = preprocessor(tf.constant(["Who?"]), tf.constant(["Me."]))  # The same.
    >>> ds = tf.data.Dataset.from_tensor_slices((questions, contexts)).batch(32)
    >>> ds = ds.map(preprocessor)  # map passes (questions, contexts) as two arguments.
    """

    def __init__(
        self,
        tokenizer,
        sequence_length="auto",
        max_seq_length=None,
        truncation=DEFAULT_TRUNCATION,
        pad_to_multiple_of=1,
        **kwargs,
    ):
        super().__init__(**kwargs)
        missing = [name for name in _TOKENIZER_INTERFACE if not hasattr(tokenizer, name)]
        if not isinstance(tokenizer, keras.layers.Layer) or missing:
            raise ValueError(
                "Expected tokenizer to be a keras_bert tokenizer (BertTokenizer, "
                "SentencePieceTokenizer or BytePairTokenizer). "
                f"Received: tokenizer={tokenizer!r}"
                + (f", which has no {', '.join(missing)}" if missing else "")
                + ". Build one with BertTokenizer('vocab.txt') or use "
                "BertPreprocessor.from_pretrained(MODEL_DIR)."
            )
        self.tokenizer = tokenizer
        if sequence_length == "auto":  # A bad max_seq_length is named as itself, below.
            sequence_length = (max_seq_length if isinstance(max_seq_length, int)
                               and max_seq_length >= MIN_SEQ_LENGTH else DEFAULT_SEQUENCE_LENGTH)
        if max_seq_length is None:
            max_seq_length = DEFAULT_MAX_SEQ_LENGTH if sequence_length is None else sequence_length
        # The packing settings, checked together by a packer built from them
        # (special ids 0 until the vocabulary is there, as in a .keras load).
        settings = dict(sequence_length=sequence_length, max_seq_length=max_seq_length,
                        truncation=truncation, pad_to_multiple_of=pad_to_multiple_of)
        self._new_packer(settings, check_only=True)
        self._settings = settings
        self._packer = None
        self.built = True

    # === Settings: live, as keras-hub's are (setting one repacks everything after) ===

    def _setting(name):  # noqa: N805 (a property factory used in the class body)
        def get(self):
            return self._settings[name]

        def set(self, value):
            settings = _changed(self._settings, {name: value})
            self._new_packer(settings, check_only=True)  # The packer's checks, on the new value.
            self._settings = settings
            self._packer = None  # Rebuilt on next use, with the new value.

        return property(get, set, doc=f"The packer's `{name}` (see `BertPacker`); settable.")

    sequence_length = _setting("sequence_length")
    max_seq_length = _setting("max_seq_length")
    truncation = _setting("truncation")
    pad_to_multiple_of = _setting("pad_to_multiple_of")
    del _setting

    def _new_packer(self, settings, check_only=False):
        tokenizer = self.tokenizer
        ids = ((0, 0, 0) if check_only else
               (tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id))
        packer = BertPacker(*ids, name="packer", pair_separator=tokenizer.pair_separator,
                            **settings)
        if (settings["sequence_length"] is not None
                and settings["sequence_length"] > settings["max_seq_length"]):
            raise ValueError(
                f"Expected sequence_length <= max_seq_length. Received: sequence_length="
                f"{settings['sequence_length']!r}, max_seq_length="
                f"{settings['max_seq_length']!r}. Give one of them: the other follows it.")
        return packer

    @property
    def packer(self):
        """The `BertPacker` of the current settings and the tokenizer's special token ids."""
        if self._packer is None:
            _ = self.tokenizer.vocab_size  # A clear error when there is no vocabulary yet.
            self._packer = self._new_packer(self._settings)
        return self._packer

    @property
    def settings_key(self):
        """A hashable snapshot of everything that decides the ids: code that caches
        traced graphs of this preprocessor compares it to see a setting change."""
        return (id(self), id(self.tokenizer), self.tokenizer.lowercase,
                tuple(sorted(self._settings.items())))

    @property
    def text_settings(self):
        """The `TextSettings` it packs with (saved in a model directory's task.json)."""
        return TextSettings(max_seq_length=self.max_seq_length,
                            lowercase=self.tokenizer.lowercase, truncation=self.truncation,
                            sequence_length=self.sequence_length)

    def saved_settings(self):
        """The text settings as a model directory's task.json keeps them: every key,
        None included (so a reset replaces a saved value), and the tokenizer's
        options that differ from their defaults (`tokenizer_options`)."""
        return {**self.text_settings.to_json(), "sequence_length": self.sequence_length,
                "tokenizer_options": tokenizer_options_of(self.tokenizer) or None}

    @property
    def truncation_length(self):
        """int, the longest packed sequence (see `BertPacker.truncation_length`)."""
        return self.sequence_length or self.max_seq_length

    def with_settings(self, **changes):
        """A preprocessor of the same class and tokenizer with some settings changed
        (`self` when nothing changes), e.g. an export's fixed `sequence_length`."""
        changes = {k: v for k, v in changes.items() if getattr(self, k) != v}
        if not changes:
            return self
        config = {**self.get_config(), **_changed(self._settings, changes),
                  "tokenizer": self.tokenizer}
        return type(self).from_config(config)

    @classmethod
    def from_text_settings(cls, vocabulary, settings, tokenizer=None, tokenizer_options=None,
                           **kwargs):
        """The preprocessor of complete `TextSettings` (see `resolve_text_settings`).

        Each batch is padded to its own longest text (`sequence_length=None`)
        unless `kwargs` say otherwise.

        Args:
            vocabulary: path of a vocabulary file (a `vocab.txt`, or another
                of `keras_bert.text.tokenizer_files.TOKENIZER_FILES`), or a
                list of WordPiece tokens.
            settings: a complete `keras_bert.text.TextSettings`.
            tokenizer: an existing tokenizer of that vocabulary: reused
                when its casing is the settings', else (WordPiece) copied
                with its other options and the settings' casing (None: a
                new one).
            tokenizer_options: dict of other arguments of the tokenizer's class
                for a new tokenizer (`strip_accents`, `never_split`, ...), as
                `saved_settings` writes them.
            **kwargs: other `BertPreprocessor` arguments (`sequence_length`).

        Returns:
            A `BertPreprocessor`.
        """
        if not settings.complete:
            raise ValueError(f"Expected complete text settings (resolve_text_settings gives "
                             f"them). Received: {settings!r}")
        if tokenizer is None:
            tokenizer = load_tokenizer(vocabulary, settings.lowercase, tokenizer_options)
        elif tokenizer.lowercase != settings.lowercase and not isinstance(
                tokenizer, BertTokenizer):
            raise ValueError(f"lowercase={settings.lowercase!r}, but the "
                             f"{type(tokenizer).__name__}'s casing is its own "
                             f"(lowercase={tokenizer.lowercase}). Leave lowercase unset.")
        elif tokenizer.lowercase != settings.lowercase:
            # Another casing, the tokenizer's other options kept.
            options = tokenizer_options_of(tokenizer)
            if tokenizer.strip_accents == tokenizer.lowercase:
                options["strip_accents"] = None  # It followed the casing: it still does.
            tokenizer = BertTokenizer(tokenizer.vocabulary, lowercase=settings.lowercase,
                                      **options)
        kwargs.setdefault("sequence_length", settings.sequence_length)
        return cls(tokenizer, max_seq_length=settings.max_seq_length,
                   truncation=settings.truncation, **kwargs)

    @classmethod
    def from_vocab_file(cls, vocabulary, lowercase=True, **kwargs):
        """Builds the tokenizer and the preprocessor in one call.

        Args:
            vocabulary: path of a `vocab.txt` (or a list of tokens).
            lowercase: bool, True for uncased vocabularies.
            **kwargs: `BertPreprocessor` arguments (`sequence_length`, ...).

        Returns:
            A `BertPreprocessor`.
        """
        return cls(BertTokenizer(vocabulary, lowercase=lowercase), **kwargs)

    @classmethod
    def from_pretrained(cls, source, max_seq_length=None, lowercase=None):
        """The preprocessor of a model directory or of any checkpoint users hold.

        Texts are truncated to `max_seq_length` and each batch is padded to
        its longest text, as the task models' preprocessors do.

        Args:
            source: a keras_bert model directory, a Hugging Face folder or
                Hub id, a Google TF1 folder, or a known name such as
                "bert-base-uncased" (see `keras_bert.sources.resolve_source`).
            max_seq_length: int; default the one saved with the model (from
                the source's max_position_embeddings), else at most 512.
            lowercase: bool; default the one saved with the model (from the
                source's do_lower_case or folder name).

        Returns:
            A `BertPreprocessor`.

        Example:
        >>> preprocessor = BertPreprocessor.from_pretrained("bert-base-uncased")
        """
        return sources.load_preprocessor(source, max_seq_length=max_seq_length,
                                         lowercase=lowercase)

    from_preset = from_pretrained

    def __call__(self, inputs, inputs_b=None, **kwargs):
        hf = sorted(set(kwargs) & set(_HF_ARGUMENTS))
        if hf:
            raise ValueError(
                f"BertPreprocessor takes no {', '.join(hf)} (Hugging Face tokenizer "
                f"arguments): its settings say how to pack. "
                + " ".join(_HF_ARGUMENTS[k] for k in hf))
        inputs = _strings(inputs)
        if isinstance(inputs, (list, tuple)):
            inputs = tuple(_strings(x, nested=False) for x in inputs)
        if inputs_b is None:
            return super().__call__(inputs, **kwargs)
        return super().__call__(inputs, _second_texts(inputs_b), **kwargs)

    def call(self, inputs, inputs_b=None):
        if inputs_b is not None:
            if isinstance(inputs, (list, tuple)):
                raise ValueError(
                    "BertPreprocessor takes a pair as (texts_a, texts_b) or as two "
                    "arguments, not both."
                )
            inputs = (inputs, inputs_b)
        if isinstance(inputs, (list, tuple)):
            if len(inputs) not in (1, 2):
                raise ValueError(
                    "BertPreprocessor takes one batch of strings or a pair "
                    f"of batches. Received: {len(inputs)} inputs."
                )
            segments = tuple(self.tokenize(x) for x in inputs)
        else:
            segments = (self.tokenize(inputs),)
        return self.pack(segments)

    # The two steps `call` is made of. The task models' fit/predict, their
    # exports' signatures and the readers all go through these, so a subclass
    # that overrides one (or `call`) changes every one of them alike.

    def tokenize(self, texts):
        """string Tensor [batch] -> int32 RaggedTensor [batch, (tokens)] of token ids."""
        return self.tokenizer(texts)

    def tokenize_with_offsets(self, texts, unit="UTF8_CHAR"):
        """(ids, starts, ends) int32 RaggedTensors [batch, (tokens)]; offsets in `unit`s
        of `texts` (see `BertTokenizer.tokenize_with_offsets`)."""
        return self.tokenizer.tokenize_with_offsets(texts, unit=unit)

    def pack(self, segments):
        """A tuple of 1 or 2 RaggedTensors of ids [batch, (len)] -> the encoder input dict
        (`BertPacker`: [CLS] A [SEP] (B [SEP]), or `<s> A </s></s> B </s>` with
        pair_separator 2; truncated and padded by the settings)."""
        return self.packer(tuple(segments))

    def decode(self, token_ids, skip_special_tokens=False, clean_up_tokenization_spaces=True):
        """One row of ids -> its text (transformers' `decode`; see `BertTokenizer.decode`)."""
        return self.tokenizer.decode(token_ids, skip_special_tokens,
                                     clean_up_tokenization_spaces)

    def batch_decode(self, sequences, skip_special_tokens=False,
                     clean_up_tokenization_spaces=True):
        """A batch of ids (e.g. this preprocessor's `token_ids`) -> a list of texts
        (transformers' `batch_decode`; see `BertTokenizer.batch_decode`)."""
        return self.tokenizer.batch_decode(sequences, skip_special_tokens,
                                           clean_up_tokenization_spaces)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "tokenizer": keras.saving.serialize_keras_object(
                    self.tokenizer
                ),
                "sequence_length": self.sequence_length,
                "max_seq_length": self.max_seq_length,
                "truncation": self.truncation,
                "pad_to_multiple_of": self.pad_to_multiple_of,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config["tokenizer"], dict):
            config["tokenizer"] = keras.saving.deserialize_keras_object(config["tokenizer"])
        return cls(**config)


def _changed(settings, changes):
    """`settings` with `changes`; a length given alone moves the other where they would
    cross (sequence_length 256 raises max_seq_length 128 to 256, and the reverse)."""
    new = {**settings, **changes}
    fixed, cut = new["sequence_length"], new["max_seq_length"]
    if isinstance(fixed, int) and isinstance(cut, int) and fixed > cut:
        if "max_seq_length" not in changes:
            new["max_seq_length"] = fixed
        elif "sequence_length" not in changes:
            new["sequence_length"] = cut
    return new


def tokenizer_options_of(tokenizer):
    """{argument: value} of `tokenizer`'s options (besides vocabulary and casing) that
    differ from its class's defaults; JSON values."""
    defaults = {name: p.default for name, p in
                inspect.signature(type(tokenizer).__init__).parameters.items()
                if p.default is not inspect.Parameter.empty}
    config = tokenizer.get_config()
    return {name: config[name] for name, default in defaults.items()
            if name not in ("vocabulary", "merges", "proto", "lowercase") and name in config
            and config[name] != default and not (config[name] == [] and default in (None, ()))}


#: What the preprocessor, packer, tasks and exports use of a tokenizer.
_TOKENIZER_INTERFACE = ("pair_separator", "lowercase", "tokenize_with_offsets", "detokenize",
                        "decode", "batch_decode", "token_to_id")

#: Hugging Face tokenizer call arguments -> what says the same here.
_HF_ARGUMENTS = {
    "max_length": "Set preprocessor.max_seq_length = N (texts are cut there).",
    "padding": "Set preprocessor.sequence_length = N to pad every batch to N "
               "(padding='max_length'), or None for each batch's longest (padding=True).",
    "truncation": "Texts are always cut to fit: set preprocessor.truncation to "
                  "'longest_first' or 'round_robin'.",
    "return_tensors": "It returns a dict of int32 tf.Tensors.",
    "add_special_tokens": "It always adds [CLS] and [SEP]; use preprocessor.tokenize for "
                          "ids without them.",
}


def _strings(value, nested=True):
    """`value` as the tokenizer takes it; a list of lists of str is refused.

    `[["one", "two"], ["three", "four"]]` could be two pairs or a 2-D batch:
    not guessed (a tuple of two batches is a pair; a list of one batch is it). With `nested`, a tuple/list of string batches (a pair of
    columns) passes through for `__call__` to convert each.
    """
    if isinstance(value, list) and len(value) > 1 and all(
            isinstance(v, (list, tuple)) for v in value):
        raise ValueError(
            "BertPreprocessor received a list of lists of strings, which could be rows of "
            "pairs or a 2-D batch. Pass one batch of texts (a list of str or a 1-D "
            "array), or a pair of batches as a tuple (texts_a, texts_b).")
    if nested and isinstance(value, (list, tuple)) and not _is_flat(value):
        return value
    return as_string_tensor(value)


def _second_texts(value):
    """The second texts of pairs, or a clear error for what is not text (labels)."""
    texts = _strings(value, nested=False)
    dtype = getattr(texts, "dtype", None)
    kind = getattr(dtype, "kind", None)  # A NumPy dtype's; a tf.DType has none.
    if dtype is None or (kind is None and dtype != "string") or (
            kind is not None and kind not in "USO"):
        raise ValueError(
            "BertPreprocessor's second argument is the second text of a pair "
            f"(texts_a, texts_b). Received: {value!r:.80}, not text. Labels and sample "
            "weights go to model.fit(x, y, sample_weight=...); in a tf.data pipeline, "
            "map with lambda x, y: (preprocessor(x), y).")
    return texts


def _is_flat(value):
    return all(isinstance(v, (str, bytes)) for v in value)
