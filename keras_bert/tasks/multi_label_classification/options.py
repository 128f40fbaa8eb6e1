"""Multi-label options and task.json schema (see classification/options.py)."""

import dataclasses

from keras_bert.data.task_options import (
    check_columns,
    check_file_format,
    check_unknown_labels,
    field,
    file_format_field,
    label_column_field,
    label_names_field,
    text_column_field,
    unknown_labels_field,
)

#: The separator of label names in one cell: "|" needs no quoting in a CSV.
DEFAULT_SEPARATOR = "|"


@dataclasses.dataclass
class MultiLabelOptions:
    """Reader and fine-tuning settings of multi-label classification.

    A row's labels are names in `label_column`, 0/1 `label_columns` or a 0/1
    list (reader.py's module docstring tells the three ways).
    """

    text_column: str = text_column_field()
    label_column: str = label_column_field()
    label_columns: list = field(
        None, "Multi-label: comma-separated 0/1 columns, one per label (their names are the "
        "labels); replaces --label-column.")
    label_separator: str = field(
        DEFAULT_SEPARATOR, "Multi-label: separator of the label names in one --label-column "
        "cell (default '|', e.g. 'sports|politics'; an empty cell: no label).")
    file_format: str = file_format_field()
    label_names: list = label_names_field()
    unknown_labels: str = unknown_labels_field()
    threshold: float = field(
        None, "Multi-label: one decision threshold for every label (default: one per label, "
        "tuned for F1 on --eval and saved with the model).")

    def __post_init__(self):
        check_columns(self, ("text_column", "label_column"))
        # Stricter than classification's label_names: the names are also 0/1 columns.
        for name in ("label_columns", "label_names"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, str) or not value or not all(
                    isinstance(n, str) and n for n in value) or len(set(value)) != len(value)):
                raise ValueError(f"Expected {name} to be a list of distinct, non-empty str. "
                                 f"Received: {name}={value!r}")
        if self.label_columns is not None and self.label_names is not None and list(
                self.label_columns) != list(self.label_names):
            raise ValueError(
                f"label_columns name the labels; label_names={self.label_names!r} differs from "
                f"label_columns={self.label_columns!r}. Give one of them.")
        if not isinstance(self.label_separator, str) or not self.label_separator:
            raise ValueError(f"Expected label_separator to be a non-empty str. Received: "
                             f"label_separator={self.label_separator!r}")
        check_file_format(self.file_format)
        check_unknown_labels(self.unknown_labels)
        if self.threshold is not None and not 0 < self.threshold < 1:
            raise ValueError(f"Expected threshold in (0, 1) or None. Received: "
                             f"threshold={self.threshold!r}")


# task.json keys multi-label classification writes (see keras_bert.models.registry).
TASK_JSON = {
    "num_classes": {"type": "integer", "minimum": 1},
    "dropout_rate": {"type": "number", "nullable": True},
    "label_names": {"type": "strings", "nullable": True},
    "thresholds": {"type": "numbers", "nullable": True},
}
