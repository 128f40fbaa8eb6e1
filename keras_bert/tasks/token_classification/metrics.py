"""Token classification metrics: entity-level precision / recall / F1.

Exact span match; chunks are read from BIO / IOB2 (and IOBES) tags the way
seqeval's default mode (conlleval) reads them.
"""

import collections

import keras
from keras import ops

# The label of word pieces that carry none (not first pieces, [CLS], [SEP],
# padding): the reader writes it, the loss and `LabeledTokenAccuracy` skip it.
IGNORE_LABEL = -1


@keras.saving.register_keras_serializable(package="keras_bert")
class LabeledTokenAccuracy(keras.metrics.SparseCategoricalAccuracy):
    """Per-token accuracy over the pieces that carry a label.

    Pieces labeled `ignore_class` (-1: not first pieces, special tokens,
    padding) and pieces of `sample_weight` 0 count for nothing. Keras'
    `SparseCategoricalAccuracy` would count a -1 label as a wrong guess.

    Args:
        ignore_class: int, the label of pieces without one.
        **kwargs: `keras.metrics.SparseCategoricalAccuracy` arguments.
    """

    def __init__(self, name="accuracy", ignore_class=IGNORE_LABEL, **kwargs):
        super().__init__(name=name, **kwargs)
        self.ignore_class = ignore_class

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.convert_to_tensor(y_true)
        weight = ops.cast(ops.not_equal(y_true, self.ignore_class), "float32")
        if sample_weight is not None:
            weight = weight * ops.reshape(ops.cast(sample_weight, "float32"), ops.shape(weight))
        return super().update_state(
            ops.where(ops.equal(y_true, self.ignore_class), 0, y_true), y_pred,
            sample_weight=weight)

    def get_config(self):
        return {**super().get_config(), "ignore_class": self.ignore_class}


def _split_tag(tag):
    # "B-PER" -> ("B", "PER"); "O" -> ("O", ""); "I-ORG-X" -> ("I", "ORG-X").
    if tag in ("O", ""):
        return "O", ""
    prefix, _, kind = tag.partition("-")
    return prefix, kind


def _ends(prev_prefix, prefix, prev_kind, kind):
    if prev_prefix in ("E", "S"):
        return True
    if prev_prefix in ("B", "I") and prefix in ("B", "S", "O"):
        return True
    return prev_prefix != "O" and prev_kind != kind


def _starts(prev_prefix, prefix, prev_kind, kind):
    if prefix in ("B", "S"):
        return True
    if prev_prefix in ("E", "S", "O") and prefix in ("E", "I"):
        return True
    return prefix != "O" and prev_kind != kind


def get_entities(tags):
    """Chunks of one tag sequence as (type, first, last) tuples, `last` inclusive.

    Reads tags as conlleval and seqeval's default mode do: B- starts a
    chunk; I- continues one of the same type, and starts a new chunk after
    O or after a chunk of another type (IOB1-style input is still read);
    E- and S- (IOBES) end a chunk.

    Example:
    >>> get_entities(["B-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-ORG"])
    [('PER', 0, 1), ('LOC', 3, 3), ('LOC', 4, 4), ('ORG', 5, 5)]
    """
    entities = []
    prev_prefix, prev_kind, begin = "O", "", 0
    for i, tag in enumerate(list(tags) + ["O"]):
        prefix, kind = _split_tag(tag)
        if _ends(prev_prefix, prefix, prev_kind, kind):
            entities.append((prev_kind, begin, i - 1))
        if _starts(prev_prefix, prefix, prev_kind, kind):
            begin = i
        prev_prefix, prev_kind = prefix, kind
    return entities


def entity_metrics(true_tags, pred_tags):
    """Micro-averaged entity precision, recall and F1 with exact span match.

    An entity counts as correct only when the predicted chunk has the same
    type, first and last word as a true chunk (seqeval's default
    `precision_score`, `recall_score`, `f1_score`).

    Args:
        true_tags: list of sentences, each a list of tag strings.
        pred_tags: the same shape.

    Returns:
        Dict of precision, recall, f1, and per type `f1/TYPE` and
        `recall/TYPE`; also the
        counts num_true, num_pred, num_correct.

    Example:
    >>> y_true = [["O", "O", "O", "B-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]
    >>> y_pred = [["O", "O", "B-MISC", "I-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]
    >>> entity_metrics(y_true, y_pred)["f1"]
    0.5
    """
    if len(true_tags) != len(pred_tags):
        raise ValueError(f"{len(true_tags)} true sentences but {len(pred_tags)} predicted ones.")
    true_set, pred_set = set(), set()
    for i, (true, pred) in enumerate(zip(true_tags, pred_tags)):
        if len(true) != len(pred):
            raise ValueError(
                f"Sentence {i} has {len(true)} true tags but {len(pred)} predicted tags."
            )
        true_set.update((i,) + e for e in get_entities(true))
        pred_set.update((i,) + e for e in get_entities(pred))
    correct = true_set & pred_set

    def prf(num_correct, num_pred, num_true):
        precision = num_correct / num_pred if num_pred else 0.0
        recall = num_correct / num_true if num_true else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return precision, recall, f1

    precision, recall, f1 = prf(len(correct), len(pred_set), len(true_set))
    result = {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "num_true": len(true_set),
        "num_pred": len(pred_set),
        "num_correct": len(correct),
    }
    count = lambda entities: collections.Counter(e[1] for e in entities)  # noqa: E731
    per_true, per_pred, per_correct = count(true_set), count(pred_set), count(correct)
    for kind in sorted(set(per_true) | set(per_pred)):
        scores = prf(per_correct[kind], per_pred[kind], per_true[kind])
        result[f"f1/{kind}"] = scores[2]
        result[f"recall/{kind}"] = scores[1]
    return result
