"""Sentence and sentence-pair classification data: CSV, TSV, JSON Lines, TFDS.

Readers return `ClassificationExamples` (Python lists of texts and labels,
each row's "FILE:LINE") and fill a `DataReport`. Rows are checked one by
one; a bad row is reported with its file and line, skipped and counted:

- wrong number of columns (CSV/TSV), a line that is not a JSON object
  (JSON Lines), a missing column or key: "malformed row";
- an empty or all-whitespace text (or text_b): "empty text";
- an empty label, or (regression) one that is not a finite number: "bad label".

A regression label too large for a float32 squared error (|label| > 1.8e19)
is an error naming its row.

A header that names a column twice is an error (FILE:1), as is a file that
is not UTF-8 text (a directory, gzip, UTF-16, binary).

Bytes that are not valid UTF-8 are decoded as U+FFFD (errors="replace");
the row is kept and counted as "invalid UTF-8" in the report.

Labels are kept as strings (classification) or floats (regression) here;
numerically equal labels are one class (`label_key`: `1`, `1.0`, "1" -> "1");
`encode_labels` turns them into ids against a fixed list of label names.
A label of the evaluation data that is not among them is an error by
default (metrics over a silently shrunk eval set would mislead), or is
skipped and counted with `unknown_labels="skip"`.
"""

import dataclasses
import decimal

import numpy as np

from keras_bert.data import labels as labels_lib
from keras_bert.data import tables
from keras_bert.data.report import DataReport
# split_examples stays importable from here (tests/data/test_labels.py pins it).
from keras_bert.data.text_data import ParallelExamples, detect_format, split_examples  # noqa: F401
from keras_bert.text import text_files


@dataclasses.dataclass
class ClassificationExamples(ParallelExamples):
    """Parallel lists, one entry per kept row.

    Attributes:
        texts: list of str, the first (or only) segment.
        texts_b: list of str (second segment of pairs), or None.
        labels: list of str (classification) or float (regression).
        where: list of str, "FILE:LINE" of each row, for messages.
        report: the `DataReport` of the reading.
        label_names: list of str, the classes the source declares in id
            order (a TFDS ClassLabel's names), or None (a file declares none).
        regression: bool, the labels are numbers (a file read with
            `regression=True`, a TFDS dataset whose label is no ClassLabel).
    """

    whole_fields = ("report", "label_names", "regression")

    texts: list
    texts_b: list
    labels: list
    where: list
    report: DataReport = None
    label_names: list = None
    regression: bool = False


# Normalizes without rounding: labels that differ in the 30th digit stay apart.
_EXACT = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)


def label_key(label):
    """The class a label names: numerically equal labels give one key.

    JSON Lines `1`, `1.0` and `"1"`, or CSV "1" and "1.0", are one class,
    "1"; a non-integral number keeps its shortest form ("0.5"). Other labels
    are their stripped text; JSON booleans are "true" / "false" (the same
    class as the strings "true" / "false", not as 1 / 0).

    Example:
    >>> label_key(1.0), label_key(" 1 "), label_key("2.50"), label_key("pos")
    ('1', '1', '2.5', 'pos')
    """
    if isinstance(label, bool):
        return str(label).lower()
    if isinstance(label, (int, float)):
        # repr gives the float's shortest decimal form ("0.1", not 0.1000...0555).
        label = repr(label) if isinstance(label, float) else str(label)
    label = str(label).strip()
    if not labels_lib.NUMBER.fullmatch(label):
        return label
    number = decimal.Decimal(label)
    if abs(number.adjusted()) > 30:
        return str(number.normalize(_EXACT))  # "1E+40": never a string of 10**9 digits.
    if number == number.to_integral_value():
        return str(int(number))
    return format(number.normalize(_EXACT), "f")


# The largest |label| whose square (the MSE loss and metric, in float32) stays finite.
_LARGEST_REGRESSION_LABEL = float(np.sqrt(np.finfo(np.float32).max))


