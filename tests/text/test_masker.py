"""MaskedLMMasker: rates, exclusions, whole words, seeds."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.text import BertPacker
from keras_bert.text import MaskedLMMasker
from tests.text.conftest import TINY_VOCAB

SPECIAL_IDS = (0, 100, 101, 102, 103)  # [PAD] [UNK] [CLS] [SEP] [MASK].


@pytest.fixture(scope="module")
def packed(tokenizer):
    """~145k real tokens of prose packed in rows of 128, some padded."""
    from pydoc_data.topics import topics

    ids = tokenizer(tf.constant([topics[k] for k in sorted(topics)]))
    flat = ids.flat_values.numpy()
    rows = [flat[i : i + 126] for i in range(0, len(flat), 126)]
    rng = np.random.default_rng(0)
    # Every third row is cut short, so padding positions exist.
    rows = [
        r[: rng.integers(5, 126)] if i % 3 == 0 else r
        for i, r in enumerate(rows)
    ]
    packer = BertPacker(101, 102, sequence_length=128)
    out = packer(tf.ragged.constant(rows, dtype=tf.int32))
    return {k: v.numpy() for k, v in out.items()}


def _chosen(out, length):
    positions = out["masked_positions"].numpy()
    weights = out["masked_weights"].numpy()
    chosen = np.zeros([positions.shape[0], length], bool)
    for row, (p, w) in enumerate(zip(positions, weights)):
        chosen[row, p[w > 0]] = True
    return chosen


def _candidates(packed):
    ids = packed["token_ids"]
    return (packed["padding_mask"] == 1) & ~np.isin(ids, (0, 101, 102))


def test_rates_over_100k_tokens(vocab_path, packed):
    masker = MaskedLMMasker(vocab_path, max_predictions_per_seq=20, seed=5)
    out = masker(packed)
    ids = packed["token_ids"]
    new = out["token_ids"].numpy()
    chosen = _chosen(out, ids.shape[1])
    candidates = _candidates(packed)
    assert candidates.sum() >= 100_000
    # Never [CLS], [SEP], [PAD] or padding.
    assert not (chosen & ~candidates).any()
    assert abs(chosen.sum() / candidates.sum() - 0.15) < 0.005
    # Only chosen positions change.
    assert np.array_equal(new[~chosen], ids[~chosen])
    to_mask = chosen & (new == 103)
    unchanged = chosen & (new == ids)
    to_random = chosen & ~to_mask & ~unchanged
    n = chosen.sum()
    assert abs(to_mask.sum() / n - 0.8) < 0.01
    assert abs(to_random.sum() / n - 0.1) < 0.01
    assert abs(unchanged.sum() / n - 0.1) < 0.01
    # Random replacements are ordinary tokens, never [PAD], [unused0], ...
    assert not np.isin(new[to_random], SPECIAL_IDS).any()
    assert (new[to_random] > 998).all()  # 1..998 are [unusedN].
    # masked_ids hold the original ids; weights mark the used slots.
    positions = out["masked_positions"].numpy()
    weights = out["masked_weights"].numpy()
    np.testing.assert_array_equal(
        out["masked_ids"].numpy(),
        np.where(weights > 0, np.take_along_axis(ids, positions, 1), 0),
    )
    assert out["masked_positions"].dtype == tf.int32
    assert out["masked_weights"].dtype == tf.float32
    assert (np.diff(positions, axis=1)[weights[:, 1:] > 0] > 0).all()
    np.testing.assert_array_equal(out["segment_ids"], packed["segment_ids"])


def test_whole_word_masking_never_splits_a_word(vocab_path, tokenizer, packed):
    masker = MaskedLMMasker(
        vocab_path, whole_word_masking=True, max_predictions_per_seq=20,
        seed=11,
    )
    out = masker(packed)
    ids = packed["token_ids"]
    chosen = _chosen(out, ids.shape[1])
    candidates = _candidates(packed)
    vocab = tokenizer.vocabulary
    continuation = np.array([t.startswith("##") and len(t) > 2 for t in vocab])
    is_cont = continuation[ids] & candidates
    previous_candidate = np.pad(candidates[:, :-1], [[0, 0], [1, 0]])
    joined = is_cont & previous_candidate  # Same word as the token before.
    assert joined.sum() > 5_000
    # A continuation piece is chosen exactly when the piece before it is.
    prev_chosen = np.pad(chosen[:, :-1], [[0, 0], [1, 0]])
    assert np.array_equal(chosen[joined], prev_chosen[joined])
    assert not (chosen & ~candidates).any()
    assert abs(chosen.sum() / candidates.sum() - 0.15) < 0.01
    assert (out["masked_weights"].numpy().sum(1) <= 20).all()


def test_same_seed_same_masks(vocab_path, packed):
    batch = {k: v[:64] for k, v in packed.items()}
    first = MaskedLMMasker(vocab_path, seed=3)(batch)
    second = MaskedLMMasker(vocab_path, seed=3)(batch)
    other = MaskedLMMasker(vocab_path, seed=4)(batch)
    for key in first:
        np.testing.assert_array_equal(first[key], second[key])
    assert not np.array_equal(first["masked_positions"], other["masked_positions"])
    # A generator moves on: the next call masks differently (dynamic masking).
    masker = MaskedLMMasker(vocab_path, seed=3)
    one, two = masker(batch), masker(batch)
    assert not np.array_equal(one["masked_positions"], two["masked_positions"])
    # Stateless seeds, e.g. per (epoch, example).
    a = masker(batch, seed=tf.constant([7, 8]))
    b = masker(batch, seed=tf.constant([7, 8]))
    np.testing.assert_array_equal(a["token_ids"], b["token_ids"])


def test_max_predictions_cap_and_short_rows():
    masker = MaskedLMMasker(
        TINY_VOCAB, mask_rate=1.0, max_predictions_per_seq=3, seed=0
    )
    packer = BertPacker(2, 3, sequence_length=10)
    packed = packer(tf.ragged.constant([[5, 6, 7, 8, 9, 10, 11], [5], []]))
    out = masker(packed)
    assert out["masked_weights"].numpy().tolist() == [
        [1, 1, 1], [1, 0, 0], [0, 0, 0]
    ]
    assert out["masked_positions"].numpy()[1].tolist() == [1, 0, 0]
    assert out["masked_ids"].numpy()[1].tolist() == [5, 0, 0]


def test_in_dataset_map_unbatched_and_batched():
    masker = MaskedLMMasker(TINY_VOCAB, max_predictions_per_seq=4, seed=1)
    packer = BertPacker(2, 3, sequence_length=12)
    rows = tf.ragged.constant([[5, 6, 7, 8, 9, 10, 11, 12], [13, 14, 15]])
    ds = tf.data.Dataset.from_tensor_slices(rows).map(packer)
    unbatched = next(iter(ds.map(masker)))
    assert unbatched["masked_positions"].shape == (4,)
    batched = next(iter(ds.batch(2).map(masker)))
    assert batched["masked_positions"].shape == (2, 4)
    assert batched["masked_weights"].numpy().sum(1).tolist() == [1, 1]


def test_config_round_trip_and_errors():
    masker = MaskedLMMasker(
        TINY_VOCAB, mask_rate=0.2, whole_word_masking=True, seed=9
    )
    clone = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(masker)
    )
    assert clone.get_config() == masker.get_config()
    with pytest.raises(ValueError, match="mask_rate=1.5"):
        MaskedLMMasker(TINY_VOCAB, mask_rate=1.5)
    with pytest.raises(ValueError, match="random_token_rate=0.5"):
        MaskedLMMasker(TINY_VOCAB, mask_token_rate=0.8, random_token_rate=0.5)
    with pytest.raises(ValueError, match=r"'\[MASK\]'"):
        MaskedLMMasker([t for t in TINY_VOCAB if t != "[MASK]"])
    with pytest.raises(ValueError, match="padding_mask"):
        masker({"token_ids": tf.constant([[1, 2]])})
