"""How a task model reads the inputs users hold (every `BertTask` entry point):

- Texts: a list or tuple of str/bytes, a 1-D numpy str/object array, a 1-D
  tf.string Tensor (or anything with `.to_numpy()`, e.g. a pandas Series).
  A single string is refused (Keras would read it as a batch of characters).
- Pairs as COLUMNS: a tuple of two text batches, `(texts_a, texts_b)`.
  Pairs as ROWS: a list of `(a, b)` tuples, or a string array of shape [N, 2].
  An outer list or tuple of two items that are each two strings fits both
  readings; only the documented containers (a tuple of two lists or arrays =
  columns, a list of tuples = rows) decide it, anything else is refused.
- Datasets follow Keras' rule: an element `(x, y[, sample_weight])` is
  inputs and labels; `x` is texts or a tuple `(texts_a, texts_b)`. Unlabelled
  elements are bare `texts`, `(texts,)` or `((texts_a, texts_b),)`.
- Labels: numpy arrays, lists or tuples of ids (floats for regression), or
  label names mapped through the model's `label_names`.
"""

import numpy as np
import tensorflow as tf

PAIRS_RULE = (
    "pass pairs as columns, a tuple of two lists: (['a1', 'a2'], ['b1', 'b2']), or as rows, "
    "a list of tuples: [('a1', 'b1'), ('a2', 'b2')] (or a numpy array of shape [N, 2])"
)
DATASET_RULE = (
    "a dataset element (x, y) is texts and labels (Keras' rule); yield pairs as "
    "((texts_a, texts_b), labels) or, unlabelled, ((texts_a, texts_b),)"
)

_STRING_TYPES = (str, bytes)


def _is_string(value):
    return isinstance(value, _STRING_TYPES)


def _to_array_like(value):
    """pandas objects and the like become numpy arrays; the rest is unchanged."""
    if not isinstance(value, (np.ndarray, list, tuple, tf.Tensor, tf.RaggedTensor)) and hasattr(
            value, "to_numpy"):
        return value.to_numpy()
    return value


def is_text(value):
    """True for a 1-D batch of strings: a non-empty list/tuple of str/bytes, a
    1-D numpy str or object array of them, or a 1-D tf.string Tensor."""
    value = _to_array_like(value)
    if isinstance(value, (tf.Tensor, tf.RaggedTensor)):
        return value.dtype == tf.string and value.shape.rank == 1
    if isinstance(value, np.ndarray):
        if value.ndim != 1:
            return False
        if value.dtype.kind in "US":
            return True
        return value.dtype == object and value.size > 0 and all(
            _is_string(v) for v in value)
    if isinstance(value, (list, tuple)):
        return len(value) > 0 and all(_is_string(v) for v in value)
    return False


def _is_column(value):
    """A text batch that may be empty (one side of the columns reading)."""
    value = _to_array_like(value)
    if isinstance(value, (list, tuple, np.ndarray)) and len(value) == 0:
        return True
    return is_text(value)


def _is_row(value):
    return (isinstance(value, (list, tuple, np.ndarray)) and len(value) == 2
            and all(_is_string(v) for v in value))


def holds_strings(value):
    """True when `value` has strings at its top or second level (cheap: a type check)."""
    value = _to_array_like(value)
    if _is_string(value):
        return True
    if isinstance(value, (tf.Tensor, tf.RaggedTensor)):
        return value.dtype == tf.string
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "US" or (
            value.dtype == object and value.size > 0 and _is_string(value.flat[0]))
    if isinstance(value, (list, tuple)):
        return any(
            _is_string(v)
            or (isinstance(v, (list, tuple)) and any(_is_string(u) for u in v))
            or (isinstance(v, (np.ndarray, tf.Tensor)) and holds_strings(v))
            for v in value)
    return False