def _add_row(examples, values, where, text_column, text_b_column, label_column):
    """Appends the row to `examples`, or reports why it is bad."""
    report, regression = examples.report, examples.regression
    text = tables.row_text(values, text_column, where, report)
    if text is None:
        return
    text_b = None
    if text_b_column:
        text_b = tables.row_text(values, text_b_column, where, report)
        if text_b is None:
            return
    label = values.get(label_column)
    if label is None or (isinstance(label, str) and not label.strip()):
        report.skip(where, "bad label", f"no value in {label_column!r}")
        return
    if regression:
        if isinstance(label, bool):
            report.skip(where, "bad label", f"{label!r} is a boolean, not a number (regression)")
            return
        try:
            label = float(label)
        except (TypeError, ValueError):
            report.skip(where, "bad label", f"{label!r} is not a number (regression)")
            return
        if not np.isfinite(label):
            report.skip(where, "bad label", f"{label!r} is not finite")
            return
        if abs(label) > _LARGEST_REGRESSION_LABEL:
            raise ValueError(
                f"{where}: the regression label {label!r} is too large: the float32 squared "
                f"error (MSE) overflows beyond |label| {_LARGEST_REGRESSION_LABEL:.3g}. Rescale "
                f"the {label_column!r} column (divide it by its largest value) or fix this row.")
    else:
        if isinstance(label, (dict, list)):
            report.skip(where, "bad label", f"{label!r} is not a single value")
            return
        if isinstance(label, float) and not np.isfinite(label):
            report.skip(where, "bad label", f"{label!r} is not finite")
            return
        label = label_key(label)
        if "\n" in label or "\r" in label:
            report.skip(where, "bad label", f"{label!r} spans lines")
            return
    examples.texts.append(text)
    if text_b_column:
        examples.texts_b.append(text_b)
    examples.labels.append(label)
    examples.where.append(where)
    report.kept()


def read_classification_file(
    path,
    text_column="text",
    text_b_column=None,
    label_column="label",
    regression=False,
    file_format=None,
    max_logged=20,
):
    """Reads labeled texts from a CSV, TSV or JSON Lines file.

    CSV and TSV files start with a header line naming the columns; JSON
    Lines files hold one object per line with those keys.

    Args:
        path: str, the file.
        text_column: str, column (key) of the text.
        text_b_column: str or None, column of the second text of a pair.
        label_column: str, column of the label.
        regression: bool, labels are numbers (e.g. STS-B similarity).
        file_format: "csv", "tsv", "jsonl" or None (from the extension).
        max_logged: int, problems logged one by one (all are counted).

    Returns:
        `ClassificationExamples`; `.report` tells what was skipped.

    Example:
    >>> examples = read_classification_file("train.tsv", text_column="sentence")
    >>> examples.texts[0], examples.labels[0]
    ('hide new secretions from the parental units', '0')
    """
    text_files.check_exists(path, "data file")  # Before its format; read once below.
    file_format = detect_format(path, file_format)
    report = DataReport(path, max_logged=max_logged)
    columns = [c for c in (text_column, text_b_column, label_column) if c]
    examples = ClassificationExamples([], [] if text_b_column else None, [], [], report,
                                      regression=bool(regression))
    for where, values in tables.table_rows(
            path, file_format, columns, report, label_column,
            column_flags="--text-column, --text-b-column and --label-column"):
        if (file_format != "jsonl" and not regression
                and '"' in values[label_column]):
            # A stray quote (TSV has no quoting) would become a class of its own.
            report.skip(where, "bad label", f"{values[label_column]!r} has a stray quote")
            continue
        _add_row(examples, values, where, text_column, text_b_column, label_column)
    return examples


# Text columns of the TFDS datasets people fine-tune BERT on.
TFDS_COLUMNS = {
    "glue/cola": ("sentence", None),
    "glue/sst2": ("sentence", None),
    "glue/mrpc": ("sentence1", "sentence2"),
    "glue/qqp": ("question1", "question2"),
    "glue/stsb": ("sentence1", "sentence2"),
    "glue/mnli": ("premise", "hypothesis"),
    "glue/qnli": ("question", "sentence"),
    "glue/rte": ("sentence1", "sentence2"),
    "glue/wnli": ("sentence1", "sentence2"),
    "imdb_reviews": ("text", None),
    "yelp_polarity_reviews": ("text", None),
    "ag_news_subset": ("description", None),
}


def _tfds_base(name):
    # "glue/sst2:2.0.0" -> "glue/sst2"; "imdb_reviews/plain_text" -> "imdb_reviews".
    base = name.split(":")[0]
    return base if base in TFDS_COLUMNS else base.split("/")[0]


