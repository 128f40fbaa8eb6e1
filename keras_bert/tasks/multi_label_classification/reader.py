"""Multi-label data: CSV, TSV or JSON Lines texts with a set of labels each.

A row's labels are given one of three ways (`MultiLabelOptions`):

- names in one column, separated by `label_separator` (default "|":
  "sports|politics"); an empty cell is a text with no label. In JSON Lines
  the value may be a list of names (["sports", "politics"], [] for none);
- 0/1 columns, one per label (`label_columns`): "1" (or JSON 1 / true)
  means the text has that label, "0" (0 / false) that it has not;
- JSON Lines: a list of 0/1, one per label in `label_names` order
  ([1, 0, 1]); without label_names the labels are "0".."K-1".

The table itself is read by `keras_bert.data.tables` (header, quotes,
malformed rows). A row is checked here; a bad one is reported with its
FILE:LINE, skipped and counted: an empty text ("empty text"), a label cell
that is neither ("bad label": a 0/1 column holding "yes", a 0/1 list of
the wrong length, an empty name between separators, a JSON number or
object). `encode_label_sets` turns the names into 0/1 rows against a fixed
list of label names: a label outside it is an error naming its FILE:LINE
by default, or the row is skipped and counted (`unknown_labels="skip"`).
"""

import dataclasses

import numpy as np

from keras_bert.data import labels as labels_lib
from keras_bert.data import tables
from keras_bert.data.report import DataReport
from keras_bert.data.text_data import ParallelExamples, detect_format
from keras_bert.text import text_files

_ONE = ("1", "1.0", "true")
_ZERO = ("0", "0.0", "false")
_FLAGS = "--text-column and --label-column (or --label-columns)"


@dataclasses.dataclass
class MultiLabelExamples(ParallelExamples):
    """Parallel lists, one entry per kept row.

    Attributes:
        texts: list of str.
        labels: list of lists of str, each text's label names ([]: none).
        where: list of str, "FILE:LINE" of each row, for messages.
        report: the `DataReport` of the reading.
    """

    texts: list
    labels: list
    where: list
    report: DataReport = None


def _flag(value):
    """0 or 1 for a 0/1 cell ("1", " 0 ", JSON 1 / true / 0.0), else None."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return int(value) if value in (0, 1) else None
    if isinstance(value, str):
        text = value.strip().lower()
        return 1 if text in _ONE else 0 if text in _ZERO else None
    return None


def _names_of_cell(value, separator, label_names):
    """(names, None) for a label cell, or (None, why it is bad)."""
    if isinstance(value, str):
        value = value.strip()
        if not value:
            return [], None
        names = [name.strip() for name in value.split(separator)]
        if not all(names):
            return None, f"{value!r} has an empty name between {separator!r} separators"
        if any("\n" in name or "\r" in name for name in names):
            return None, f"{value!r} spans lines"
        return list(dict.fromkeys(names)), None
    if isinstance(value, list):
        if all(isinstance(name, str) for name in value):
            names = [name.strip() for name in value]
            if not all(names):
                return None, f"{value!r} has an empty name"
            return list(dict.fromkeys(names)), None
        flags = [_flag(v) if not isinstance(v, str) else None for v in value]
        if None in flags:
            return None, f"{value!r} is neither a list of names nor of 0/1"
        if len(flags) != len(label_names):
            return None, (f"{len(flags)} values of 0/1, expected {len(label_names)} (one per "
                          f"label of {label_names})")
        return [name for name, flag in zip(label_names, flags) if flag], None
    return None, f"{value!r} is not label names (a {type(value).__name__})"


def _vector_length(rows, file_format, label_column, label_columns):
    """K of the first 0/1 list in a JSON Lines file's rows (for "0".."K-1"), or None."""
    if file_format != "jsonl" or label_columns:
        return None
    for _, values in rows:
        value = values.get(label_column)
        if isinstance(value, list) and value and not any(isinstance(v, str) for v in value):
            return len(value)
        if value is not None:
            return None
    return None


def read_multi_label_file(path, text_column="text", label_column="label", label_columns=None,
                          label_separator="|", file_format=None, label_names=None,
                          max_logged=20):
    """Reads texts and their label sets from a CSV, TSV or JSON Lines file.

    Args:
        path: str, the file.
        text_column: str, column (key) of the text.
        label_column: str, column of the label names (or of a 0/1 list).
        label_columns: list of str or None, 0/1 columns, one per label
            (given: `label_column` is not read).
        label_separator: str, separates names in one cell.
        file_format: "csv", "tsv", "jsonl" or None (from the extension).
        label_names: list of str or None, the labels of 0/1 lists in order
            (None: "0".."K-1", K the first list's length).
        max_logged: int, problems logged one by one (all are counted).

    Returns:
        `MultiLabelExamples`; `.report` tells what was skipped.

    Example:
    >>> examples = read_multi_label_file("train.csv", label_column="topics")
    >>> examples.texts[0], examples.labels[0]
    ('the match and the vote', ['sports', 'politics'])
    """
    text_files.check_exists(path, "data file")  # Before its format; read once below.
    file_format = detect_format(path, file_format)
    report = DataReport(path, max_logged=max_logged)
    columns = [text_column, *(label_columns or [label_column])]
    rows = list(tables.table_rows(path, file_format, columns, report,
                                  None if label_columns else label_column, _FLAGS))
    if label_names is None:
        length = _vector_length(rows, file_format, label_column, label_columns)
        label_names = None if length is None else [str(i) for i in range(length)]
    label_names = list(label_names or ())
    examples = MultiLabelExamples([], [], [], report)
    for where, values in rows:
        text = tables.row_text(values, text_column, where, report)
        if text is None:
            continue
        if label_columns:
            flags = [_flag(values.get(column)) for column in label_columns]
            if None in flags:
                column = label_columns[flags.index(None)]
                report.skip(where, "bad label",
                            f"column {column!r} holds {values.get(column)!r}, not 0 or 1")
                continue
            names = [column for column, flag in zip(label_columns, flags) if flag]
        else:
            if label_column not in values or values[label_column] is None:
                report.skip(where, "bad label", f"no value in {label_column!r}")
                continue
            names, problem = _names_of_cell(values[label_column], label_separator, label_names)
            if problem:
                report.skip(where, "bad label", problem)
                continue
        examples.texts.append(text)
        examples.labels.append(names)
        examples.where.append(where)
        report.kept()
    return examples


def encode_label_sets(examples, label_names, unknown_labels="error"):
    """Label-name lists -> float32 0/1 rows [num_kept, len(label_names)].

    `keras_bert.data.labels.encode_labels` on each row's names: a name
    outside `label_names` is an error naming the row's FILE:LINE, or with
    `unknown_labels="skip"` the row is reported, counted and left out.

    Returns:
        A tuple `(examples, matrix)`: the examples kept and their 0/1 rows.
    """
    kept, ids = labels_lib.encode_labels(examples, label_names, unknown_labels,
                                         row_noun="row")
    matrix = np.zeros([len(kept), len(label_names)], "float32")
    for row, row_ids in enumerate(ids):
        matrix[row, row_ids] = 1.0
    return kept, matrix
