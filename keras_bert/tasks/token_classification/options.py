"""Token classification's options and task.json schema (standard library only).

tools/finetune.py reads this file before TensorFlow loads (tools/_cli.py
`task_options`), so it imports nothing else; see
keras_bert/tasks/classification/options.py for the field metadata.
"""

import dataclasses

UNKNOWN_LABELS = ("error", "skip")


@dataclasses.dataclass
class TokenClassificationOptions:
    """Fine-tuning settings of token classification (NER).

    Args:
        label_names: list of str or None (None: the model directory's tags
            for the same task, else sorted from the training data).
        unknown_labels: "error" or "skip", for tags outside label_names.
        window_stride: int or None: the model reads long texts in windows
            this many tokens apart in `predict` and exports (saved in
            task.json as task_config "windows"); None: truncated.
        max_windows: int, windows read per text (with window_stride).
    """

    label_names: list = dataclasses.field(default=None, metadata={
        "help": "Comma-separated labels in id order (default: the model's, else sorted from "
        "--train)."})
    unknown_labels: str = dataclasses.field(default="error", metadata={
        "help": "A label outside --label-names: stop with its FILE:LINE (default) or skip the "
        "row and count it.", "choices": UNKNOWN_LABELS})
    # Same flags as classification's (one --window-stride, one --max-windows).
    window_stride: int = dataclasses.field(default=None, metadata={
        "help": "Long texts: the saved model reads them in overlapping windows of "
        "--max-seq-length, this many tokens apart, in predict and exports (default: "
        "truncated). Training reads the first window."})
    max_windows: int = dataclasses.field(default=8, metadata={
        "help": "With --window-stride: windows read per text (the rest is not read)."})

    def __post_init__(self):
        if self.unknown_labels not in UNKNOWN_LABELS:
            raise ValueError(f"Expected unknown_labels 'error' or 'skip'. Received: "
                             f"unknown_labels={self.unknown_labels!r}")
        if self.label_names is not None and (
                isinstance(self.label_names, str)
                or not all(isinstance(n, str) for n in self.label_names)):
            raise ValueError(f"Expected label_names to be a list of str. Received: "
                             f"label_names={self.label_names!r}")


# task.json keys token classification writes (see keras_bert.models.registry).
TASK_JSON = {
    "num_classes": {"type": "integer", "minimum": 1},
    "dropout_rate": {"type": "number", "nullable": True},
    "label_names": {"type": "strings", "nullable": True},
    "windows": {"type": "object", "nullable": True},
}
