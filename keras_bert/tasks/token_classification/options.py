"""Token classification options and task.json schema (see classification/options.py)."""

import dataclasses

from keras_bert.data.task_options import (
    check_label_names,
    check_unknown_labels,
    label_names_field,
    max_windows_field,
    unknown_labels_field,
    window_stride_field,
)


@dataclasses.dataclass
class TokenClassificationOptions:
    """Fine-tuning settings of token classification (NER).

    The window fields are saved in task.json as task_config "windows".
    """

    label_names: list = label_names_field()
    unknown_labels: str = unknown_labels_field()
    # Same flags as classification's (one --window-stride, one --max-windows).
    window_stride: int = window_stride_field()
    max_windows: int = max_windows_field()

    def __post_init__(self):
        check_unknown_labels(self.unknown_labels)
        check_label_names(self.label_names)


# task.json keys token classification writes (see keras_bert.models.registry).
TASK_JSON = {
    "num_classes": {"type": "integer", "minimum": 1},
    "dropout_rate": {"type": "number", "nullable": True},
    "label_names": {"type": "strings", "nullable": True},
    "windows": {"type": "object", "nullable": True},
}
