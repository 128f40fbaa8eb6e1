"""Entity grouping: a tagger's per-piece labels -> entities (label, text, start, end, score).

The strategies are those of transformers' token-classification pipeline
(`aggregation_strategy`), computed in the graph with core TensorFlow ops so
that the export's `entities` signature and `BertTokenClassifier.predict(...,
aggregation_strategy=...)` share this one implementation:

- "none": every piece whose label is not "O" is an entity of its own, its
  label without the B-/I- prefix (transformers keeps "B-PER" here).
- "simple": a piece joins the previous group when it has the same entity
  type and does not start with "B-".
- "first": word level (a piece and the "##" pieces after it): a word takes
  the label and score of its first piece, where the tagger learns its tag;
  words are then grouped as in "simple". The export's default.
- "max": word level; a word takes the label and score of its piece with
  the highest score (the first such piece on ties).

A name without a B-/I- prefix counts as "I-" of itself; groups of type "O"
are dropped. An entity's score is the mean of its units' label
probabilities; `start`/`end` are code point offsets in the ORIGINAL text and
`text` is `text[start:end]`, whatever the tokenizer's normalization did.
"""

import tensorflow as tf

STRATEGIES = ("none", "simple", "first", "max")
OUTSIDE = "O"


def check_strategy(strategy):
    if strategy not in STRATEGIES:
        raise ValueError(
            f"Expected aggregation_strategy in {STRATEGIES}. Received: "
            f"aggregation_strategy={strategy!r}")
    return strategy


def split_label(name):
    """("B" or "I", entity type) of a tag name: "B-PER" -> ("B", "PER"); "O" -> ("I", "O")."""
    if name.startswith("B-"):
        return "B", name[2:]
    if name.startswith("I-"):
        return "I", name[2:]
    return "I", name


def label_tables(label_names):
    """For label ids: is_begin (bool list), type id (int list), and the type names.

    Example:
    >>> label_tables(["O", "B-PER", "I-PER"])
    ([False, True, False], [0, 1, 1], ['O', 'PER'])
    """
    types, is_begin, type_ids = [], [], []
    for name in label_names:
        prefix, kind = split_label(str(name))
        if kind not in types:
            types.append(kind)
        is_begin.append(prefix == "B")
        type_ids.append(types.index(kind))
    return is_begin, type_ids, types


