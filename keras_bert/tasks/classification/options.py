"""Classification's options and task.json schema (standard library only).

tools/finetune.py reads this file before TensorFlow loads (tools/_cli.py
`task_options`), so it imports nothing else: each field becomes a flag
(`text_b_column` -> --text-b-column, or metadata "flag"), with
metadata "help" as its help and "choices" as its choices.
"""

import dataclasses

FILE_FORMATS = ("csv", "tsv", "jsonl")
UNKNOWN_LABELS = ("error", "skip")
WINDOW_COMBINE = ("mean", "max")  # keras_bert.text.windows.COMBINE


def _field(default, help, **metadata):
    return dataclasses.field(default=default, metadata={"help": help, **metadata})


@dataclasses.dataclass
class ClassificationOptions:
    """Reader and fine-tuning settings of sentence (pair) classification.

    Args:
        text_column: str, the column of the (first) text.
        text_b_column: str or None, the column of the second text of pairs.
        label_column: str, the column of the label.
        file_format: "csv", "tsv", "jsonl" or None (from the extension).
        regression: bool, numeric labels: one float output and MSE (STS-B).
        tfds_data_dir: str or None, TFDS data directory for tfds:NAME data.
        label_names: list of str or None (None: the model directory's labels
            for the same task, else sorted from the training data).
        unknown_labels: "error" or "skip", for labels outside label_names.
        window_stride: int or None: the model reads long texts in windows
            this many tokens apart in `predict` and exports (saved in
            task.json as task_config "windows"); None: truncated.
        max_windows: int, windows read per text (with window_stride).
        window_combine: "mean" or "max" of the window logits.
    """

    text_column: str = _field("text", "Column of the (first) text.")
    text_b_column: str = _field(None, "Second text of sentence pairs.")
    label_column: str = _field("label", "Column of the label.")
    file_format: str = _field(None, "File format (default: from the extension).",
                              flag="--format", choices=FILE_FORMATS)
    regression: bool = _field(False, "Numeric labels: one output, MSE (e.g. STS-B).")
    tfds_data_dir: str = _field(
        None, "TFDS data directory for tfds:NAME data (prepared on a connected machine with "
        "`tfds build NAME --data_dir DIR`).")
    label_names: list = _field(
        None, "Comma-separated labels in id order (default: the model's, else sorted from "
        "--train).")
    unknown_labels: str = _field(
        "error", "A label outside --label-names: stop with its FILE:LINE (default) or skip the "
        "row and count it.", choices=UNKNOWN_LABELS)
    window_stride: int = _field(
        None, "Long texts: the saved model reads them in overlapping windows of "
        "--max-seq-length, this many tokens apart, in predict and exports (default: "
        "truncated). Training reads the first window.")
    max_windows: int = _field(8, "With --window-stride: windows read per text (the rest is "
                              "not read).")
    window_combine: str = _field("mean", "With --window-stride: combine the window logits "
                                 "by their mean or max.", choices=WINDOW_COMBINE)

    def __post_init__(self):
        for name in ("text_column", "label_column"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"Expected {name} to be a column name. Received: {name}={value!r}")
        if self.file_format not in (None, *FILE_FORMATS):
            raise ValueError(f"Expected file_format in {FILE_FORMATS} or None. Received: "
                             f"file_format={self.file_format!r}")
        if self.unknown_labels not in UNKNOWN_LABELS:
            raise ValueError(f"Expected unknown_labels 'error' or 'skip'. Received: "
                             f"unknown_labels={self.unknown_labels!r}")
        if self.label_names is not None and (
                isinstance(self.label_names, str)
                or not all(isinstance(n, str) for n in self.label_names)):
            raise ValueError(f"Expected label_names to be a list of str. Received: "
                             f"label_names={self.label_names!r}")


# task.json keys classification writes (see keras_bert.models.registry).
TASK_JSON = {
    "pairs": {"type": "boolean"},
    "regression": {"type": "boolean"},
    "num_classes": {"type": "integer", "minimum": 1},
    "dropout_rate": {"type": "number", "nullable": True},
    "label_names": {"type": "strings", "nullable": True},
    "windows": {"type": "object", "nullable": True},
}

