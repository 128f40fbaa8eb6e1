"""Classification's options and task.json schema.

tools/finetune.py makes a flag of each field (tools/_cli.py `task_options`)
(`text_b_column` -> --text-b-column, or metadata "flag"), with metadata "help"
as its help and "choices" as its choices: the help documents the field.
"""

import dataclasses

from keras_bert.data.task_options import (
    check_columns,
    check_file_format,
    check_label_names,
    check_unknown_labels,
    field,
    file_format_field,
    label_column_field,
    label_names_field,
    max_windows_field,
    text_column_field,
    unknown_labels_field,
    window_stride_field,
)

WINDOW_COMBINE = ("mean", "max")  # keras_bert.text.windows.COMBINE


@dataclasses.dataclass
class ClassificationOptions:
    """Reader and fine-tuning settings of sentence (pair) classification.

    The window fields are saved in task.json as task_config "windows".
    """

    text_column: str = text_column_field()
    text_b_column: str = field(None, "Second text of sentence pairs.")
    label_column: str = label_column_field()
    file_format: str = file_format_field()
    regression: bool = field(False, "Numeric labels: one output, MSE (e.g. STS-B).")
    tfds_data_dir: str = field(
        None, "TFDS data directory for tfds:NAME data (prepared on a connected machine with "
        "`tfds build NAME --data_dir DIR`).")
    label_names: list = label_names_field()
    unknown_labels: str = unknown_labels_field()
    window_stride: int = window_stride_field()
    max_windows: int = max_windows_field()
    window_combine: str = field("mean", "With --window-stride: combine the window logits "
                                "by their mean or max.", choices=WINDOW_COMBINE)

    def __post_init__(self):
        check_columns(self, ("text_column", "label_column"))
        check_file_format(self.file_format)
        check_unknown_labels(self.unknown_labels)
        check_label_names(self.label_names)


# task.json keys classification writes (see keras_bert.models.registry).
TASK_JSON = {
    "pairs": {"type": "boolean"},
    "regression": {"type": "boolean"},
    "num_classes": {"type": "integer", "minimum": 1},
    "dropout_rate": {"type": "number", "nullable": True},
    "label_names": {"type": "strings", "nullable": True},
    "windows": {"type": "object", "nullable": True},
}

