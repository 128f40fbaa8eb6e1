"""Entity grouping (tasks/token_classification/entities.py) against a plain-Python reference.

The reference re-states transformers' token-classification pipeline
semantics (aggregation_strategy none / simple / first / max) as loops over
pieces; the graph implementation, the tagger's `predict(...,
aggregation_strategy=)` and the export's `entities` signature must agree
with it, and every entity's text must be the original string's slice.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.export import build_serving_module
from keras_bert.tasks.token_classification.entities import STRATEGIES, group_entities
from tests.export.conftest import TAG_TEXTS

pytestmark = pytest.mark.filterwarnings("ignore:Gradients do not exist")

# Accents (NFD-stripped by the uncased tokenizer), CJK and emoji ([UNK]
# words, one code point each), runs of spaces, empty text.
TEXTS = TAG_TEXTS[:4] + [
    "Ünïcödé café, the fox and the dog", "東京 the cat 猫 and 😀 dog", "cafés  naïve", "",
]


# === The reference ===

def _kind(name):
    """(begins, entity type): "B-X" -> (True, "X"), "I-X" -> (False, "X"), other -> (False, name)."""
    if name[:2] in ("B-", "I-"):
        return name[:2] == "B-", name[2:]
    return False, name


def reference_entities(text, pieces, strategy):
    """Entities of one text from its pieces, as transformers' pipeline groups them.

    Args:
        text: str, the original text.
        pieces: list of (label name, score, start, end, starts_word).
        strategy: "none", "simple", "first" or "max".

    Returns:
        list of (label, text, start, end, score).
    """
    if strategy in ("none", "simple"):
        units = [(label, score, start, end) for label, score, start, end, _ in pieces]
    else:
        words = []
        for piece in pieces:
            if not words or piece[4]:
                words.append([piece])
            else:
                words[-1].append(piece)
        units = []
        for word in words:
            if strategy == "first":
                chosen = word[0]
            else:  # max: the first piece with the highest score.
                chosen = word[0]
                for piece in word[1:]:
                    if piece[1] > chosen[1]:
                        chosen = piece
            units.append((chosen[0], chosen[1], word[0][2], word[-1][3]))
    groups = []
    for unit in units:
        begins, kind = _kind(unit[0])
        if strategy != "none" and groups and not begins and _kind(groups[-1][-1][0])[1] == kind:
            groups[-1].append(unit)
        else:
            groups.append([unit])
    result = []
    for group in groups:
        kind = _kind(group[0][0])[1]
        if kind == "O":
            continue
        start, end = group[0][2], group[-1][3]
        result.append((kind, text[start:end], start, end,
                       float(np.mean([unit[1] for unit in group]))))
    return result


def as_tuples(entity_lists):
    return [[(e["label"], e["text"], e["start"], e["end"], e["score"]) for e in entities]
            for entities in entity_lists]


def assert_same(actual, expected):
    assert len(actual) == len(expected)
    for row, (got, want) in enumerate(zip(actual, expected)):
        assert [g[:4] for g in got] == [w[:4] for w in want], row
        np.testing.assert_allclose([g[4] for g in got], [w[4] for w in want], rtol=1e-6,
                                   err_msg=f"row {row}")


def pieces_of(tags, row, label_names):
    """The reference's pieces from a `tag` dict (numpy [B, T] arrays) row."""
    return [(label_names[tags["label_id"][row, t]], float(tags["probability"][row, t]),
             int(tags["start"][row, t]), int(tags["end"][row, t]),
             bool(tags["word_start"][row, t]))
            for t in range(int(tags["mask"][row].sum()))]


def dense_entities(outputs):
    """Dense `group_entities` outputs -> per-row lists of tuples."""
    outputs = {k: np.asarray(v) for k, v in outputs.items()}
    return [[(outputs["label"][i, j].decode(), outputs["text"][i, j].decode(),
              int(outputs["start"][i, j]), int(outputs["end"][i, j]),
              float(outputs["score"][i, j])) for j in range(n)]
            for i, n in enumerate(outputs["num_entities"])]


# === Synthetic tag sequences ===

