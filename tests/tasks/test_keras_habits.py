"""What a Keras user types next works, or says clearly why not: labels as lists,
tuples and names, pairs as rows or columns (never guessed), empty and single
inputs, direct calls on strings, out-of-range integer inputs, a second fit."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.tasks import BertClassifier, BertSpanLabeler, BertTokenClassifier
from keras_bert.text import save_vocabulary
from tests.tasks.conftest import TOKENS, task_encoder
from tests.test_case import assert_all_close

NAMES = ["neg", "neu", "pos"]
TEXTS = ["the movie is good", "a bad film", "i love it", "awful film", "great movie"]
IDS = [2, 0, 2, 0, 1]
QUESTIONS, CONTEXTS = ["who lives in paris ?", "where ?", "who ?"], [
    "john lives in paris .", "in paris", "john"]


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("habits")
    save_vocabulary(TOKENS, root / "vocab.txt")
    encoder = task_encoder()
    encoder.save_pretrained(str(root / "encoder"), vocab_file=str(root / "vocab.txt"))
    return str(root / "encoder")


@pytest.fixture(scope="module")
def model(encoder_dir):
    """The module's classifier for tests that only predict, evaluate or are refused: each
    computes what it expects from the model's weights as they are, so one build (and its
    traced functions) serves them all."""
    return classifier(encoder_dir)


@pytest.fixture(scope="module")
def tagger(encoder_dir):
    tagger = BertTokenClassifier.from_pretrained(encoder_dir, num_classes=3, label_names=NAMES)
    tagger.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return tagger


@pytest.fixture(scope="module")
def qa(encoder_dir):
    return BertSpanLabeler.from_pretrained(encoder_dir)


def classifier(encoder_dir, **kwargs):
    kwargs = {"num_classes": 3, "label_names": NAMES, **kwargs}
    model = BertClassifier.from_pretrained(encoder_dir, **kwargs)
    loss = ("mse" if kwargs["num_classes"] == 1
            else keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss=loss)
    return model


def by_hand(model, *texts):
    inputs = model.preprocessor(tuple(tf.constant(t) for t in texts))
    return np.asarray(model(inputs, training=False))


def sparse_ce(labels, logits):
    return float(np.mean(keras.losses.sparse_categorical_crossentropy(
        np.asarray(labels), logits, from_logits=True)))


# === Labels as users hold them ===

def test_evaluate_takes_labels_as_lists_tuples_and_names(model):
    expected = sparse_ce(IDS, by_hand(model, TEXTS))
    names = [NAMES[i] for i in IDS]
    for labels in (np.array(IDS), IDS, tuple(IDS), names, tuple(names), np.array(names),
                   np.array(names, dtype=object), [n.encode() for n in names]):
        assert model.evaluate(TEXTS, labels, verbose=0) == pytest.approx(expected, rel=1e-5)


@pytest.mark.slow  # Tens of seconds of the default tier's time (round 10).
def test_fit_on_names_is_fit_on_their_ids(encoder_dir):
    model = classifier(encoder_dir)
    start = model.get_weights()
    model.fit(TEXTS, np.array(IDS), batch_size=2, shuffle=False, verbose=0)
    by_ids = model.get_weights()
    model.set_weights(start)
    model.fit(TEXTS, [NAMES[i] for i in IDS], batch_size=2, shuffle=False, verbose=0)
    for a, b in zip(model.get_weights(), by_ids):
        np.testing.assert_allclose(a, b, atol=1e-6)
    model.set_weights(start)
    names = [NAMES[i] for i in IDS]
    history = model.fit(TEXTS, tuple(IDS), batch_size=2, shuffle=False, verbose=0,
                        validation_data=(TEXTS, names)).history  # A tuple of ints.
    for a, b in zip(model.get_weights(), by_ids):
        np.testing.assert_allclose(a, b, atol=1e-6)
    expected = sparse_ce(IDS, by_hand(model, TEXTS))
    assert history["val_loss"][0] == pytest.approx(expected, rel=1e-5)


def test_label_mistakes_are_named(model, encoder_dir):
    with pytest.raises(ValueError, match=r"unknown label 'positive' in y.*\['neg', 'neu', 'pos'\]"):
        model.fit(TEXTS, ["neg", "positive", "pos", "neg", "neu"], verbose=0)
    with pytest.raises(ValueError, match=r"one row per text \(5\)\. Received: 3 rows"):
        model.fit(TEXTS, [0, 1, 2], verbose=0)
    with pytest.raises(ValueError, match="label id 3 .* num_classes=3"):
        model.evaluate(TEXTS, [0, 1, 2, 3, 0], verbose=0)
    with pytest.raises(ValueError, match="one value per example"):
        model.fit(TEXTS, "pos", verbose=0)
    unnamed = classifier(encoder_dir, label_names=None)
    with pytest.raises(ValueError, match="'pos'.* no label_names.*label_names=\\["):
        unnamed.fit(TEXTS, ["pos"] * 5, verbose=0)


def test_regression_takes_floats(encoder_dir):
    model = classifier(encoder_dir, num_classes=1, label_names=None)
    targets = [0.5, 1.25, -2.0, 3.0, 0.0]
    expected = float(np.mean((by_hand(model, TEXTS)[:, 0] - np.array(targets)) ** 2))
    assert model.evaluate(TEXTS, targets, verbose=0) == pytest.approx(expected, rel=1e-5)
    assert model.evaluate(TEXTS, tuple(targets), verbose=0) == pytest.approx(expected, rel=1e-5)
    with pytest.raises(ValueError, match="regression.*numbers"):
        model.fit(TEXTS, ["pos"] * 5, verbose=0)


def test_tagger_takes_per_token_tag_names(tagger):
    inputs = tagger.preprocessor(tf.constant(TEXTS[:2]))
    ids = np.random.default_rng(0).integers(0, 3, size=inputs["token_ids"].shape)
    names = np.array(NAMES)[ids]
    expected = tagger.evaluate(inputs, ids, verbose=0)
    assert tagger.evaluate(inputs, names, verbose=0) == pytest.approx(expected, rel=1e-5)
    assert tagger.evaluate(inputs, names.tolist(), verbose=0) == pytest.approx(expected, rel=1e-5)


@pytest.mark.slow  # Tens of seconds of the default tier's time (round 10).
def test_a_dataset_of_texts_and_label_names(encoder_dir):
    model = classifier(encoder_dir)
    names = [NAMES[i] for i in IDS]
    dataset = tf.data.Dataset.from_tensor_slices((TEXTS, names)).batch(2)
    expected = sparse_ce(IDS, by_hand(model, TEXTS))
    assert model.evaluate(dataset, verbose=0) == pytest.approx(expected, rel=1e-5)
    # predict reads (x, y) as texts and labels, never as pairs.
    assert_all_close(model.predict(dataset, verbose=0), by_hand(model, TEXTS))
    model.fit(dataset, verbose=0)
    bad = tf.data.Dataset.from_tensor_slices((TEXTS, ["neg"] * 4 + ["great"])).batch(2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="unknown label name"):
        model.fit(bad, verbose=0)
    unnamed = classifier(encoder_dir, label_names=None)
    for method in (unnamed.fit, unnamed.predict):
        with pytest.raises(ValueError, match=r"no label_names.*\(\(texts_a, texts_b\),\)"):
            method(dataset, verbose=0)


# === Pairs without guessing ===

def test_pairs_as_rows_for_any_count(model):
    for count in (1, 2, 3, 5):
        first, second = TEXTS[:count], TEXTS[::-1][:count]
        expected = by_hand(model, first, second)
        rows = list(zip(first, second))
        assert_all_close(model.predict(rows, verbose=0), expected)
        assert_all_close(model.predict(np.array(rows), verbose=0), expected)
        assert_all_close(model.predict((first, second), verbose=0), expected)
        assert_all_close(model.predict((np.array(first), np.array(second)), verbose=0),
                         expected)
    # Pair rows train with their labels.
    rows = list(zip(TEXTS, TEXTS[::-1]))
    expected = sparse_ce(IDS, by_hand(model, TEXTS, TEXTS[::-1]))
    assert model.evaluate(rows, [NAMES[i] for i in IDS], verbose=0) == pytest.approx(
        expected, rel=1e-5)


def test_two_by_two_pairs_are_refused_unless_the_containers_say(model):
    a1, a2, b1, b2 = TEXTS[:4]
    columns = by_hand(model, [a1, a2], [b1, b2])
    # The documented containers decide: a tuple of lists is columns, a list of tuples rows.
    assert_all_close(model.predict(([a1, a2], [b1, b2]), verbose=0), columns)
    assert_all_close(model.predict([(a1, b1), (a2, b2)], verbose=0), columns)
    for ambiguous in ([[a1, b1], [a2, b2]], ((a1, b1), (a2, b2))):
        with pytest.raises(ValueError, match=r"not guessed.*tuple of two lists.*list of tuples"):
            model.predict(ambiguous, verbose=0)
    with pytest.raises(ValueError, match=r"one pair or two texts; pass \[\(a, b\)\]"):
        model.predict((a1, b1), verbose=0)
    assert_all_close(model.predict([(a1, b1)], verbose=0), by_hand(model, [a1], [b1]))
    with pytest.raises(ValueError, match="neither"):
        model.predict([(a1, b1), (a2, b2), (a1, b1, a2)], verbose=0)
    with pytest.raises(ValueError, match=r"shape \(2, 3\)"):
        model.predict(np.array([[a1, b1, a2], [a2, b2, a1]]), verbose=0)


# === Edges ===

@pytest.mark.slow  # Tens of seconds of the default tier's time (round 10).
def test_empty_and_single_string_inputs(model, tagger, qa):
    for empty in ([], np.array([]), np.array([], dtype=str)):
        out = model.predict(empty, verbose=0)
        assert out.shape == (0, 3) and out.dtype == np.float32
    with pytest.raises(ValueError, match=r"not a single string: wrap it in a list"):
        model.predict("the movie is good", verbose=0)
    full, empty = tagger.predict(TEXTS[:2]), tagger.predict([])
    assert sorted(empty) == sorted(full)
    assert all(empty[key].shape[0] == 0 for key in empty)
    full, empty = qa.predict((QUESTIONS, CONTEXTS)), qa.predict(([], []))
    assert sorted(empty) == sorted(full)
    assert all(empty[key].shape == (0,) for key in empty)


def test_direct_calls_on_strings(model):
    expected = by_hand(model, TEXTS)
    assert_all_close(model(TEXTS), expected)
    assert_all_close(model.predict_on_batch(TEXTS), expected)
    names = [NAMES[i] for i in IDS]
    assert model.test_on_batch(TEXTS, names) == pytest.approx(sparse_ce(IDS, expected),
                                                              rel=1e-5)
    before = model.get_weights()
    model.train_on_batch(TEXTS, names)
    assert not np.allclose(model.get_weights()[-1], before[-1])
    plain = BertClassifier(model.encoder, num_classes=3)
    with pytest.raises(ValueError, match="has no preprocessor"):
        plain(TEXTS)


@pytest.mark.slow  # Tens of seconds of the default tier's time (round 10).
def test_tagger_and_qa_predict_one_structure_for_lists_arrays_and_datasets(tagger, qa):
    expected = tagger.predict(TEXTS)
    for inputs in (np.array(TEXTS), tf.data.Dataset.from_tensor_slices(TEXTS).batch(2),
                   tf.data.Dataset.from_tensor_slices((TEXTS, IDS)).batch(3)):
        got = tagger.predict(inputs, verbose=0)
        assert sorted(got) == sorted(expected)
        for key in expected:
            np.testing.assert_array_equal(got[key], expected[key])
    expected = qa.predict((QUESTIONS, CONTEXTS))
    for inputs in (list(zip(QUESTIONS, CONTEXTS)), np.array(list(zip(QUESTIONS, CONTEXTS))),
                   tf.data.Dataset.from_tensor_slices(((QUESTIONS, CONTEXTS),)).batch(2)):
        got = qa.predict(inputs, verbose=0)
        assert sorted(got) == sorted(expected)
        for key in expected:
            np.testing.assert_array_equal(got[key], expected[key])


def test_two_dimensional_strings_follow_one_rule(tagger, qa):
    grid = np.array([TEXTS[:2], TEXTS[2:4]])
    with pytest.raises(ValueError, match="one batch of texts.*not sentence pairs or a 2-D"):
        tagger.predict(grid)
    with pytest.raises(ValueError, match="one batch of texts"):
        tagger.predict((TEXTS[:3], TEXTS[1:4]))
    with pytest.raises(ValueError, match=r"shape \(1, 2, 2\)"):
        tagger.predict(grid[None])
    with pytest.raises(ValueError, match="takes pairs"):
        qa.predict(QUESTIONS)


# === Integer inputs and a second fit ===

def test_out_of_range_integer_inputs_are_refused(model):
    inputs = {k: v.numpy() for k, v in model.preprocessor(tf.constant(TEXTS)).items()}
    negative = dict(inputs, token_ids=inputs["token_ids"].copy())
    negative["token_ids"][1, 2] = -4
    with pytest.raises(ValueError, match=r"token_ids must be in \[0, vocab_size=30\)\. "
                                         r"Received -4 at index \[1, 2\]"):
        model.predict(negative, verbose=0)
    mask = dict(inputs, padding_mask=inputs["padding_mask"] * 2)
    with pytest.raises(ValueError, match="padding_mask must be 0 or 1"):
        model.evaluate(mask, np.array(IDS), verbose=0)
    with pytest.raises(ValueError, match="padding_mask must be 0 or 1"):
        model.fit(mask, np.array(IDS), verbose=0)
    dataset = tf.data.Dataset.from_tensor_slices((mask, np.array(IDS))).batch(2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="padding_mask must be 0 or 1"):
        model.evaluate(dataset, verbose=0)
    # In range, the integer path is as before.
    assert_all_close(model.predict(inputs, verbose=0), by_hand(model, TEXTS))


@pytest.mark.slow  # Tens of seconds of the default tier's time (round 10).
def test_a_failed_fit_does_not_block_the_next(encoder_dir):
    model = classifier(encoder_dir)
    # Adam creates its slots in the first train step.
    model.compile(optimizer="adam",
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    unlabelled = model.preprocessor(tf.constant(TEXTS))
    with pytest.raises(ValueError, match="None values not supported"):
        # No labels: Keras fails while it traces its train step.
        model.fit(unlabelled, verbose=0)
    history = model.fit(TEXTS, np.array(IDS), epochs=2, verbose=0).history
    assert len(history["loss"]) == 2 and np.isfinite(history["loss"]).all()


def test_fit_without_labels_says_so(model):
    with pytest.raises(ValueError, match="BertClassifier.fit needs labels: pass y"):
        model.fit(TEXTS, verbose=0)
    with pytest.raises(ValueError, match="BertClassifier.evaluate needs labels"):
        model.evaluate(tf.data.Dataset.from_tensor_slices(TEXTS).batch(2), verbose=0)


# === What a newcomer brings from keras-hub and Hugging Face ===

def test_peer_names_are_refused_naming_ours(model):
    with pytest.raises(ValueError, match="BertClassifier takes encoder=, keras_bert's name for "
                                         "keras-hub's backbone="):
        BertClassifier(backbone=model.encoder, num_classes=3)
    inputs = {k: v.numpy() for k, v in model.preprocessor(tf.constant(TEXTS)).items()}
    hugging_face = {"input_ids": inputs["token_ids"], "attention_mask": inputs["padding_mask"],
                    "token_type_ids": inputs["segment_ids"]}
    for call in (lambda: model.predict(hugging_face, verbose=0),
                 lambda: model.fit(hugging_face, np.array(IDS), verbose=0)):
        with pytest.raises(ValueError, match="rename input_ids to token_ids, attention_mask to "
                                             "padding_mask, token_type_ids to segment_ids"):
            call()


def test_from_pretrained_says_a_data_file_is_no_model(encoder_dir, tmp_path):
    data = tmp_path / "train.csv"
    data.write_text("text,label\nthe movie is good,pos\n")
    with pytest.raises(ValueError, match=r"train.csv is a data file, not a model: "
                                         r"from_pretrained takes a model directory"):
        BertClassifier.from_pretrained(str(data), num_classes=3)
    assert data.read_text().startswith("text,label")


def test_a_mixed_precision_task_reports_the_policy_it_runs(encoder_dir):
    model = BertClassifier.from_pretrained(encoder_dir, num_classes=3, dtype="mixed_bfloat16")
    assert model.dtype_policy.name == model.encoder.dtype_policy.name == "mixed_bfloat16"
    assert model.output_dense.compute_dtype == "bfloat16"  # What it reports is what runs.
    assert BertClassifier.from_pretrained(encoder_dir, num_classes=3).dtype_policy.name == (
        "float32")
