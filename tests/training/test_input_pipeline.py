import numpy as np
import pytest
import tensorflow as tf

from keras_bert.data import read_metadata
from keras_bert.training import pretraining_dataset
from tests.training.conftest import make_data


@pytest.fixture(scope="module")
def one_shard(corpus):
    """Dynamic masking, seq 32, one shard: from the held-out documents (an eighth of the
    corpus; dynamic_data holds the training documents in 2 shards)."""
    return make_data(corpus, "dynamic_one_shard", "held", max_seq_length=32,
                     max_predictions_per_seq=5, masking="dynamic", dupe_factor=1)


def _numpy(batches):
    return [tf.nest.map_structure(lambda t: t.numpy(), b) for b in batches]


def _unmask(x, y):
    """The clean token ids of a dynamically masked batch."""
    ids = x["token_ids"].copy()
    for row in range(len(ids)):
        used = y["masked_weights"][row] > 0
        ids[row, x["masked_positions"][row][used]] = y["masked_ids"][row][used]
    return ids


@pytest.mark.slow
def test_dynamic_masks_are_new_each_epoch_and_repeat_with_the_seed(one_shard):
    size = read_metadata(one_shard)["num_instances"]
    # Batch 1 and shuffling off: epoch 2 starts at element `size`, same records.
    dataset = pretraining_dataset(one_shard, 1, shuffle_buffer_size=1)
    first = _numpy(dataset.take(3))
    second = _numpy(dataset.skip(size).take(3))
    for a, b in zip(first, second):
        np.testing.assert_array_equal(_unmask(*a), _unmask(*b))  # The same record...
    assert any(not np.array_equal(a[0]["masked_positions"], b[0]["masked_positions"])
               for a, b in zip(first, second))  # ...masked anew.
    again = _numpy(pretraining_dataset(one_shard, 1, shuffle_buffer_size=1).take(3))
    tf.nest.map_structure(np.testing.assert_array_equal, again, first)  # Same seed.
    other = _numpy(pretraining_dataset(one_shard, 1, shuffle_buffer_size=1, seed=9).take(3))
    assert any(not np.array_equal(a[0]["masked_positions"], b[0]["masked_positions"])
               for a, b in zip(first, other))
    x, y = _numpy(pretraining_dataset(one_shard, 8).take(1))[0]
    assert x["token_ids"].shape == (8, 32) and x["masked_positions"].shape == (8, 5)
    assert y["masked_weights"].dtype == np.float32 and y["next_sentence_labels"].shape == (8,)


def test_workers_read_disjoint_shards_that_cover_the_data(dynamic_data, one_shard):
    for data_dir in (dynamic_data, one_shard):  # By files (2 shards), by records (1).
        def rows(**kwargs):
            batches = _numpy(pretraining_dataset(data_dir, 64, training=False, **kwargs))
            return [tuple(r) for x, y in batches for r in _unmask(x, y)]

        everything = rows()
        parts = [rows(input_pipeline_id=i, num_input_pipelines=2) for i in range(2)]
        assert sorted(parts[0] + parts[1]) == sorted(everything)  # A partition.
        assert min(map(len, parts)) > 0.3 * len(everything)


def test_a_restored_iterator_continues_with_the_next_batch(dynamic_data, tmp_path):
    def iterator():
        return iter(pretraining_dataset(dynamic_data, 4, shuffle_buffer_size=64))

    it = iterator()
    for _ in range(3):
        next(it)
    path = tf.train.Checkpoint(iterator=it).write(str(tmp_path / "data"))
    expected = _numpy([next(it)])
    fresh = iterator()
    tf.train.Checkpoint(iterator=fresh).read(path).assert_consumed()
    tf.nest.map_structure(np.testing.assert_array_equal, _numpy([next(fresh)]), expected)