def to_string_tensor(value):
    """A 1-D tf.string Tensor of `value` (a text batch, maybe empty)."""
    value = _to_array_like(value)
    if isinstance(value, (tf.Tensor, tf.RaggedTensor)):
        return value
    if isinstance(value, np.ndarray) and value.dtype.kind == "U":
        value = np.char.encode(value, "utf-8")
    elif not (isinstance(value, np.ndarray) and value.dtype.kind == "S"):
        value = np.array([v.encode("utf-8") if isinstance(v, str) else v for v in value],
                         dtype=object)
    if value.size == 0:
        return tf.zeros([0], tf.string)
    return tf.constant(value, tf.string)


def _ambiguous(what):
    return ValueError(
        f"{what}: an outer list/tuple of two items that each hold two strings could be two "
        f"pairs (rows) or two batches of two texts (columns), so it is not guessed: "
        f"{PAIRS_RULE}."
    )


def text_inputs(x, what="This model"):
    """The string batches in `x` (what the user passed): a tuple of one (texts) or
    two (pairs) 1-D tf.string Tensors, or None when `x` holds no strings, by the
    module docstring's rule. A ValueError naming `what` ("BertClassifier.predict")
    refuses a single string, a 2-D string array that is not [N, 2] rows, an input
    both pair readings fit, or strings mixed with other values.
    """
    x = _to_array_like(x)
    if _is_string(x) or (isinstance(x, np.ndarray) and x.ndim == 0 and holds_strings(x)):
        raise ValueError(
            f"{what} takes a batch of texts, not a single string: wrap it in a list, "
            f"e.g. [{str(x)[:40]!r}]."
        )
    if isinstance(x, (tf.Tensor, tf.RaggedTensor, np.ndarray)):
        if isinstance(x, np.ndarray) and x.ndim == 1 and x.size == 0:
            return (tf.zeros([0], tf.string),)
        if not holds_strings(x):
            return None
        rank = x.shape.rank if isinstance(x, (tf.Tensor, tf.RaggedTensor)) else x.ndim
        if rank == 0:
            raise ValueError(f"{what} takes a batch of texts, not a single string: wrap it "
                             f"in a list, e.g. [text].")
        if rank == 1:
            return (to_string_tensor(x),)
        if rank == 2 and x.shape[1] == 2 and not isinstance(x, tf.RaggedTensor):
            return (to_string_tensor(x[:, 0]), to_string_tensor(x[:, 1]))
        raise ValueError(
            f"{what} takes texts as a 1-D batch, or pairs as rows of shape [N, 2]. Received a "
            f"string array of shape {tuple(x.shape)}; flatten it yourself if it holds one "
            f"text per cell."
        )
    if not isinstance(x, (list, tuple)):
        return None
    if len(x) == 0:
        return (tf.zeros([0], tf.string),)
    if all(_is_string(v) for v in x):
        return (to_string_tensor(x),)
    columns = len(x) == 2 and all(_is_column(v) for v in x)
    rows = all(_is_row(v) for v in x)
    if columns and rows:
        # Exactly two items of two strings each: only the documented containers decide.
        if isinstance(x, tuple) and not any(isinstance(v, tuple) for v in x):
            rows = False
        elif isinstance(x, list) and all(isinstance(v, tuple) for v in x):
            columns = False
        else:
            raise _ambiguous(what)
    if columns:
        return tuple(to_string_tensor(v) for v in x)
    if rows:
        return (to_string_tensor([v[0] for v in x]), to_string_tensor([v[1] for v in x]))
    if holds_strings(x):
        raise ValueError(
            f"{what} takes texts as a list of str, or sentence pairs; {PAIRS_RULE}. Received "
            f"a {type(x).__name__} of {len(x)} items that is neither, e.g. item "
            f"{_first_odd(x)}."
        )
    return None


def _first_odd(x):
    """'i: value' for the first item of `x` that is not a string nor a pair row."""
    kinds = [_is_string(v) for v in x]
    want_strings = sum(kinds) * 2 >= len(kinds)
    for i, v in enumerate(x):
        if (want_strings and not _is_string(v)) or (not want_strings and not _is_row(v)):
            return f"{i}: {v!r}"[:120]
    return f"0: {x[0]!r}"[:120]