def tfds_eval_split(name, data_dir=None):
    """The split to evaluate on: "validation" if the dataset has one, else "test"."""
    import tensorflow_datasets as tfds

    splits = list(tfds.builder(name, data_dir=data_dir).info.splits)
    if not splits:  # Metadata not downloaded (or mocked): GLUE's dev sets are "validation".
        base = _tfds_base(name)
        return "validation_matched" if base == "glue/mnli" else (
            "validation" if base.startswith("glue/") else "test")
    for split in ("validation", "validation_matched", "test"):
        if split in splits:
            return split
    raise ValueError(f"TFDS dataset {name} has no validation or test split: {splits}. "
                     f"Name one: --eval tfds:{name}[SPLIT].")


def read_tfds_classification(
    name, split, text_column=None, text_b_column=None, label_column="label", data_dir=None,
    max_logged=20,
):
    """Reads a TFDS text classification dataset (glue/*, imdb_reviews, ...).

    Args:
        name: str, TFDS name, e.g. "glue/mrpc".
        split: str, e.g. "train", "validation".
        text_column, text_b_column: feature names; None takes them from
            `TFDS_COLUMNS` for the known datasets.
        label_column: str, the label feature (a ClassLabel, or a float for
            regression such as glue/stsb).
        data_dir: str or None, TFDS data directory.

    Returns:
        A tuple `(examples, label_names)`: `ClassificationExamples` with the
        ClassLabel's names as labels (floats for regression), and those names
        in id order (None: regression), also `examples.label_names`. Rows with
        label -1 (GLUE test splits are unlabeled) are skipped and counted.
    """
    import tensorflow_datasets as tfds

    if text_column is None:
        base = _tfds_base(name)
        if base not in TFDS_COLUMNS:
            raise ValueError(
                f"No known text columns for TFDS dataset {name!r}: pass --text-column "
                f"(and --text-b-column for pairs). Known: {sorted(TFDS_COLUMNS)}."
            )
        text_column, default_b = TFDS_COLUMNS[base]
        text_b_column = text_b_column or default_b
    builder = tfds.builder(name, data_dir=data_dir)
    features = builder.info.features
    for column in (text_column, text_b_column, label_column):
        if column and column not in features:
            raise ValueError(f"TFDS dataset {name} has no feature {column!r}: {list(features)}.")
    label_feature = features[label_column]
    label_names = list(label_feature.names) if hasattr(label_feature, "names") else None
    source = f"tfds:{name}[{split}]"
    report = DataReport(source, max_logged=max_logged)
    examples = ClassificationExamples([], [] if text_b_column else None, [], [], report,
                                      label_names=label_names, regression=label_names is None)
    try:
        dataset = builder.as_dataset(split=split, shuffle_files=False)
    except AssertionError as e:  # TFDS' "could not find data in DIR".
        where = data_dir or "the default TFDS directory (~/tensorflow_datasets or $TFDS_DATA_DIR)"
        raise FileNotFoundError(
            f"TFDS dataset {name} is not prepared in {where} ({e}). TFDS downloads need a "
            f"network: on a connected machine run\n"
            f"    tfds build {name} --data_dir DIR\n"
            f"copy DIR to this machine and pass --tfds-data-dir DIR (Python: "
            f"tfds_data_dir=DIR)."
        ) from None
    decode = lambda b: b.decode("utf-8", errors="replace")  # noqa: E731
    for index, row in enumerate(tfds.as_numpy(dataset)):
        where = f"{source}:{index}"
        label = row[label_column]
        if label_names is not None:
            if int(label) < 0:
                report.skip(where, "unlabeled", f"label {int(label)}")
                continue
            label = label_names[int(label)]
        values = {text_column: decode(row[text_column]), label_column: label}
        if text_b_column:
            values[text_b_column] = decode(row[text_b_column])
        _add_row(examples, values, where, text_column, text_b_column, label_column)
    return examples, label_names


def encode_labels(examples, label_names, unknown_labels="error"):
    """`keras_bert.data.labels.encode_labels`, labels matched by class (`label_key`).

    Returns:
        A tuple `(examples, ids)`: the examples kept and their int32 ids.
    """
    return labels_lib.encode_labels(examples, label_names, unknown_labels, key=label_key)
