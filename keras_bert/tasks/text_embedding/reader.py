"""Text pairs for embedding fine-tuning: CSV, TSV or JSON Lines.

A row is an (anchor, positive) pair, with optional hard-negative columns,
or a scored pair (two texts and a similarity score, STS-style); the columns
are `TextEmbeddingOptions`' (default "anchor" and "positive").

The table is read by `keras_bert.data.tables` (header, quotes, malformed
rows). The first row's columns are checked before any other: a file with
one column only, or without a column the options name, is an error naming
the file, the columns it has and the flags that name them. Then each row is
checked; a bad one is reported with its FILE:LINE, skipped and counted: an
empty or all-whitespace text ("empty text", a negative's too: every pair
keeps the same number of candidates), a missing key in a JSON Lines row
("malformed row"), a score that is not a finite number ("bad score"). A
score outside [-1, 1] once divided by `score_scale` stops the reading with
its FILE:LINE (every score of the file is likely on another scale).

Duplicates are kept: the ranking loss does not count a batch's copies of a
pair's anchor or positive text as its negatives, and the held-out metrics
rank each anchor against the distinct positive texts
(`retrieval_targets`).
"""

import dataclasses
import math

import numpy as np
import tensorflow as tf

from keras_bert.data import tables
from keras_bert.data.report import DataReport
from keras_bert.data.text_data import ParallelExamples, detect_format
from keras_bert.text import text_files

_FLAGS = "--anchor-column, --positive-column, --negative-columns and --score-column"


@dataclasses.dataclass
class PairExamples(ParallelExamples):
    """Parallel lists, one entry per kept row.

    Attributes:
        anchors: list of str.
        positives: list of str.
        negatives: list of lists of str (K hard negatives per pair), or None.
        scores: list of float in [-1, 1] (scored pairs), or None.
        where: list of str, "FILE:LINE" of each row, for messages.
        report: the `DataReport` of the reading.
    """

    anchors: list
    positives: list
    negatives: list
    scores: list
    where: list
    report: DataReport = None


def _check_columns(where, values, needed):
    """Raises ValueError unless the first row `values` holds every column in `needed`."""
    have = list(values)
    if len(have) == 1 and len(needed) > 1:
        raise ValueError(
            f"{where}: the data has one column ({have[0]!r}); text_embedding trains on pairs "
            f"of texts: an anchor and a positive column (default 'anchor', 'positive'; name "
            f"them with {_FLAGS}). Add each text's match as a second column.")
    missing = [column for column in needed if column not in values]
    if missing:
        raise ValueError(f"{where}: no column {missing[0]!r}; the data has {have}. Name the "
                         f"columns with {_FLAGS}.")


def _score(value, scale, where):
    """(float score / scale, None), or (None, why the cell is bad)."""
    if isinstance(value, bool) or value is None:
        return None, f"{value!r} is not a number"
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        return None, f"{value!r} is not a number"
    if not math.isfinite(number):
        return None, f"{value!r} is not a finite number"
    if abs(number / scale) > 1:
        raise ValueError(
            f"{where}: score {value!r} / score_scale {scale:g} = {number / scale:g} is outside "
            f"[-1, 1], the range of a cosine. Pass --score-scale with the scores' maximum "
            f"(e.g. 5 for STS-B's 0-5 scores).")
    return number / scale, None


