"""Text embedding options and task.json schema (see classification/options.py)."""

import dataclasses

from keras_bert.data.task_options import check_columns, check_file_format, field, file_format_field


@dataclasses.dataclass
class TextEmbeddingOptions:
    """Reader settings of contrastive (pairs) and scored-pair fine-tuning."""

    anchor_column: str = field("anchor", "Column of the anchor (query) text of each pair.")
    positive_column: str = field("positive", "Column of the anchor's positive (matching) text.")
    negative_columns: list = field(
        None, "Comma-separated hard-negative columns (texts that must rank below the "
        "positive).")
    score_column: str = field(
        None, "Scored pairs: the column of each pair's similarity (cosine regression, "
        "Spearman eval). Default: unscored pairs (in-batch negatives, recall@k / MRR eval).")
    score_scale: float = field(
        1.0, "With --score-column: scores are divided by this to lie in [-1, 1] (STS-B 0-5: "
        "5).")
    file_format: str = file_format_field()

    def __post_init__(self):
        check_columns(self, ("anchor_column", "positive_column"))
        if self.score_column is not None:
            check_columns(self, ("score_column",))
        if self.negative_columns is not None and (
                isinstance(self.negative_columns, str) or not self.negative_columns
                or not all(isinstance(c, str) and c for c in self.negative_columns)):
            raise ValueError(f"Expected negative_columns to be a non-empty list of column "
                             f"names or None. Received: negative_columns="
                             f"{self.negative_columns!r}")
        if self.negative_columns and self.score_column is not None:
            raise ValueError(
                f"negative_columns={self.negative_columns!r} and score_column="
                f"{self.score_column!r}: hard negatives are for the ranking loss, scores for "
                f"the cosine regression; give one of them.")
        columns = [self.anchor_column, self.positive_column, *(self.negative_columns or ()),
                   *(() if self.score_column is None else (self.score_column,))]
        repeated = [c for c in dict.fromkeys(columns) if columns.count(c) > 1]
        if repeated:
            raise ValueError(f"Column {repeated[0]!r} is given for two roles ({columns}); each "
                             f"of anchor, positive, negatives and score needs its own column.")
        if isinstance(self.score_scale, bool) or not isinstance(
                self.score_scale, (int, float)) or not self.score_scale > 0:
            raise ValueError(f"Expected score_scale to be a number > 0. Received: "
                             f"score_scale={self.score_scale!r}")
        check_file_format(self.file_format)


# task.json keys text_embedding writes (see keras_bert.models.registry).
TASK_JSON = {
    "pooling": {"type": "string"},
    "projection_dim": {"type": "integer", "minimum": 1, "nullable": True},
    "normalize": {"type": "boolean"},
    "scored": {"type": "boolean"},
}
