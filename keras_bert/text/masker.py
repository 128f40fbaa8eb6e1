"""Dynamic masked-language-model masking, in the graph."""

import re

import keras
import numpy as np
import tensorflow as tf

from keras_bert.text.vocab import SPECIAL_TOKENS
from keras_bert.text.vocab import load_bert_vocabulary
from keras_bert.text.vocab import load_vocabulary

# "[PAD]", "[unused0]", ...: never drawn as random replacements.
# Own ops rather than tensorflow-text's RandomItemSelector/MaskValuesChooser:
# those draw unseeded random numbers (no reproducible masks) and choose a
# Bernoulli number of items per sequence rather than round(rate * n).
_BRACKETED = re.compile(r"\[[A-Za-z0-9_]+\]")
# RoBERTa's and XLM-R's special tokens: "<s>", "</s>", "<pad>", "<unk>", "<mask>".
_ANGLED = re.compile(r"<[a-z/]+>")


@keras.saving.register_keras_serializable(package="keras_bert")
class MaskedLMMasker(keras.layers.Layer):
    """Chooses and corrupts tokens for the masked-LM task (BERT paper, 3.1).

    For each sequence, `mask_rate` of its real tokens (never `[CLS]`,
    `[SEP]`, `[PAD]` or padding) are chosen, `round(mask_rate * n)` but at
    least 1 and at most `max_predictions_per_seq`, as google-research/bert's
    `create_pretraining_data.py` does. Of the chosen tokens,
    `mask_token_rate` become `[MASK]`, `random_token_rate` a random token
    (drawn uniformly from the vocabulary without special tokens like
    `[PAD]` or `[unused0]`), the rest stay as they are. New choices on every
    call, so every epoch sees other masks ("dynamic masking").

    With `whole_word_masking`, a word (a piece and the "##" pieces after it)
    is chosen or left as a whole: words are taken in random order, a word
    that would overshoot the count is skipped (as in Google's code).

    Args:
        vocabulary: list of str or path of a `vocab.txt`; gives the special
            ids, the "##" continuation pieces and the random-token pool.
        mask_rate: float in (0, 1], share of tokens chosen.
        max_predictions_per_seq: int, most tokens chosen per sequence; the
            width of the `masked_*` outputs.
        mask_token_rate: float, share of chosen tokens set to `[MASK]`.
        random_token_rate: float, share set to a random token.
            `mask_token_rate + random_token_rate` must be <= 1.
        whole_word_masking: bool.
        special_tokens: None (BERT's `[PAD]`, `[CLS]`, `[SEP]`, `[MASK]`), or
            the (pad, cls, sep, mask) tokens of another vocabulary, e.g.
            `("<pad>", "<s>", "</s>", "<mask>")` for RoBERTa and XLM-R.
        seed: int or None. With an int, the sequence of masks is the same
            on every run (a `tf.random.Generator` seeded with it).
        **kwargs: passed to `keras.layers.Layer`.

    Call arguments:
        inputs: dict with `token_ids` int [batch, seq] and `padding_mask`
            int/bool [batch, seq] (as from `BertPacker`; [seq] unbatched
            also works); other keys are passed through.
        seed: optional int Tensor of shape [2]: use stateless random ops
            with this seed instead of the layer's generator (the same seed
            gives the same masks, e.g. `seed=[epoch, example_index]`).

    Returns:
        The input dict with `token_ids` corrupted, plus
        `masked_positions` int32 [batch, max_predictions_per_seq] (ascending,
        0 in unused slots), `masked_ids` int32 [batch,
        max_predictions_per_seq] (the original ids there, 0 unused) and
        `masked_weights` float32 [batch, max_predictions_per_seq] (1.0 used,
        0.0 unused).

    Example:
    >>> masker = MaskedLMMasker("vocab.txt", max_predictions_per_seq=20,
    ...                         seed=1)
    >>> ds = ds.map(preprocessor).map(masker)
    """

    def __init__(
        self,
        vocabulary,
        mask_rate=0.15,
        max_predictions_per_seq=20,
        mask_token_rate=0.8,
        random_token_rate=0.1,
        whole_word_masking=False,
        special_tokens=None,
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if not 0.0 < mask_rate <= 1.0:
            raise ValueError(
                f"Expected mask_rate in (0, 1]. Received: mask_rate={mask_rate}"
            )
        if not isinstance(max_predictions_per_seq, int) or (
            max_predictions_per_seq < 1
        ):
            raise ValueError(
                "Expected max_predictions_per_seq to be a positive int. "
                f"Received: max_predictions_per_seq={max_predictions_per_seq!r}"
            )
        if (
            mask_token_rate < 0
            or random_token_rate < 0
            or mask_token_rate + random_token_rate > 1.0 + 1e-9
        ):
            raise ValueError(
                "Expected mask_token_rate and random_token_rate >= 0 with a "
                f"sum <= 1. Received: mask_token_rate={mask_token_rate}, "
                f"random_token_rate={random_token_rate}"
            )
        if seed is not None and not isinstance(seed, int):
            raise ValueError(
                f"Expected seed to be an int or None. Received: seed={seed!r}"
            )
        if special_tokens is None:
            tokens, ids, source = load_bert_vocabulary(
                vocabulary, "Add it, or build the vocabulary with tools/build_vocab.py.")
            names = ("[PAD]", "[CLS]", "[SEP]", "[MASK]")
        else:
            special_tokens = tuple(special_tokens)
            tokens, source = load_vocabulary(vocabulary)
            ids = {token: index for index, token in enumerate(tokens)}
            names = special_tokens
            missing = [t for t in names if t not in ids]
            if len(names) != 4 or missing:
                raise ValueError(
                    "Expected special_tokens to be the (pad, cls, sep, mask) tokens of the "
                    f"vocabulary ({source}). Received: special_tokens={special_tokens!r}"
                    + (f"; not in the vocabulary: {missing}" if missing else ""))
        self.special_tokens = special_tokens
        self._vocabulary = tokens
        self.mask_rate = mask_rate
        self.max_predictions_per_seq = max_predictions_per_seq
        self.mask_token_rate = mask_token_rate
        self.random_token_rate = random_token_rate
        self.whole_word_masking = whole_word_masking
        self.seed = seed
        self.pad_token_id, self.cls_token_id, self.sep_token_id, self.mask_token_id = (
            ids[name] for name in names)
        special = _BRACKETED if special_tokens is None else _ANGLED
        pool = [
            i
            for i, t in enumerate(tokens)
            if t not in SPECIAL_TOKENS and t not in names and not special.fullmatch(t)
        ]
        if not pool:
            raise ValueError(
                f"The vocabulary ({source}) has no ordinary tokens to draw "
                "random replacements from."
            )
        with tf.init_scope(), tf.device("/CPU:0"):
            self._is_continuation = tf.constant(
                np.array([len(t) > 2 and t.startswith("##") for t in tokens])
            )
            self._random_pool = tf.constant(pool, tf.int32)
            # On the CPU, so tf.data (which runs there) can use it.
            if seed is None:
                self._generator = (
                    tf.random.Generator.from_non_deterministic_state()
                )
            else:
                self._generator = tf.random.Generator.from_seed(seed)
        self.built = True

    @property
    def vocabulary(self):
        return list(self._vocabulary)

    def _choose_words(self, candidates, token_ids, counts, seed):
        """Whole-word choice. Returns bool [batch, seq]."""
        batch_size, length = tf.shape(token_ids)[0], tf.shape(token_ids)[1]
        continuation = tf.gather(self._is_continuation, token_ids) & candidates
        previous = tf.pad(candidates[:, :-1], [[0, 0], [1, 0]])
        starts = candidates & ~(continuation & previous)
        # Word index of each candidate piece, 0-based within its row.
        word = tf.maximum(tf.cumsum(tf.cast(starts, tf.int32), axis=1) - 1, 0)
        num_words = tf.reduce_sum(tf.cast(starts, tf.int32), axis=1)
        flat_word = word + tf.range(batch_size)[:, None] * length
        word_length = tf.reshape(
            tf.math.unsorted_segment_sum(
                tf.cast(candidates, tf.int32), flat_word, batch_size * length
            ),
            [batch_size, length],
        )  # [batch, max words]
        real_word = tf.range(length)[None, :] < num_words[:, None]
        score = tf.random.stateless_uniform([batch_size, length], seed)
        score = tf.where(real_word, score, -1.0)
        order = tf.argsort(score, axis=1, direction="DESCENDING")
        sorted_length = tf.gather(word_length, order, batch_dims=1)

        # Google's loop: take words in random order, skip one that would
        # overshoot. Sequential over words, parallel over the batch.
        def step(total, word_len):
            return total + tf.where(total + word_len <= counts, word_len, 0)

        totals = tf.scan(
            step,
            tf.transpose(sorted_length),
            initializer=tf.zeros([batch_size], tf.int32),
        )  # [max words, batch]: running total after each word
        previous_totals = tf.concat(
            [tf.zeros([1, batch_size], tf.int32), totals[:-1]], axis=0
        )
        taken_sorted = tf.transpose(
            (totals > previous_totals)
        )  # [batch, max words]
        rank = tf.argsort(order, axis=1)  # Position of each word in `order`.
        taken = tf.gather(taken_sorted, rank, batch_dims=1)
        return candidates & tf.gather(taken, word, batch_dims=1)

    def call(self, inputs, seed=None):
        if not isinstance(inputs, dict) or not {
            "token_ids",
            "padding_mask",
        } <= set(inputs):
            raise ValueError(
                "MaskedLMMasker takes the packed dict with 'token_ids' and "
                "'padding_mask' (the output of BertPacker/BertPreprocessor). "
                f"Received: {inputs!r}"
            )
        token_ids = tf.cast(inputs["token_ids"], tf.int32)
        unbatched = token_ids.shape.rank == 1
        padding_mask = tf.cast(inputs["padding_mask"], tf.bool)
        if unbatched:
            token_ids = token_ids[tf.newaxis]
            padding_mask = padding_mask[tf.newaxis]
        if seed is None:
            seed = self._generator.make_seeds(1)[:, 0]
        seeds = tf.random.experimental.stateless_split(
            tf.cast(seed, tf.int64), num=4
        )
        batch_size, length = tf.shape(token_ids)[0], tf.shape(token_ids)[1]
        width = self.max_predictions_per_seq

        candidates = (
            padding_mask
            & tf.not_equal(token_ids, self.cls_token_id)
            & tf.not_equal(token_ids, self.sep_token_id)
            & tf.not_equal(token_ids, self.pad_token_id)
        )
        num_candidates = tf.reduce_sum(tf.cast(candidates, tf.int32), axis=1)
        counts = tf.cast(
            tf.round(tf.cast(num_candidates, tf.float32) * self.mask_rate),
            tf.int32,
        )
        counts = tf.minimum(tf.maximum(counts, 1), width)
        counts = tf.minimum(counts, num_candidates)  # [batch]

        if self.whole_word_masking:
            chosen = self._choose_words(candidates, token_ids, counts, seeds[0])
        else:
            score = tf.random.stateless_uniform([batch_size, length], seeds[0])
            score = tf.where(candidates, score, -1.0)
            rank = tf.argsort(
                tf.argsort(score, axis=1, direction="DESCENDING"), axis=1
            )
            chosen = candidates & (rank < counts[:, None])

        # 80% [MASK], 10% random token, 10% unchanged.
        draw = tf.random.stateless_uniform([batch_size, length], seeds[1])
        to_mask = chosen & (draw < self.mask_token_rate)
        to_random = (
            chosen
            & (draw >= self.mask_token_rate)
            & (draw < self.mask_token_rate + self.random_token_rate)
        )
        random_ids = tf.gather(
            self._random_pool,
            tf.random.stateless_uniform(
                [batch_size, length],
                seeds[2],
                minval=0,
                maxval=tf.shape(self._random_pool)[0],
                dtype=tf.int32,
            ),
        )
        masked_token_ids = tf.where(
            to_mask,
            self.mask_token_id,
            tf.where(to_random, random_ids, token_ids),
        )

        # Chosen positions, ascending, padded to `width`.
        position = tf.range(length)[None, :]
        key = tf.sort(tf.where(chosen, position, length + position), axis=1)
        key = tf.pad(key, [[0, 0], [0, tf.maximum(width - length, 0)]],
                     constant_values=2 * length)[:, :width]
        used = key < length
        positions = tf.where(used, key, 0)
        masked_ids = tf.where(
            used, tf.gather(token_ids, positions, batch_dims=1), 0
        )
        outputs = {
            "token_ids": masked_token_ids,
            "masked_positions": positions,
            "masked_ids": masked_ids,
            "masked_weights": tf.cast(used, tf.float32),
        }
        if unbatched:
            outputs = {k: v[0] for k, v in outputs.items()}
        result = dict(inputs)
        result.update(outputs)
        return result

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary": self.vocabulary,
                "mask_rate": self.mask_rate,
                "max_predictions_per_seq": self.max_predictions_per_seq,
                "mask_token_rate": self.mask_token_rate,
                "random_token_rate": self.random_token_rate,
                "whole_word_masking": self.whole_word_masking,
                "special_tokens": self.special_tokens,
                "seed": self.seed,
            }
        )
        return config
