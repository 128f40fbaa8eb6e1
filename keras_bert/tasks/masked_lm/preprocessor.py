"""BertMaskedLMPreprocessor: packs as BertPreprocessor, then masks on the fly for the masked LM."""

import re

import keras
import tensorflow as tf

from keras_bert.config import check_count
from keras_bert.text.masker import MaskedLMMasker
from keras_bert.text.preprocessor import BertPreprocessor
from keras_bert.text.tokenizer import BertTokenizer


@keras.saving.register_keras_serializable(package="keras_bert")
class BertMaskedLMPreprocessor(BertPreprocessor):
    """Raw text -> masked-LM training samples, with new masks on every call.

    Tokenizes and packs as `BertPreprocessor` does, then chooses tokens to
    predict by `keras_bert.text.MaskedLMMasker`'s rule.
    `mask_selection_rate=0` masks nothing (the loss of such a batch is 0).
    The tokenizer's mask token written in a text ("[MASK]"; "<mask>" for
    RoBERTa and XLM-R) becomes the mask id (`tokenize` cuts texts there). Every mask setting is settable after construction and saved in
    the config.

    Args:
        tokenizer: a `BertTokenizer`, `SentencePieceTokenizer` or
            `BytePairTokenizer`.
        mask_selection_rate: float in [0, 1], share of real tokens chosen.
        mask_selection_length: int >= 1, most tokens chosen per text: the
            width P of `masked_positions`, the labels and the weights.
        mask_token_rate: float, share of chosen tokens set to `[MASK]`.
        random_token_rate: float, share set to a random token
            (`mask_token_rate + random_token_rate <= 1`).
        seed: int or None; an int gives the same sequence of masks on
            every run.
        **kwargs: `BertPreprocessor` arguments (`sequence_length`,
            `max_seq_length`, `truncation`, `pad_to_multiple_of`, `name`).

    Call arguments:
        As `BertPreprocessor`: `call` packs without masking. `mask(features)`
        masks packed features; `masked_samples(texts)` does both.

    Example:
    >>> preprocessor = BertMaskedLMPreprocessor.from_vocab_file("vocab.txt", sequence_length=None)
    >>> x, y, sample_weight = preprocessor.masked_samples(tf.constant(["the quick brown fox"]))
    >>> sorted(x)
    ['masked_positions', 'padding_mask', 'segment_ids', 'token_ids']
    """

    def __init__(self, tokenizer, mask_selection_rate=0.15, mask_selection_length=20,
                 mask_token_rate=0.8, random_token_rate=0.1, seed=None, **kwargs):
        super().__init__(tokenizer, **kwargs)
        settings = dict(mask_selection_rate=mask_selection_rate,
                        mask_selection_length=mask_selection_length,
                        mask_token_rate=mask_token_rate, random_token_rate=random_token_rate,
                        seed=seed)
        _check_mask_settings(settings)
        object.__setattr__(self, "_mask_settings", settings)
        object.__setattr__(self, "_masker", None)

    @classmethod
    def from_preprocessor(cls, preprocessor, **mask_settings):
        """A masked-LM preprocessor with `preprocessor`'s tokenizer and packing settings
        (`preprocessor` itself when it is one and no setting changes)."""
        if isinstance(preprocessor, cls) and not mask_settings:
            return preprocessor
        if not isinstance(preprocessor, BertPreprocessor):
            raise ValueError(
                f"Expected a keras_bert BertPreprocessor. Received: preprocessor="
                f"{preprocessor!r}. Build one with BertMaskedLMPreprocessor.from_vocab_file"
                f"('vocab.txt').")
        config = {key: value for key, value in preprocessor.get_config().items()
                  if key in ("sequence_length", "max_seq_length", "truncation",
                             "pad_to_multiple_of", *_MASK_SETTINGS)}
        return cls(preprocessor.tokenizer, **{**config, **mask_settings})

    # === Mask settings: live, as the packing settings are ===

    def _mask_setting(name):  # noqa: N805 (a property factory used in the class body)
        def get(self):
            return self._mask_settings[name]

        def set(self, value):
            settings = {**self._mask_settings, name: value}
            _check_mask_settings(settings)
            object.__setattr__(self, "_mask_settings", settings)
            object.__setattr__(self, "_masker", None)  # Rebuilt on next use.

        return property(get, set, doc=f"`{name}` (see the class docstring); settable.")

    mask_selection_rate = _mask_setting("mask_selection_rate")
    mask_selection_length = _mask_setting("mask_selection_length")
    mask_token_rate = _mask_setting("mask_token_rate")
    random_token_rate = _mask_setting("random_token_rate")
    seed = _mask_setting("seed")
    del _mask_setting

    @property
    def settings_key(self):
        # A mask setting changes the samples: traced graphs of this object are rebuilt.
        return super().settings_key + tuple(sorted(self._mask_settings.items()))

    @property
    def mask_token_id(self):
        return self.tokenizer.mask_token_id

    @property
    def mask_token(self):
        """str, the mask token as users write it in text ("[MASK]", "<mask>")."""
        return self.tokenizer.id_to_token(self.mask_token_id)

    @property
    def masker(self):
        """The `MaskedLMMasker` of the current settings (None when the rate is 0)."""
        if self._masker is None and self.mask_selection_rate > 0:
            s = self._mask_settings
            tokenizer = self.tokenizer
            special = None if isinstance(tokenizer, BertTokenizer) else tuple(
                tokenizer.id_to_token(i) for i in (tokenizer.pad_token_id, tokenizer.cls_token_id,
                                                   tokenizer.sep_token_id, self.mask_token_id))
            # Not a tracked sub-layer: it holds no saved state, the settings are the config.
            object.__setattr__(self, "_masker", MaskedLMMasker(
                tokenizer.vocabulary, special_tokens=special, mask_rate=s["mask_selection_rate"],
                max_predictions_per_seq=s["mask_selection_length"],
                mask_token_rate=s["mask_token_rate"],
                random_token_rate=s["random_token_rate"], seed=s["seed"], name="masker"))
        return self._masker

    # === Text -> ids, with "[MASK]" in text read as the mask token ===

    def tokenize(self, texts):
        """string Tensor [batch] -> int32 RaggedTensor [batch, (tokens)]; each mask token
        written in a text becomes the mask id (the tokenizer would split it). Spaces before
        it go with it (transformers' lstrip) unless the tokenizer says its mask token keeps
        them (`BytePairTokenizer.lstrip_tokens`, from tokenizer.json)."""
        texts = tf.convert_to_tensor(texts, tf.string)
        if texts.shape.rank == 0:
            return self.tokenize(texts[tf.newaxis])[0]
        mask_token = self.mask_token
        if mask_token in getattr(self.tokenizer, "lstrip_tokens", [mask_token]):
            texts = tf.strings.regex_replace(texts, r"\s*" + re.escape(mask_token), mask_token)
        parts = tf.strings.split(texts, sep=mask_token)  # (B, (pieces))
        pieces = super().tokenize(parts.flat_values)  # (pieces, (tokens))
        mask = tf.fill([pieces.nrows(), 1], tf.cast(self.mask_token_id, pieces.dtype))
        # Each piece then [MASK]; the last piece of a text has no [MASK] after it.
        pieces = tf.concat([pieces, tf.RaggedTensor.from_tensor(mask)], axis=1)
        ids = tf.RaggedTensor.from_row_splits(pieces, parts.row_splits).merge_dims(1, 2)
        return ids[:, :-1]  # (B, (tokens))

    # === Masking ===

    def mask(self, features):
        """Packed features -> (x, masked_ids, masked_weights), Keras' (x, y, sample_weight).

        Args:
            features: the packed dict (`token_ids`, `segment_ids`,
                `padding_mask`, int32 [B, S]).

        Returns:
            x: `features` with `token_ids` corrupted and `masked_positions`
                int32 [B, P] added (P = `mask_selection_length`; 0 in unused
                slots); masked_ids: int32 [B, P], the original ids there (the
                labels); masked_weights: float32 [B, P], 1 for a prediction,
                0 for a padding slot.
        """
        masker = self.masker
        if masker is None:  # mask_selection_rate 0: nothing chosen, every slot padding.
            batch = tf.shape(features["token_ids"])[0]
            zeros = tf.zeros([batch, self.mask_selection_length], tf.int32)  # (B, P)
            x = {**features, "masked_positions": zeros}
            return x, zeros, tf.cast(zeros, tf.float32)
        masked = masker(features)
        x = {key: masked[key] for key in (*features, "masked_positions")}
        return x, masked["masked_ids"], masked["masked_weights"]

    def next_sentence_pairs(self, texts_a, texts_b):
        """Second texts for next-sentence prediction, and their labels.

        In a batch of pairs, each second text is kept (label 0, IsNext) or, with
        probability 0.5, replaced by the second text of another row of the batch
        (label 1, NotNext), as BERT's data draws a random sentence.

        Args:
            texts_a, texts_b: string Tensors [B].

        Returns:
            (texts [B], labels int32 [B]). A batch of one keeps its pair (label 0).
        """
        batch = tf.shape(texts_b)[0]
        seeds = self._random().make_seeds(2)  # (2, 2)
        swap = tf.random.stateless_uniform([batch], seeds[:, 0]) < 0.5
        swap &= batch > 1
        # A shift of 1..B-1 rows: never the row's own text.
        shift = tf.random.stateless_uniform([], seeds[:, 1], minval=1,
                                            maxval=tf.maximum(batch, 2), dtype=tf.int32)
        others = tf.roll(texts_b, shift, axis=0)
        return tf.where(swap, others, texts_b), tf.cast(swap, tf.int32)

    def _random(self):
        generator = self.__dict__.get("_generator")
        if generator is None:
            with tf.init_scope(), tf.device("/CPU:0"):  # On the CPU, where tf.data runs.
                seed = self.seed
                generator = (tf.random.Generator.from_non_deterministic_state() if seed is None
                             else tf.random.Generator.from_seed(seed + 1))
            object.__setattr__(self, "_generator", generator)
        return generator

    def masked_samples(self, texts):
        """Texts (a string batch [B], or a tuple of one or two) -> `mask` of their packing."""
        return self.mask(self(texts))

    def fill_mask_inputs(self, features):
        """Packed features -> the model inputs that predict each `[MASK]` of the text.

        Returns:
            `features` plus `masked_positions` int32 [B, M]: the positions of
            the mask token in each row, ascending; M is the most `[MASK]`s of
            a row in the batch, 0 marks an unused slot (position 0 is [CLS]).
        """
        token_ids = features["token_ids"]
        is_mask = tf.equal(token_ids, self.mask_token_id)  # (B, S)
        length = tf.shape(token_ids)[1]
        counts = tf.reduce_sum(tf.cast(is_mask, tf.int32), axis=1)  # (B,)
        width = tf.reduce_max(tf.concat([counts, [0]], axis=0))  # 0 for an empty batch
        position = tf.range(length)[tf.newaxis]  # (1, S)
        # Mask positions first, in order; the others after them (sorted past S).
        key = tf.sort(tf.where(is_mask, position, length + position), axis=1)[:, :width]
        positions = tf.where(key < length, key, 0)  # (B, M)
        return {**features, "masked_positions": positions}

    def mask_settings(self):
        """dict of the mask settings (constructor argument -> value)."""
        return dict(self._mask_settings)

    def get_config(self):
        config = super().get_config()
        config.update(self._mask_settings)
        return config


