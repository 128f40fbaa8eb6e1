"""Span QA options and task.json schema (see classification/options.py)."""

import dataclasses
import math
import typing

from keras_bert.config import check_count
from keras_bert.data.task_options import field


@dataclasses.dataclass
class SpanQAOptions:
    """SQuAD fine-tuning settings (google-research/bert run_squad.py's defaults)."""

    # A SQuAD file's questions share contexts: --eval-fraction would split
    # questions of one context between train and eval.
    eval_fraction_allowed: typing.ClassVar[bool] = False

    doc_stride: int = field(128, "Tokens between the starts of a context's windows.")
    max_query_length: int = field(64, "Question tokens kept.")
    n_best_size: int = field(20, "Best starts and ends combined into answer candidates.")
    max_answer_length: int = field(30, "Longest answer, in tokens.")
    null_score_diff_threshold: float = field(
        0.0, "SQuAD v2.0: answer \"\" when the null score beats the best span by more than "
        "this.")

    def __post_init__(self):
        for name in ("doc_stride", "max_query_length", "n_best_size", "max_answer_length"):
            check_count(name, getattr(self, name))
        value = self.null_score_diff_threshold
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            raise ValueError(f"Expected null_score_diff_threshold to be a finite number. Received: "
                             f"null_score_diff_threshold={value!r}")


# task.json keys span QA writes (see keras_bert.models.registry).
TASK_JSON = {
    "version_2_with_negative": {"type": "boolean"},
    "doc_stride": {"type": "integer", "minimum": 1},
    "max_query_length": {"type": "integer", "minimum": 1},
    "n_best_size": {"type": "integer", "minimum": 1},
    "max_answer_length": {"type": "integer", "minimum": 1},
    "max_windows": {"type": "integer", "minimum": 1},
    "null_score_diff_threshold": {"type": "number"},
    "dropout_rate": {"type": "number", "nullable": True},
}
