"""tf.data input for pretraining: TFRecords -> (x, y) batches for BertPretrainer."""

import os

import tensorflow as tf

from keras_bert.data import pretraining_data

X_KEYS = ("token_ids", "segment_ids", "padding_mask", "masked_positions")
Y_KEYS = ("masked_ids", "masked_weights", "next_sentence_labels")


def pretraining_dataset(
    data_dir,
    batch_size,
    training=True,
    seed=0,
    shuffle_buffer_size=10000,
    input_pipeline_id=0,
    num_input_pipelines=1,
    metadata=None,
):
    """Batches of `(x, y)` for `BertPretrainer` from a pretraining data directory.

    The data's settings are read from its metadata.json and vocab.txt.
    Training: shuffled and repeated forever, the remainder dropped (static
    shapes for XLA), dynamic masks seeded by `(seed, pipeline, batch number)`:
    deterministic, so an iterator checkpoint resumes exactly. Evaluation: one
    pass in file order, the last partial batch kept. Pipelines (workers)
    shard by files when there are enough files, else by records.

    Args:
        data_dir: str, written by `keras_bert.data.create_pretraining_data`.
        batch_size: int, examples per batch of this pipeline.
        training: bool.
        seed: int, shuffling and masking seed.
        shuffle_buffer_size: int, records in the shuffle buffer (training).
        input_pipeline_id: int, this worker's index among the pipelines.
        num_input_pipelines: int, number of workers reading the data.
        metadata: dict, `read_metadata(data_dir)` if already read.

    Returns:
        A `tf.data.Dataset` of `(x, y)`: x = {token_ids, segment_ids,
        padding_mask, masked_positions}, y = {masked_ids, masked_weights,
        next_sentence_labels}; int32 [batch, max_seq_length] /
        [batch, max_predictions_per_seq] (masked_weights float32), labels
        int32 [batch].
    """
    metadata = metadata or pretraining_data.read_metadata(data_dir)
    files = pretraining_data.shard_paths(data_dir, metadata)
    by_files = len(files) >= num_input_pipelines
    dataset = tf.data.Dataset.from_tensor_slices(files)
    if num_input_pipelines > 1 and by_files:
        dataset = dataset.shard(num_input_pipelines, input_pipeline_id)
    if training:
        num_files = len(files[input_pipeline_id::num_input_pipelines]) if by_files else len(files)
        dataset = dataset.shuffle(num_files, seed=seed, reshuffle_each_iteration=True)
        dataset = dataset.repeat()
        dataset = dataset.interleave(
            tf.data.TFRecordDataset,
            cycle_length=min(num_files, 8),
            block_length=1,
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )
    else:
        dataset = dataset.flat_map(tf.data.TFRecordDataset)
    if num_input_pipelines > 1 and not by_files:
        dataset = dataset.shard(num_input_pipelines, input_pipeline_id)
    if training and shuffle_buffer_size > 1:
        dataset = dataset.shuffle(shuffle_buffer_size, seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.batch(batch_size, drop_remainder=training)

    masker = None
    if metadata["masking"] == "dynamic":
        from keras_bert.text import MaskedLMMasker

        masker = MaskedLMMasker(
            os.path.join(data_dir, pretraining_data.VOCAB_FILE),
            mask_rate=metadata["masked_lm_prob"],
            max_predictions_per_seq=metadata["max_predictions_per_seq"],
            whole_word_masking=metadata["whole_word_masking"],
        )
    stream = tf.constant(seed * 1_000_003 + input_pipeline_id, tf.int64)

    def parse(index, serialized):
        features = pretraining_data.parse_examples(serialized, metadata)
        if masker is not None:
            features = masker(features, seed=tf.stack([stream, index]))
        return {k: features[k] for k in X_KEYS}, {k: features[k] for k in Y_KEYS}

    dataset = dataset.enumerate().map(
        parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    )
    options = tf.data.Options()
    options.deterministic = True
    # Sharding is explicit above; keep tf.distribute from sharding again.
    options.experimental_distribute.auto_shard_policy = (
        tf.data.experimental.AutoShardPolicy.OFF
    )
    return dataset.with_options(options).prefetch(tf.data.AUTOTUNE)
