"""length_sorted_batches: inference batches of similar lengths."""

import numpy as np
import pytest

from keras_bert.data.batching import length_sorted_batches


def test_every_index_once_and_less_padding():
    rng = np.random.default_rng(0)
    lengths = rng.integers(3, 120, size=1000)
    batches = length_sorted_batches(lengths, 32)
    assert [len(b) for b in batches] == [32] * 31 + [8]
    np.testing.assert_array_equal(np.sort(np.concatenate(batches)), np.arange(1000))
    padded_sorted = sum(len(b) * lengths[b].max() for b in batches)
    padded_in_order = sum(32 * lengths[s:s + 32].max() for s in range(0, 1000, 32))
    assert padded_sorted < 0.75 * padded_in_order
    # Each batch spans a narrow range of lengths, and batches ascend.
    assert all(lengths[a].max() <= lengths[b].min() for a, b in zip(batches, batches[1:]))


def test_ties_keep_file_order_and_bad_batch_size():
    assert [b.tolist() for b in length_sorted_batches([4, 1, 4, 1, 4], 2)] == [
        [1, 3], [0, 2], [4]]
    assert length_sorted_batches([], 4) == []
    with pytest.raises(ValueError, match="batch_size"):
        length_sorted_batches([1, 2], 0)
