"""Label names: the one precedence that picks them and the one encoding to ids."""

import decimal
import re

import numpy as np

from keras_bert.data.task_options import check_unknown_labels


def encode_labels(examples, label_names, unknown_labels="error", labels=None, key=None,
                  noun="label", row_noun="sentence"):
    """Label strings -> int32 ids in `label_names` order.

    A row holds one label or a sequence of labels (a sentence's tags); a row
    with any unknown label is one unknown row.

    Args:
        examples: a task reader's examples: `where` ("FILE:LINE" per row),
            `report` (a `DataReport`) and `subset(indices)`.
        label_names: list of str, the model's labels in id order.
        unknown_labels: "error" raises ValueError at the first row with a
            label not in `label_names`, naming its file and line; "skip"
            reports each such row in `examples.report` and leaves it out.
        labels: list, one label or label sequence per row; default
            `examples.labels`.
        key: callable label -> the class it names, applied to both the
            labels and `label_names` (e.g. `"1.0"` and `"1"` are one class).
        noun, row_noun: str, what a label and a row of several labels are
            called in messages ("tag", "sentence").

    Returns:
        A tuple `(examples, ids)`: the examples kept and their ids: an int32
        array [num_kept] for one label per row, a list of int32 arrays (one
        per row) for sequences.
    """
    check_unknown_labels(unknown_labels)
    key = key or (lambda label: label)
    labels = examples.labels if labels is None else labels
    index = {}
    for i, name in enumerate(label_names):
        index.setdefault(key(name), i)  # Matched by class: a declared "1.0" takes the label "1".
    keep, ids = [], []
    sequences = False
    for i, (row, where) in enumerate(zip(labels, examples.where)):
        is_sequence = isinstance(row, (list, tuple, np.ndarray))
        sequences = sequences or is_sequence
        keys = [key(label) for label in row] if is_sequence else [key(row)]
        unknown = [label for label, k in zip(row if is_sequence else [row], keys) if k not in index]
        if not unknown:
            keep.append(i)
            row_ids = [index[k] for k in keys]
            ids.append(np.asarray(row_ids, dtype="int32") if is_sequence else row_ids[0])
            continue
        in_row = f" in this {row_noun}" if is_sequence else ""
        if unknown_labels == "error":
            raise ValueError(
                f"{where}: unknown {noun} {unknown[0]!r}{in_row}; the model's {noun}s are "
                f"{list(label_names)}. Fix the file, declare every {noun} with --label-names, "
                f"or leave such rows out with --unknown-labels skip."
            )
        examples.report.skip(
            where, "unknown label", f"{noun} {unknown[0]!r} not in {list(label_names)}")
        examples.report.num_kept -= 1
    if not sequences:
        ids = np.asarray(ids, dtype="int32")
    return examples.subset(keep), ids


#: A number as people write labels: "1", "-2", "1.0", ".5", "1e3" (not "nan", "inf").
NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _numeric_order(names):
    """Sort key: numerically when every name is a number ("2" before "10"), else as text
    (ties of equal numbers, "1" and "1.0", by their text: the order never depends on a set's)."""
    if names and all(NUMBER.fullmatch(name) for name in names):
        return lambda name: (decimal.Decimal(name), name)
    return None


def infer_label_names(labels, key=None, sort_key=None, first=()):
    """The label names of training data, in the order their ids take.

    Args:
        labels: list, one label per row or a sequence of labels per row
            (a sentence's tags, a text's label set).
        key: callable label -> the class it names (`encode_labels`' key,
            e.g. "1.0" and "1" are one class); default: the label itself.
        sort_key: callable name -> sort key; default: numerically when every
            name is a number, else as text.
        first: names that come first, in this order, whether the data has
            them or not (a tagger's "O").

    Returns:
        list of str.

    Example:
    >>> infer_label_names(["10", "2", "2"]), infer_label_names([["b", "a"], []])
    (['2', '10'], ['a', 'b'])
    """
    key = key or (lambda label: label)
    names = set()
    for row in labels:
        names.update(map(key, row) if isinstance(row, (list, tuple, np.ndarray)) else [key(row)])
    names.difference_update(first)
    return list(first) + sorted(names, key=sort_key or _numeric_order(names))


def resolve_label_names(given, saved, labels, *, declared=None, source="the training data",
                        minimum=1, why="", **inference):
    """A task's label names: the task option > declared by the data > saved > inferred.

    Args:
        given: list of str or None, the task option (--label-names; an
            empty list counts as None).
        saved: list of str or None, those of the model directory fine-tuned from.
        labels: the training labels, for `infer_label_names` (**inference).
        declared: list of str or None, declared by the data source (a TFDS
            ClassLabel).
        source, why: str, where the training labels come from and what to do
            instead, for the error raised when there are fewer than `minimum`.
    """
    for names, origin in ((given, "--label-names (label_names=)"),
                          (declared, f"the data source ({source})"),
                          (saved, "the model directory's task.json")):
        if names:
            break
    else:
        names, origin = infer_label_names(labels, **inference), f"the training data ({source})"
    names = [str(name) for name in names]
    if len(names) < minimum:
        raise ValueError(
            f"Expected at least {minimum} label names. Received: {names} from {origin}. Give "
            f"the training data more labels, or declare them with --label-names.{why}")
    return names