LABEL_SETS = {
    "BIO": ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"],
    "IOB without B-": ["O", "PER", "LOC"],
    "mixed": ["B-ORG", "O", "I-ORG", "MISC", "I-PER"],
}


def synthetic_batch(label_names, rows=40, seed=0):
    """Random pieces over made-up texts: (texts, tag dict of [B, T] arrays)."""
    rng = np.random.default_rng(seed)
    width = 9
    tags = {"label_id": np.full((rows, width), -1), "probability": np.zeros((rows, width)),
            "start": np.full((rows, width), -1), "end": np.full((rows, width), -1),
            "word_start": np.zeros((rows, width)), "mask": np.zeros((rows, width))}
    texts = []
    for row in range(rows):
        text, count = "", int(rng.integers(0, width + 1))
        for t in range(count):
            # A word start (after a space) or a "##" piece glued to the previous one;
            # pieces of 1-3 letters, some accented or CJK.
            starts_word = t == 0 or rng.random() < 0.6
            if starts_word and text:
                text += " "
            piece = "".join(rng.choice(list("abé東ß")) for _ in range(int(rng.integers(1, 4))))
            tags["start"][row, t], tags["end"][row, t] = len(text), len(text) + len(piece)
            text += piece
            tags["label_id"][row, t] = rng.integers(len(label_names))
            # Repeated values: ties for "max" (the first piece wins).
            tags["probability"][row, t] = rng.choice([0.4, 0.55, 0.7, 0.9])
            tags["word_start"][row, t] = starts_word
            tags["mask"][row, t] = 1
        texts.append(text)
    dtypes = {"probability": np.float32}
    return texts, {k: v.astype(dtypes.get(k, np.int32)) for k, v in tags.items()}


@pytest.mark.parametrize("labels", sorted(LABEL_SETS))
def test_graph_grouping_matches_the_reference_on_random_tag_sequences(labels):
    label_names = LABEL_SETS[labels]
    texts, tags = synthetic_batch(label_names, seed=len(labels))
    for strategy in STRATEGIES:
        outputs = group_entities(tf.constant(texts), {k: tf.constant(v) for k, v in tags.items()},
                                 label_names, strategy)
        expected = [reference_entities(text, pieces_of(tags, row, label_names), strategy)
                    for row, text in enumerate(texts)]
        assert sum(map(len, expected)) > 20, strategy  # The batch does have entities.
        assert_same(dense_entities(outputs), expected)
        assert np.asarray(outputs["start"]).shape[1] == max(map(len, expected))


def one_row(text, pieces, label_names, strategy):
    """group_entities on one text given as (label, score, start, end, starts_word) pieces."""
    ids = {name: i for i, name in enumerate(label_names)}
    tags = {"label_id": [[ids[p[0]] for p in pieces]], "probability": [[p[1] for p in pieces]],
            "start": [[p[2] for p in pieces]], "end": [[p[3] for p in pieces]],
            "word_start": [[int(p[4]) for p in pieces]], "mask": [[1] * len(pieces)]}
    tags = {k: tf.constant(v, tf.float32 if k == "probability" else tf.int32, shape=[1, len(pieces)])
            for k, v in tags.items()}
    return dense_entities(group_entities(tf.constant([text]), tags, label_names, strategy))[0]


