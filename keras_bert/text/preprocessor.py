"""Raw strings in, BERT encoder inputs out: tokenizer + packer."""

import keras

from keras_bert import sources
from keras_bert.text.packer import BertPacker
from keras_bert.text.settings import DEFAULT_TRUNCATION, TextSettings
from keras_bert.text.tokenizer import BertTokenizer
from keras_bert.text.tokenizer import as_string_tensor


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPreprocessor(keras.layers.Layer):
    """Tokenizes and packs raw text into the encoder's input dict.

    Single texts become `[CLS] A [SEP]`, pairs `[CLS] A [SEP] B [SEP]`
    (see `BertTokenizer` and `BertPacker`). Only TensorFlow and
    tensorflow-text ops run, so it works in `tf.data.Dataset.map` and inside
    a `tf.function` saved with `tf.saved_model.save` (a process that loads
    the SavedModel needs `import tensorflow_text`, not keras_bert).

    In a `.keras` file the settings are in the config and the vocabulary
    is an asset (the tokenizer's `vocab.txt`), so the config stays a few KB.

    Args:
        tokenizer: a `BertTokenizer`.
        sequence_length: int or None; see `BertPacker`.
        max_seq_length: int; see `BertPacker`.
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
        sequence_length=128,
        max_seq_length=512,
        truncation=DEFAULT_TRUNCATION,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if not isinstance(tokenizer, BertTokenizer):
            raise ValueError(
                "Expected tokenizer to be a keras_bert BertTokenizer. "
                f"Received: tokenizer={tokenizer!r}. Build one with "
                "BertTokenizer('vocab.txt') or use "
                "BertPreprocessor.from_vocab_file('vocab.txt')."
            )
        self.tokenizer = tokenizer
        self.sequence_length = sequence_length
        self.max_seq_length = max_seq_length
        self.truncation = truncation
        self._packer = None
        if not tokenizer.has_vocabulary:
            # Loading a .keras file: the vocabulary (and so the special
            # token ids) comes later, from the tokenizer's assets. This
            # validates sequence_length, max_seq_length and truncation now.
            self._new_packer(0, 0, 0)
        else:
            self._packer = self._new_packer(
                tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id)
        self.built = True

    def _new_packer(self, cls_token_id, sep_token_id, pad_token_id):
        return BertPacker(
            cls_token_id=cls_token_id,
            sep_token_id=sep_token_id,
            pad_token_id=pad_token_id,
            sequence_length=self.sequence_length,
            max_seq_length=self.max_seq_length,
            truncation=self.truncation,
            name="packer",
        )

    @property
    def packer(self):
        """The `BertPacker`, made with the tokenizer's special token ids."""
        if self._packer is None:
            tokenizer = self.tokenizer
            _ = tokenizer.vocab_size  # A clear error when there is no vocabulary yet.
            self._packer = self._new_packer(
                tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id)
        return self._packer

    @property
    def text_settings(self):
        """The `TextSettings` (max_seq_length, lowercase, truncation) it packs with."""
        return TextSettings(max_seq_length=self.max_seq_length,
                            lowercase=self.tokenizer.lowercase, truncation=self.truncation)

    @property
    def truncation_length(self):
        """int, the longest packed sequence (see `BertPacker.truncation_length`)."""
        return self.packer.truncation_length

    @classmethod
    def from_text_settings(cls, vocabulary, settings, tokenizer=None, **kwargs):
        """The preprocessor of complete `TextSettings` (see `resolve_text_settings`).

        Each batch is padded to its own longest text (`sequence_length=None`)
        unless `kwargs` say otherwise.

        Args:
            vocabulary: path of a `vocab.txt` (or a list of tokens).
            settings: a complete `keras_bert.text.TextSettings`.
            tokenizer: an existing `BertTokenizer` of that vocabulary to
                reuse when its casing is the settings' (None: a new one).
            **kwargs: other `BertPreprocessor` arguments (`sequence_length`).

        Returns:
            A `BertPreprocessor`.
        """
        if not settings.complete:
            raise ValueError(f"Expected complete text settings (resolve_text_settings gives "
                             f"them). Received: {settings!r}")
        if tokenizer is None or tokenizer.lowercase != settings.lowercase:
            tokenizer = BertTokenizer(vocabulary, lowercase=settings.lowercase)
        kwargs.setdefault("sequence_length", None)
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
        inputs = as_string_tensor(inputs)  # A batch given as a list of str.
        if isinstance(inputs, (list, tuple)):
            inputs = tuple(as_string_tensor(x) for x in inputs)
        if inputs_b is None:
            return super().__call__(inputs, **kwargs)
        return super().__call__(inputs, as_string_tensor(inputs_b), **kwargs)

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
            segments = tuple(self.tokenizer(x) for x in inputs)
        else:
            segments = (self.tokenizer(inputs),)
        return self.packer(segments)

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
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["tokenizer"] = keras.saving.deserialize_keras_object(
            config["tokenizer"]
        )
        return cls(**config)