def group_entities(text, tags, label_names, strategy):
    """Entities of a batch from a tagger's per-piece outputs (traced in a tf.function).

    Args:
        text: string Tensor [B], the original texts.
        tags: dict of [B, T] Tensors, as the `tag` signature returns them:
            `label_id` int32, `probability` float32, `start`, `end` int32
            (character offsets in `text`), `word_start` int32 (1 on the
            first piece of a word) and `mask` int32 (1 on real pieces).
        label_names: list of str, the tagger's labels in id order.
        strategy: one of `STRATEGIES`.

    Returns:
        dict of dense Tensors [B, E] and `num_entities` [B]: the `entities`
        signature's outputs (`TokenClassifierServingModule` lists them).
    """
    check_strategy(strategy)
    is_begin, type_ids, types = label_tables(label_names)
    outside = types.index(OUTSIDE) if OUTSIDE in types else -1
    mask = tf.cast(tags["mask"], tf.bool)  # (B, T)
    batch = tf.shape(mask)[0]
    # The real pieces of the whole batch, row after row: (N,) each. (Gathers
    # at one set of indices: cheaper to trace than a boolean_mask per tensor.)
    where = tf.cast(tf.where(mask), tf.int32)  # (N, 2): row, position
    piece = {
        "label": tf.gather_nd(tags["label_id"], where),
        "score": tf.gather_nd(tf.cast(tags["probability"], tf.float32), where),
        "start": tf.gather_nd(tags["start"], where),
        "end": tf.gather_nd(tags["end"], where),
        "row": where[:, 0],
    }
    if strategy in ("first", "max"):
        # A row's first piece always opens a word, even if the tokenizer called it "##".
        opens = (tf.gather_nd(tags["word_start"], where) > 0) | (where[:, 1] == 0)
        units = _words(piece, opens, strategy)
    else:
        units = piece
    count = tf.shape(units["label"])[0]
    index = tf.range(count)
    unit_type = tf.gather(tf.constant(type_ids, tf.int32), units["label"])
    if strategy == "none":
        new_group = tf.ones([count], tf.bool)
    else:
        # roll: the previous unit (the first one is caught by index == 0).
        new_group = ((index == 0) | (units["row"] != tf.roll(units["row"], 1, 0))
                     | tf.gather(tf.constant(is_begin, tf.bool), units["label"])
                     | (unit_type != tf.roll(unit_type, 1, 0)))
    group = tf.cumsum(tf.cast(new_group, tf.int32)) - 1  # (U,) group of each unit
    num_groups = tf.reduce_sum(tf.cast(new_group, tf.int32))
    first = _true_indices(new_group)  # (G,) first unit of each group
    last = tf.math.unsorted_segment_max(index, group, num_groups)
    score = tf.math.unsorted_segment_mean(units["score"], group, num_groups)
    kind = tf.gather(unit_type, first)
    kept = _true_indices(kind != outside)  # (E_total,) groups that are entities
    first, last, kind, score = (tf.gather(x, kept) for x in (first, last, kind, score))
    row = tf.gather(units["row"], first)
    start = tf.gather(units["start"], first)
    end = tf.gather(units["end"], last)
    values = {
        "label": tf.gather(tf.constant(types, tf.string), kind),
        "text": tf.strings.substr(tf.gather(text, row), start, end - start, unit="UTF8_CHAR"),
        "start": start,
        "end": end,
        "score": score,
    }
    padding = {"label": "", "text": "", "start": -1, "end": -1, "score": 0.0}
    # One row partition for every output: entities of row b, in text order.
    rows = tf.RaggedTensor.from_value_rowids(tf.range(tf.shape(row)[0]), row, nrows=batch)
    result = {name: rows.with_values(value).to_tensor(padding[name])
              for name, value in values.items()}
    result["num_entities"] = tf.cast(rows.row_lengths(), tf.int32)
    return result


def _true_indices(flags):
    """int32 [n]: the positions of the True values of a bool vector."""
    return tf.cast(tf.where(flags)[:, 0], tf.int32)


def _words(piece, opens, strategy):
    """Word-level units from pieces: label and score of the first / best piece."""
    index = tf.range(tf.shape(opens)[0])
    word = tf.cumsum(tf.cast(opens, tf.int32)) - 1  # (N,) word of each piece
    num_words = tf.reduce_sum(tf.cast(opens, tf.int32))
    first = _true_indices(opens)  # (W,)
    last = tf.math.unsorted_segment_max(index, word, num_words)
    if strategy == "first":
        chosen = first
    else:
        best = tf.math.unsorted_segment_max(piece["score"], word, num_words)
        is_best = piece["score"] >= tf.gather(best, word)
        chosen = tf.math.unsorted_segment_min(
            tf.where(is_best, index, tf.shape(opens)[0]), word, num_words)
    return {
        "label": tf.gather(piece["label"], chosen),
        "score": tf.gather(piece["score"], chosen),
        "start": tf.gather(piece["start"], first),
        "end": tf.gather(piece["end"], last),
        "row": tf.gather(piece["row"], first),
    }


def to_entity_lists(outputs):
    """The dense `group_entities` outputs (numpy) -> one list of entity dicts per text.

    Each entity: {"label": str, "text": str, "start": int, "end": int,
    "score": float}, in text order.
    """
    result = []
    for i, count in enumerate(outputs["num_entities"]):
        result.append([
            {"label": outputs["label"][i, j].decode("utf-8"),
             "text": outputs["text"][i, j].decode("utf-8"),
             "start": int(outputs["start"][i, j]),
             "end": int(outputs["end"][i, j]),
             "score": float(outputs["score"][i, j])}
            for j in range(int(count))])
    return result
