"""Format-neutral reading of labeled text files, for every task's reader
(tasks/*/reader.py builds on these; they know nothing of a task)."""

import dataclasses
import os

import numpy as np
import tensorflow as tf

from keras_bert.data.task_options import FILE_FORMATS as FORMATS, check_file_format
from keras_bert.text import text_files

_EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl"}


class ParallelExamples:
    """Base of a reader's examples: a dataclass of parallel lists and a report.

    Its first field sets the length; `subset` picks the same entries of every
    list field and keeps the fields named in `whole_fields` as they are.
    """

    whole_fields = ("report",)

    def __len__(self):
        return len(getattr(self, dataclasses.fields(self)[0].name))

    def subset(self, indices):
        """The examples at `indices` (a sequence of ints), same report."""
        return dataclasses.replace(self, **{
            field.name: None if getattr(self, field.name) is None
            else [getattr(self, field.name)[i] for i in indices]
            for field in dataclasses.fields(self) if field.name not in self.whole_fields})


def detect_format(path, file_format=None):
    """"csv", "tsv" or "jsonl" from `file_format` or the file extension.

    Args:
        path: str, the data file.
        file_format: str or None; when given it must be one of `FORMATS`.

    Returns:
        str, one of `FORMATS`.
    """
    check_file_format(file_format)
    if file_format is not None:
        return file_format
    ext = os.path.splitext(path)[1].lower()
    if ext not in _EXTENSIONS:
        raise ValueError(
            f"Cannot tell the format of {path} from its extension {ext!r}. Name it "
            f"{sorted(_EXTENSIONS)} or pass file_format (--format) as one of {FORMATS}."
        )
    return _EXTENSIONS[ext]


def read_lines(path, report, what="data file"):
    """Yields (line_number, str line with its ending) of a text file.

    Each line is decoded as UTF-8 on its own; one with invalid bytes is
    decoded with errors="replace" and reported as repaired. The file is opened
    once (a pipe works) and checked by `text_files.read_text_file`.

    Args:
        path: str, the file.
        report: `keras_bert.data.report.DataReport`, told of each repair.
        what: str, what the file is for, for the messages.
    """
    data = text_files.read_text_file(path, what)
    # bytes.splitlines splits on \n, \r and \r\n only (str.splitlines would
    # also split on U+2028 and other separators that may sit inside a text).
    for number, raw in enumerate(data.splitlines(keepends=True), start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            line = raw.decode("utf-8", errors="replace")
            report.repair(f"{path}:{number}", "invalid UTF-8", f"{e.reason} at byte {e.start}, replaced by U+FFFD")
        yield number, line


def split_examples(examples, eval_fraction=0.1, seed=0):
    """A fixed, seeded split into (train, eval) examples, each in file order.

    Args:
        examples: anything with `subset(indices)` and `len` (a task
            reader's `ParallelExamples`).
        eval_fraction: float in (0, 1).
        seed: int.

    Returns:
        A tuple `(train_examples, eval_examples)`.
    """
    if not 0 < eval_fraction < 1:
        raise ValueError(f"Expected eval_fraction in (0, 1). Received: eval_fraction={eval_fraction!r}")
    n = len(examples)
    permutation = np.random.default_rng(seed).permutation(n)
    num_eval = int(round(eval_fraction * n))
    if num_eval == 0 or num_eval == n:
        raise ValueError(f"eval_fraction={eval_fraction} of {n} examples leaves an empty split.")
    eval_indices = np.sort(permutation[:num_eval])
    train_indices = np.sort(permutation[num_eval:])
    return examples.subset(train_indices.tolist()), examples.subset(eval_indices.tolist())


def text_label_dataset(texts, texts_b, labels, preprocessor):
    """Texts and labels -> a dataset of unbatched `(encoder inputs, label)` pairs.

    Each example keeps its own length (`preprocessor` has
    `sequence_length=None`); the result is cached in memory. Batch it with
    `batching.training_batches` or `batching.eval_batches`.

    Args:
        texts: list of str, the first (or only) segment.
        texts_b: list of str (second segments of pairs), or None.
        labels: numpy array with one row per text: int32 ids [N], float32
            values [N], or 0/1 rows [N, num_labels] (multi-label).
        preprocessor: `keras_bert.text.BertPreprocessor`.

    Returns:
        A `tf.data.Dataset` of `({"token_ids", "segment_ids",
        "padding_mask"}: int32 [seq], label)`.
    """
    first = tf.constant(texts, tf.string)
    columns = (first,) if texts_b is None else (first, tf.constant(texts_b, tf.string))
    dataset = tf.data.Dataset.from_tensor_slices((columns, labels))

    def pack(segments, label):
        return preprocessor(segments if len(segments) == 2 else segments[0]), label

    return dataset.map(pack, num_parallel_calls=tf.data.AUTOTUNE).cache()