def test_known_cases_b_i_prefixes_subwords_and_empty_text():
    bio = LABEL_SETS["BIO"]
    text = "Jo Anne Lee went to Nice"
    #        B-PER    I-PER     B-PER (new entity: B- after B-)   O   O   I-LOC (no B-)
    pieces = [("B-PER", 0.9, 0, 2, True), ("I-PER", 0.7, 3, 7, True), ("B-PER", 0.8, 8, 11, True),
              ("O", 0.9, 12, 16, True), ("O", 0.9, 17, 19, True), ("I-LOC", 0.6, 20, 24, True)]
    got = one_row(text, pieces, bio, "simple")
    assert [e[:4] for e in got] == [("PER", "Jo Anne", 0, 7), ("PER", "Lee", 8, 11),
                                    ("LOC", "Nice", 20, 24)]
    assert got[0][4] == pytest.approx(0.8)
    # "none": every non-O piece alone, its label without the prefix.
    assert [e[:2] for e in one_row(text, pieces, bio, "none")] == [
        ("PER", "Jo"), ("PER", "Anne"), ("PER", "Lee"), ("LOC", "Nice")]
    # A word split into pieces that disagree: first / max decide for the whole word.
    text = "Washington"
    pieces = [("B-LOC", 0.6, 0, 4, True), ("I-PER", 0.95, 4, 7, False), ("O", 0.5, 7, 10, False)]
    assert one_row(text, pieces, bio, "first") == [("LOC", "Washington", 0, 10, pytest.approx(0.6))]
    assert one_row(text, pieces, bio, "max") == [("PER", "Washington", 0, 10, pytest.approx(0.95))]
    assert [e[:2] for e in one_row(text, pieces, bio, "simple")] == [("LOC", "Wash"), ("PER", "ing")]
    # No pieces at all.
    for strategy in STRATEGIES:
        assert one_row("", [], bio, strategy) == []


# === The tagger: predict and the export ===

@pytest.fixture(scope="module")
def tagger(task_exports):
    """The session's tiny fine-tuned tagger (labels O, ANIMAL, WORD), with its preprocessor."""
    from keras_bert.tasks import BertTokenClassifier

    return BertTokenClassifier.from_pretrained(
        os.path.join(os.path.dirname(task_exports["vocab_file"]), "tagger"))


def test_predict_entities_match_the_reference_and_slice_the_original_strings(tagger):
    names = tagger.label_names
    tags = tagger.predict(TEXTS)
    non_ascii = 0
    for strategy in STRATEGIES:
        got = as_tuples(tagger.predict(TEXTS, aggregation_strategy=strategy))
        expected = [reference_entities(text, pieces_of(tags, row, names), strategy)
                    for row, text in enumerate(TEXTS)]
        assert sum(map(len, expected)) >= len(TEXTS), strategy
        assert_same(got, expected)
        for text, entities in zip(TEXTS, got):
            for label, entity_text, start, end, _ in entities:
                assert entity_text == text[start:end] and entity_text.strip() == entity_text
                non_ascii += not entity_text.isascii()
    # Accented, CJK and emoji entities were sliced (not only ASCII words).
    assert non_ascii >= 4
    first = tagger.predict(TEXTS, aggregation_strategy="simple")
    assert {e["text"] for e in first[1]} >= {"Café   naïve"}  # One WORD run, spaces kept.
    assert first[2] == [] and tagger.predict([], aggregation_strategy="max") == []


def test_export_entities_signature_is_predict(task_exports, tagger):
    path = task_exports["tagger_export"]
    with open(os.path.join(path, "keras_bert_export.json"), encoding="utf-8") as f:
        info = json.load(f)
    assert info["aggregation_strategy"] == "first"
    outputs = info["signatures"]["entities"]["outputs"]
    assert {k: (v["dtype"], v["shape"]) for k, v in outputs.items()} == {
        "label": ("string", [None, None]), "text": ("string", [None, None]),
        "start": ("int32", [None, None]), "end": ("int32", [None, None]),
        "score": ("float32", [None, None]), "num_entities": ("int32", [None])}
    signature = tf.saved_model.load(path).signatures["entities"]
    served = dense_entities(signature(text=tf.constant(TEXTS)))
    assert_same(served, as_tuples(tagger.predict(
        TEXTS, aggregation_strategy="first")))
    empty = signature(text=tf.constant([], tf.string))
    assert empty["label"].shape == (0, 0) and empty["num_entities"].shape == (0,)


def test_unknown_strategy_is_refused_with_the_choices(tagger):
    with pytest.raises(ValueError, match=r"aggregation_strategy='average'.*|"
                       r"Expected aggregation_strategy in"):
        tagger.predict(["the fox"], aggregation_strategy="average")
    with pytest.raises(ValueError, match="Expected aggregation_strategy in"):
        build_serving_module(tagger, aggregation_strategy="average")