def count_rows(value):
    """Rows of an array-like (its first dimension)."""
    if isinstance(value, (tf.Tensor, tf.RaggedTensor)):
        return int(value.shape[0])
    return len(value)


def label_array(y, count, label_names=None, num_classes=None, what="This model", name="y"):
    """`y` (or, with `name="sample_weight"`, weights) as a numpy array of `count`
    rows: int32 ids (names mapped through `label_names`), float32 for regression
    (`num_classes` 1) and sample weights, else as given (one-hot floats). A dict
    (multi-output heads) stays a dict, its values checked for length only;
    `what` names the caller in errors.
    """
    if y is None:
        return None
    if isinstance(y, dict):
        return {key: label_array(value, count, None, None, what, f"{name}[{key!r}]")
                for key, value in y.items()}
    y = _to_array_like(y)
    if isinstance(y, (tf.Tensor, tf.RaggedTensor)):
        y = y.numpy()
    if _is_string(y) or np.ndim(y) == 0:
        raise ValueError(f"{what} needs {name} with one value per example ({count}). "
                         f"Received a single value: {y!r}.")
    try:
        array = np.asarray(y)
        ragged = array.dtype == object and array.ndim > 1 and array.size and isinstance(
            array.flat[0], (list, tuple))
    except ValueError:  # numpy refuses some rows of different lengths.
        ragged = True
    if ragged:
        raise ValueError(f"{what}: the rows of {name} have different lengths; pad them to one "
                         f"length (a numpy array), one row per example.")
    if len(array) != count:
        raise ValueError(
            f"{what}: expected {name} to have one row per text ({count}). Received: "
            f"{len(array)} rows."
        )
    if name == "sample_weight":
        return _numbers(array, what, name).astype("float32")
    is_names = array.dtype.kind in "US" or (
        array.dtype == object and array.size and any(_is_string(v) for v in array.flat))
    if is_names:
        array = _names_to_ids(array, label_names, num_classes, what, name)
    else:
        array = _numbers(array, what, name)
    if num_classes == 1:
        return array.astype("float32")
    if array.dtype.kind == "b":
        array = array.astype("int32")
    if array.dtype.kind in "iu" and num_classes and array.size and array.max() >= num_classes:
        raise ValueError(
            f"{what}: label id {int(array.max())} in {name} is out of range for "
            f"num_classes={num_classes} (ids are 0..{num_classes - 1})."
        )
    # Ids as int32 whatever their numpy type (names, lists, int64 arrays): one
    # dtype, so a second `fit` reuses the first one's traced step.
    if array.dtype.kind in "iu" and (not array.size or (
            array.min() >= -2**31 and array.max() < 2**31)):
        return array.astype("int32")
    return array


def _numbers(array, what, name):
    if array.dtype == object:
        try:
            return array.astype("float64" if any(
                isinstance(v, float) for v in array.flat) else "int64")
        except (TypeError, ValueError):
            odd = next(v for v in array.flat if not isinstance(v, (int, float, np.number)))
            raise ValueError(f"{what}: {name} must hold numbers or label names. Received "
                             f"{odd!r} ({type(odd).__name__}).") from None
    return array


def _names_to_ids(array, label_names, num_classes, what, name):
    if num_classes == 1:
        raise ValueError(f"{what} is a regression (num_classes=1) and takes numbers as "
                         f"{name}, not names like {_first_string(array)!r}.")
    if not label_names:
        raise ValueError(
            f"{what}: {name} holds label names (e.g. {_first_string(array)!r}) but the model "
            f"has no label_names to map them to ids; pass ids 0..K-1, or build the model "
            f"with label_names=[...]."
        )
    index = {str(n): i for i, n in enumerate(label_names)}
    flat = [_plain(v) for v in array.ravel()]
    for value in flat:
        if not isinstance(value, str) or value not in index:
            raise ValueError(
                f"{what}: unknown label {value!r} in {name}; the model's label_names are "
                f"{list(label_names)}."
            )
    return np.array([index[v] for v in flat], dtype="int32").reshape(array.shape)


