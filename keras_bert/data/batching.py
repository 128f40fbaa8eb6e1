"""Batching variable-length examples: length buckets for training, padding for eval.

Task readers make a dataset of unbatched, unpadded examples; batches are padded
here, for training to a few bucket edges (few shapes: few traces).
"""

import numpy as np
import tensorflow as tf

from keras_bert.config import check_count

_EDGES = (16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)


def bucket_edges(max_seq_length):
    """Padded lengths of the training buckets, the last one `max_seq_length`.

    Example:
    >>> bucket_edges(64)
    [16, 24, 32, 48, 64]
    """
    return [edge for edge in _EDGES if edge < max_seq_length] + [max_seq_length]


def _length(features, *targets):
    return tf.shape(features["token_ids"])[0]


def training_batches(dataset, batch_size, max_seq_length, seed=None, input_pipeline_id=0,
                     num_input_pipelines=1, padding_values=None, element_length=None):
    """An endless stream of full, shuffled, length-bucketed batches.

    Args:
        dataset: a finite `tf.data.Dataset` of unbatched examples
            `(features, target)`, `features` a dict of [seq] Tensors with
            `token_ids`; targets scalars or [seq] (padded too).
        batch_size: int, examples per batch (this input pipeline's share).
        max_seq_length: int, no example is longer.
        seed: int or None, shuffle seed (reshuffled every pass).
        input_pipeline_id, num_input_pipelines: ints (multi-worker
            training). With a seed, every pipeline draws the same batches of
            n * `batch_size` and keeps its slice, i of n (the batches of one
            process). Without one, pipeline i reads every n-th example.
        padding_values: structure like an element, or None for 0 everywhere.
        element_length: function of an element's parts -> int32 scalar, the
            length that picks its bucket; None: the features' token_ids.

    Returns:
        A `tf.data.Dataset` of batches.
    """
    drawn = batch_size  # Examples per batch drawn from the shuffled stream.
    if num_input_pipelines > 1 and seed is None:
        # Unseeded shuffles differ per worker: each reads its own examples.
        dataset = dataset.shard(num_input_pipelines, input_pipeline_id)
    elif num_input_pipelines > 1:
        drawn = batch_size * num_input_pipelines
    size = dataset.cardinality()
    buffer = int(size) if size > 0 else 10_000
    dataset = dataset.shuffle(buffer, seed=seed, reshuffle_each_iteration=True).repeat()
    edges = bucket_edges(max_seq_length)
    dataset = dataset.bucket_by_sequence_length(
        element_length or _length,
        bucket_boundaries=[edge + 1 for edge in edges],
        bucket_batch_sizes=[drawn] * (len(edges) + 1),
        padding_values=padding_values,
        pad_to_bucket_boundary=True,
        drop_remainder=True,
    )
    if drawn != batch_size:
        start = input_pipeline_id * batch_size

        def keep_slice(*element):  # tf.data passes a tuple element's parts.
            element = tf.nest.map_structure(lambda t: t[start:start + batch_size], element)
            return element if len(element) > 1 else element[0]

        dataset = dataset.map(keep_slice)
    return dataset.prefetch(tf.data.AUTOTUNE)


def eval_batches(dataset, batch_size, padding_values=None):
    """One pass, in order; each batch padded to its longest example."""
    return dataset.padded_batch(batch_size, padding_values=padding_values).prefetch(
        tf.data.AUTOTUNE
    )


def length_sorted_batches(lengths, batch_size):
    """Index batches of examples with similar lengths, for inference (together the
    batches hold every index once).

    Args:
        lengths: sequence of ints, one length (e.g. tokens) per example.
        batch_size: int >= 1.

    Returns:
        list of int64 numpy arrays, each at most `batch_size` indices, in
        ascending length (a stable sort: ties keep file order).

    Example:
    >>> [b.tolist() for b in length_sorted_batches([5, 2, 9, 3], 2)]
    [[1, 3], [0, 2]]
    """
    check_count("batch_size", batch_size)
    order = np.argsort(np.asarray(lengths, dtype=np.int64).reshape(-1), kind="stable")
    return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]


def length_sorted_lines(path, batch_size, sort_window=16):
    """Batches of a text file's lines, sorted by UTF-8 length (stable) within
    windows of `sort_window` batches, windows in file order.

    Args:
        path: a text file, one text per line.
        batch_size: int >= 1.
        sort_window: int >= 1, batches per window (1: file order).

    Returns:
        A `tf.data.Dataset` of `(texts, line_numbers)`: string [b] and int64 [b].
    """
    check_count("batch_size", batch_size)
    check_count("sort_window", sort_window)
    window = batch_size * sort_window

    def sort(first_line, lines):
        order = tf.argsort(tf.strings.length(lines), stable=True)
        numbers = first_line + tf.cast(order, tf.int64)
        return tf.data.Dataset.from_tensor_slices((tf.gather(lines, order), numbers)).batch(
            batch_size)

    windows = tf.data.TextLineDataset(path).batch(window).enumerate()
    return windows.flat_map(lambda index, lines: sort(index * window, lines))
