"""What the tasks' options dataclasses share: reader fields and their checks.

A field that several tasks declare (label_names, unknown_labels, ...) is one
flag of tools/finetune.py, so it is made here once: one help text, one
default, one check with one message. `FinetuneOptions`' fields are made with
`field` too (keras_bert/training/finetune_fields.py).
"""

import dataclasses

# The readers' own lists too (keras_bert.data.text_data.FORMATS,
# keras_bert.data.labels.UNKNOWN_LABELS).
FILE_FORMATS = ("csv", "tsv", "jsonl")
UNKNOWN_LABELS = ("error", "skip")


def field(default, help, **metadata):
    """A dataclass field that tools/finetune.py makes a flag of.

    Args:
        default: the field's default (and the flag's).
        help: str, the flag's help.
        **metadata: "flag" (its spelling, default --field-name),
            "choices", "metavar" and "group" (its --help section; task
            flags are grouped by task instead).
    """
    return dataclasses.field(default=default, metadata={"help": help, **metadata})


# One function a shared field: a dataclass field object belongs to one class.


def text_column_field():
    return field("text", "Column of the (first) text.")


def label_column_field():
    return field("label", "Column of the label.")


def file_format_field():
    return field(None, "File format (default: from the extension).", flag="--format",
                 choices=FILE_FORMATS)


def label_names_field():
    return field(None, "Comma-separated labels in id order (default: the model's, else sorted "
                 "from --train).")


def unknown_labels_field():
    return field("error", "A label outside --label-names: stop with its FILE:LINE (default) or "
                 "skip the row and count it.", choices=UNKNOWN_LABELS)


def window_stride_field():
    return field(None, "Long texts: the saved model reads them in overlapping windows of "
                 "--max-seq-length, this many tokens apart, in predict and exports (default: "
                 "truncated). Training reads the first window.")


def max_windows_field():
    return field(8, "With --window-stride: windows read per text (the rest is not read).")


def check_columns(options, names):
    """Raises ValueError unless each of `names` on `options` is a non-empty str."""
    for name in names:
        value = getattr(options, name)
        if not isinstance(value, str) or not value:
            raise ValueError(f"Expected {name} to be a column name. Received: {name}={value!r}")


def check_file_format(file_format):
    """Raises ValueError unless `file_format` is one of FILE_FORMATS or None."""
    if file_format not in (None, *FILE_FORMATS):
        raise ValueError(f"Expected file_format in {FILE_FORMATS} or None. Received: "
                         f"file_format={file_format!r}")


def check_unknown_labels(unknown_labels):
    """Raises ValueError unless `unknown_labels` is "error" or "skip"."""
    if unknown_labels not in UNKNOWN_LABELS:
        raise ValueError(f"Expected unknown_labels 'error' or 'skip'. Received: "
                         f"unknown_labels={unknown_labels!r}")


def check_label_names(label_names):
    """Raises ValueError unless `label_names` is None or a list (not a str) of str."""
    if label_names is not None and (
            isinstance(label_names, str) or not all(isinstance(n, str) for n in label_names)):
        raise ValueError(f"Expected label_names to be a list of str. Received: "
                         f"label_names={label_names!r}")
