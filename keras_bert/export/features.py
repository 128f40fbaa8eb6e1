"""Feature extraction: a text file in, one feature vector (or matrix) per line out."""

import os

import numpy as np
import tensorflow as tf

from keras_bert import storage
from keras_bert.data.batching import length_sorted_lines
from keras_bert.files import OutputError, atomic_file, check_not_input, check_writable
from keras_bert.layers import BertFeatures
from keras_bert.models import BertEncoder
from keras_bert.models.model_dir import TASK_FILE, build_preprocessor
from keras_bert.progress import Progress
from keras_bert.text import text_files

#: max_seq_length of features when neither the caller nor the model says.
FEATURES_MAX_SEQ_LENGTH = 128


def _count_lines(path):
    with storage.open_file(path, "rb") as f:
        return sum(1 for _ in f)


def _float_feature(values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=values))


def _int_feature(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def _write_features(dataset, compute, tmp, is_npy, pooling, total, progress):
    """Writes the rows of `dataset` to `tmp` in line order; returns the count."""
    written = 0
    pending = {}  # line number -> (row, real tokens), until the lines before it are out
    writer = array = None
    try:
        for batch, numbers in dataset:
            values = np.asarray(compute(batch), dtype="float32")
            counts = np.asarray(batch["padding_mask"]).sum(axis=1)
            pending.update(zip(numbers.numpy().tolist(), zip(values, counts)))
            ready = []
            while written + len(ready) in pending:
                ready.append(pending.pop(written + len(ready)))
            if not ready:
                continue
            if is_npy:
                if array is None:
                    array = np.lib.format.open_memmap(
                        tmp, mode="w+", dtype="float32", shape=(total, values.shape[-1])
                    )
                array[written : written + len(ready)] = np.stack([row for row, _ in ready])
            else:
                writer = writer or tf.io.TFRecordWriter(tmp)
                for i, (row, count) in enumerate(ready):
                    if pooling is None:
                        row = row[:count]
                    example = tf.train.Example(features=tf.train.Features(feature={
                        "features": _float_feature(row.ravel()),
                        "shape": _int_feature(row.shape),
                        "line": _int_feature([written + i]),
                    }))
                    writer.write(example.SerializeToString())
            written += len(ready)
            if progress is not None:
                progress.update(written)
    finally:
        if writer is not None:
            writer.close()
        if array is not None:
            array.flush()
            del array
    return written


def extract_features(
    model_dir,
    input_file,
    output_file,
    layers="last",
    pooling="mean",
    batch_size=32,
    max_seq_length=None,
    lowercase=None,
    verbose=True,
    sort_window=16,
):
    """Writes BERT features for every line of `input_file`.

    Line i of the input gives row i of the output (an empty line gives the
    features of "[CLS] [SEP]"). Texts longer than `max_seq_length` tokens
    are truncated. Within each window of `sort_window` batches, lines of
    similar length are batched together; rows are written in line order as
    soon as the lines before them are done (memory: about one window).

    Args:
        model_dir: a model directory (any: encoder, pretrainer or task).
        input_file: UTF-8 text, one text per line (invalid bytes are replaced);
            an empty file is an error ("No texts in FILE").
        output_file: ".npy" for pooled features ([num_lines, channels]
            float32), or ".tfrecord": one tf.train.Example per line with
            "features" (float list, row-major), "shape" and "line".
        layers, pooling: see `keras_bert.layers.BertFeatures`; pooling None
            gives token features (TFRecord only).
        batch_size: int, lines per batch.
        max_seq_length, lowercase: None: the model's (task.json), else 128
            and a guess from the vocabulary (with a warning).
        verbose: bool, show progress (on stderr).
        sort_window: int >= 1, batches read and length-sorted together
            (1: batches in file order).

    Returns:
        int, the number of lines written.
    """
    is_npy = output_file.endswith(".npy")
    if not (is_npy or output_file.endswith(".tfrecord")):
        raise ValueError(
            f"output_file must end in .npy or .tfrecord. Received: {output_file!r}"
        )
    if is_npy and pooling is None:
        raise ValueError(
            "Token features (pooling=None) vary in length per line; write them to a "
            ".tfrecord file, or choose pooling='cls', 'mean' or 'max' for .npy."
        )
    text_files.check_text_file(input_file, "input file")
    if os.path.getsize(input_file) == 0:
        # No line, no row: a (0, channels) array would hide a wrong path or a
        # failed step before this one.
        raise ValueError(
            f"No texts in {input_file}: the file is empty. Pass a file with one text a line.")
    # Before the model loads: never over the input, never onto a folder.
    check_not_input(output_file, [input_file, model_dir], flag="output_file")
    check_writable(output_file, flag="output_file")
    if os.path.isdir(output_file):
        raise OutputError(f"output_file {output_file} is a folder; give a .npy or .tfrecord "
                          f"file name.")
    # Checks batch_size and sort_window before the model is loaded; reads lazily.
    sorted_lines = length_sorted_lines(input_file, batch_size, sort_window)
    encoder = BertEncoder.from_pretrained(model_dir)
    if encoder.vocab_file is None:
        raise ValueError(f"{model_dir} has no vocab.txt; features need the tokenizer.")
    preprocessor = build_preprocessor(
        encoder.vocab_file, encoder.max_position_embeddings, encoder.task_info,
        max_seq_length=max_seq_length, lowercase=lowercase,
        default_max_seq_length=FEATURES_MAX_SEQ_LENGTH, where=os.path.join(model_dir, TASK_FILE))
    features = BertFeatures(encoder, layers=layers, pooling=pooling)
    compute = tf.function(lambda x: features(x, training=False), reduce_retracing=True,
                          autograph=False)

    total = _count_lines(input_file)
    dataset = (
        sorted_lines.map(lambda texts, numbers: (preprocessor(texts), numbers),
                         num_parallel_calls=tf.data.AUTOTUNE)
        .prefetch(2)
    )
    progress = Progress(total, unit="line") if verbose else None
    with atomic_file(output_file) as tmp:  # A failure leaves an earlier output_file.
        written = _write_features(dataset, compute, tmp, is_npy, pooling, total, progress)
        if written != total:
            raise RuntimeError(f"Read {written} lines from {input_file}, expected {total}.")
    return written