#: The constructor arguments this class adds to BertPreprocessor's, and their
#: task.json schema (a masked-LM model directory keeps them beside the text settings).
MASK_SETTINGS_JSON = {
    "mask_selection_rate": {"type": "number", "minimum": 0},
    "mask_selection_length": {"type": "integer", "minimum": 1},
    "mask_token_rate": {"type": "number", "minimum": 0},
    "random_token_rate": {"type": "number", "minimum": 0},
    "seed": {"type": "integer", "nullable": True},
}
_MASK_SETTINGS = tuple(MASK_SETTINGS_JSON)


def _check_mask_settings(s):
    rate = s["mask_selection_rate"]
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
        raise ValueError(
            f"Expected mask_selection_rate in [0, 1] (0: nothing masked). Received: "
            f"mask_selection_rate={rate!r}")
    check_count("mask_selection_length", s["mask_selection_length"])
    token, random = s["mask_token_rate"], s["random_token_rate"]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
               for v in (token, random)) or token + random > 1.0 + 1e-9:
        raise ValueError(
            f"Expected mask_token_rate and random_token_rate >= 0 with a sum <= 1. "
            f"Received: mask_token_rate={token!r}, random_token_rate={random!r}")
    seed = s["seed"]
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ValueError(f"Expected seed to be an int or None. Received: seed={seed!r}")