def _plain(value):
    """A label as the user would write it: str for str/bytes/np.str_."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value) if isinstance(value, str) else value


def _first_string(array):
    return _plain(next(v for v in array.flat if _is_string(v)))


def label_ids_tensor(labels, label_names, what="This model"):
    """In-graph `label_names` lookup for a string label Tensor of any shape.

    An unknown name fails the pipeline with an error naming the unknown
    values and the known names.
    """
    names = tf.constant(list(label_names), tf.string)
    matches = tf.equal(tf.expand_dims(labels, -1), names)  # (..., K)
    found = tf.reduce_any(matches, axis=-1)
    check = tf.debugging.Assert(
        tf.reduce_all(found),
        [f"{what}: unknown label name(s) in the dataset:", tf.boolean_mask(labels, ~found),
         f"the model's label_names are {list(label_names)}"],
        summarize=5,
    )
    with tf.control_dependencies([check]):
        return tf.argmax(tf.cast(matches, tf.int32), axis=-1, output_type=tf.int32)


# === The integer input dict ===

def integer_limits(encoder):
    """{input name: (low, high exclusive, what it must be)} for the encoder's inputs;
    an encoder without segment embeddings (DistilBERT) ignores the packer's 0 and 1."""
    return {
        "token_ids": (0, encoder.vocab_size, f"in [0, vocab_size={encoder.vocab_size})"),
        "segment_ids": (0, encoder.type_vocab_size or 2, (
            f"in [0, type_vocab_size={encoder.type_vocab_size})" if encoder.type_vocab_size
            else "0 or 1 (the packer's; unused: the encoder has no segment embeddings)")),
        "padding_mask": (0, 2, "0 or 1 (1 = real token)"),
    }


#: Hugging Face's input names -> the encoder's.
_PEER_INPUT_NAMES = {"input_ids": "token_ids", "attention_mask": "padding_mask",
                     "token_type_ids": "segment_ids"}


def check_integer_inputs(x, encoder, what="This model"):
    """Refuses Hugging Face's input names, and out-of-range ids and masks (a
    negative token id gathers a zero embedding on GPUs), in an in-memory integer
    input dict; symbolic Tensors are left alone."""
    if not isinstance(x, dict):
        return
    peers = [name for name in _PEER_INPUT_NAMES if name in x]
    if peers:
        raise ValueError(
            f"{what} takes the input dict token_ids, segment_ids, padding_mask (1 = real "
            f"token), or raw strings. Received Hugging Face's names: rename "
            + ", ".join(f"{name} to {_PEER_INPUT_NAMES[name]}" for name in peers) + ".")
    for key, (low, high, rule) in integer_limits(encoder).items():
        value = x.get(key)
        if value is None or (isinstance(value, tf.Tensor) and not hasattr(value, "numpy")):
            continue
        try:
            array = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
        except (ValueError, TypeError):
            continue
        if array.dtype.kind not in "iub" or array.size == 0:
            continue
        bad = (array < low) | (array >= high)
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ValueError(
                f"{what}: {key} must be {rule}. Received {int(array[where])} at index "
                f"{list(where)}."
            )


def integer_checks_in_graph(features, encoder, what="This model"):
    """`features` (the integer input dict) with in-graph range asserts, for tf.data."""
    if not isinstance(features, dict):
        return features
    checks = []
    for key, (low, high, rule) in integer_limits(encoder).items():
        if key in features and features[key].dtype.is_integer:
            value = features[key]
            message = f"{what}: {key} must be {rule}"
            checks.append(tf.debugging.assert_greater_equal(
                value, tf.cast(low, value.dtype), message=message))
            checks.append(tf.debugging.assert_less(
                value, tf.cast(high, value.dtype), message=message))
    with tf.control_dependencies(checks):
        return {key: tf.identity(value) for key, value in features.items()}