def read_pair_file(path, anchor_column="anchor", positive_column="positive",
                   negative_columns=None, score_column=None, score_scale=1.0, file_format=None,
                   max_logged=20):
    """Reads text pairs (with hard negatives or scores) from a CSV, TSV or JSON Lines file.

    Args:
        path: str, the file.
        anchor_column, positive_column: str, the columns of the pair's texts.
        negative_columns: list of str or None, hard-negative columns.
        score_column: str or None, the column of scored pairs' scores.
        score_scale: float > 0, scores are divided by it.
        file_format: "csv", "tsv", "jsonl" or None (from the extension).
        max_logged: int, problems logged one by one (all are counted).

    Returns:
        `PairExamples`; `.report` tells what was skipped.

    Example:
    >>> pairs = read_pair_file("pairs.csv")
    >>> pairs.anchors[0], pairs.positives[0]
    ('how do I reset my password', 'Resetting a forgotten password')
    """
    text_files.check_exists(path, "data file")  # Before its format; read once below.
    file_format = detect_format(path, file_format)
    report = DataReport(path, max_logged=max_logged)
    text_columns = [anchor_column, positive_column, *(negative_columns or ())]
    needed = text_columns + ([] if score_column is None else [score_column])
    examples = PairExamples([], [], [] if negative_columns else None,
                            None if score_column is None else [], [], report)
    first = True
    # columns=[]: the first row's columns are checked here, for CSV and JSON Lines alike.
    for where, values in tables.table_rows(path, file_format, [], report, score_column, _FLAGS):
        if first:
            _check_columns(where if file_format == "jsonl" else f"{path}:1", values, needed)
            first = False
        texts = [tables.row_text(values, column, where, report) for column in text_columns]
        if None in texts:
            continue  # row_text reported the first bad cell; a row is skipped once.
        if score_column is not None:
            score, problem = _score(values.get(score_column), score_scale, where)
            if problem:
                report.skip(where, "bad score", f"column {score_column!r}: {problem}")
                continue
            examples.scores.append(score)
        examples.anchors.append(texts[0])
        examples.positives.append(texts[1])
        if negative_columns:
            examples.negatives.append(texts[2:])
        examples.where.append(where)
        report.kept()
    return examples


def retrieval_targets(positives):
    """(distinct texts in first-seen order, int64 [N] index of each positive among them).

    Held-out pairs that share a positive text rank against one copy of it:
    two equal candidates would tie, and a tie gives no credit.
    """
    index = {}
    targets = np.asarray([index.setdefault(text, len(index)) for text in positives], "int64")
    return list(index), targets


def text_keys(texts):
    """float32 [..., K]: 24-bit hashes of texts (exact integers in float32), what
    `MultipleNegativesRankingLoss` compares to find a batch's duplicate texts."""
    return tf.cast(tf.strings.to_hash_bucket_fast(texts, 1 << 24), tf.float32)


def pair_dataset(examples, preprocessor):
    """Examples -> a cached dataset of unbatched `(anchor inputs, target)`.

    target: {"positive": encoder inputs, "keys": float32 [2 + K] (the hashes
    of anchor, positive and the K negatives' texts), "negatives": a tuple
    of K encoder inputs (only with negatives)}, or for scored pairs
    {"positive": encoder inputs, "score": float32 []}. Encoder inputs are
    int32 [seq] each, seq the longest of the element's texts
    (`preprocessor.sequence_length` None; padding_mask marks each text's own).
    """
    negatives = examples.negatives
    columns = [examples.anchors, examples.positives]
    if negatives:
        columns += [[row[k] for row in negatives] for k in range(len(negatives[0]))]
    element = {"texts": tuple(tf.constant(column, tf.string) for column in columns)}
    if examples.scores is not None:
        element["score"] = tf.constant(examples.scores, tf.float32)

    def pack(element):
        texts = element["texts"]
        # One preprocessor call on the element's 2 + K texts (each call traced
        # in a dataset map costs seconds): int32 [2 + K, longest of them].
        packed = preprocessor(tf.stack(texts))
        rows = [{name: value[i] for name, value in packed.items()} for i in range(len(texts))]
        target = {"positive": rows[1]}
        if "score" in element:
            target["score"] = element["score"]
        else:
            target["keys"] = text_keys(tf.stack(texts))
            if len(texts) > 2:
                target["negatives"] = tuple(rows[2:])
        return rows[0], target

    return tf.data.Dataset.from_tensor_slices(element).map(
        pack, num_parallel_calls=tf.data.AUTOTUNE).cache()
