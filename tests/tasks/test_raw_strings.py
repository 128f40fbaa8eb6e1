"""Task models take raw strings in fit / evaluate / predict through their preprocessor."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.export import export_model
from keras_bert.export.predict import load_export, run_signature
from keras_bert.models import BertEncoder
from keras_bert.tasks import BertClassifier, BertSpanLabeler, BertTokenClassifier
from keras_bert.text import BertPreprocessor, save_vocabulary
from tests.tasks.conftest import TOKENS, task_encoder
from tests.test_case import assert_all_close

TEXTS = ["the movie is good", "a bad film", "i love it", "awful , awful film",
         "great great movie", "i hate it"]
LABELS = np.array([2, 0, 2, 0, 2, 0])


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory):
    """The tiny encoder's model directory, saved once: the tests only read it."""
    root = tmp_path_factory.mktemp("raw_strings")
    save_vocabulary(TOKENS, root / "vocab.txt")
    path = str(root / "encoder")
    task_encoder().save_pretrained(path, vocab_file=str(root / "vocab.txt"))
    return path


def sparse_ce():
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def by_hand(model, *texts):
    """The model's logits on ids packed outside it, with its own preprocessor."""
    inputs = model.preprocessor(tuple(tf.constant(t) for t in texts))
    return np.asarray(model(inputs, training=False))


def test_from_pretrained_attaches_a_preprocessor(encoder_dir, tmp_path):
    classifier = BertClassifier.from_pretrained(encoder_dir, num_classes=3)
    preprocessor = classifier.preprocessor
    assert isinstance(preprocessor, BertPreprocessor)
    # No task.json: the whole position range, casing guessed from the vocabulary.
    assert preprocessor.max_seq_length == 16 and preprocessor.sequence_length is None
    assert preprocessor.tokenizer.lowercase is True
    shorter = BertClassifier.from_pretrained(encoder_dir, num_classes=3, max_seq_length=8)
    assert shorter.preprocessor.max_seq_length == 8
    # task.json's values come back with the model directory.
    shorter.save_pretrained(str(tmp_path / "clf"), task_info={"lowercase": False})
    info = json.loads((tmp_path / "clf" / "task.json").read_text())
    assert info["max_seq_length"] == 8 and info["lowercase"] is False
    again = BertClassifier.from_pretrained(str(tmp_path / "clf"))
    assert again.preprocessor.max_seq_length == 8
    assert again.preprocessor.tokenizer.lowercase is False
    with pytest.raises(ValueError, match="max_seq_length in \\[3, 16\\]"):
        BertClassifier.from_pretrained(encoder_dir, num_classes=3, max_seq_length=17)


@pytest.mark.slow  # Tens of seconds of the default tier's time (round 10).
def test_fit_and_predict_on_strings_and_export_probabilities_equal_softmax_of_predict(
        encoder_dir, tmp_path):
    keras.utils.set_random_seed(1)
    # max_seq_length 7 holds every text of TEXTS (6 ids at most); the export below cuts one.
    classifier = BertClassifier.from_pretrained(encoder_dir, num_classes=3, max_seq_length=7,
                                                label_names=["neg", "neu", "pos"])
    classifier.compile(optimizer=keras.optimizers.Adam(1e-2), loss=sparse_ce())
    # 80 steps in 4 epochs, not 40 epochs of 2 steps: each epoch starts a new
    # tf.data iterator, which instantiates the tokenizer graph again (~0.5 s).
    history = classifier.fit(TEXTS * 10, np.tile(LABELS, 10), batch_size=3, epochs=4,
                             verbose=0).history
    assert history["loss"][-1] < 0.5 * history["loss"][0]
    logits = classifier.predict(["the movie is good"], verbose=0)
    assert logits.shape == (1, 3)
    assert np.argmax(classifier.predict(TEXTS, verbose=0), -1).tolist() == LABELS.tolist()
    expected = by_hand(classifier, TEXTS)
    # Every string container gives the same answer as packing by hand.
    for texts in (TEXTS, np.array(TEXTS), np.array(TEXTS, dtype=object),
                  tf.constant(TEXTS), [t.encode() for t in TEXTS]):
        assert_all_close(classifier.predict(texts, batch_size=4, verbose=0), expected)
    loss = classifier.evaluate(TEXTS, LABELS, verbose=0)
    expected_loss = float(np.mean(sparse_ce()(LABELS, expected)))
    assert loss == pytest.approx(expected_loss, rel=1e-4)
    # The export of the fitted classifier, from its model directory and from the model:
    # probabilities = softmax(predict), labels named.
    texts = TEXTS + ["", "the the the the the the the the film"]  # truncated at 7
    probabilities = tf.nn.softmax(classifier.predict(texts, verbose=0)).numpy()
    classifier.save_pretrained(str(tmp_path / "clf"))
    for source in (str(tmp_path / "clf"), classifier):
        export = export_model(source, str(tmp_path / "exports" / "clf"))
        out = run_signature(load_export(export), {"text": texts})
        np.testing.assert_allclose(out["probabilities"], probabilities, atol=1e-4,
                                   err_msg=f"export of {source}")
        assert [label.decode() for label in out["label"]] == [
            ["neg", "neu", "pos"][i] for i in probabilities.argmax(-1)], source


@pytest.mark.slow
def test_pairs_and_datasets(encoder_dir):
    classifier = BertClassifier.from_pretrained(encoder_dir, num_classes=2)
    classifier.compile(optimizer=keras.optimizers.Adam(1e-3), loss=sparse_ce())
    first, second = TEXTS[:4], TEXTS[2:]
    pairs = classifier.predict((first, second), verbose=0)
    assert_all_close(pairs, by_hand(classifier, first, second))
    assert not np.allclose(pairs, by_hand(classifier, first))  # B really is packed in.
    dataset = tf.data.Dataset.from_tensor_slices(((first, second), LABELS[:4] // 2)).batch(2)
    classifier.fit(dataset, epochs=1, verbose=0)
    after = by_hand(classifier, first, second)
    # Unlabelled pairs are ((a, b),): (a, b) would be texts and labels (Keras' rule).
    assert_all_close(classifier.predict(tf.data.Dataset.from_tensor_slices(
        ((first, second),)).batch(3), verbose=0), after)
    single = tf.data.Dataset.from_tensor_slices((TEXTS, LABELS % 2)).batch(4)
    classifier.fit(single, epochs=1, verbose=0)
    with pytest.raises(ValueError, match="batch it first"):
        classifier.fit(tf.data.Dataset.from_tensor_slices((TEXTS, LABELS)), verbose=0)
    with pytest.raises(ValueError, match="as many second texts"):
        classifier.predict((first, second[:2]), verbose=0)
    with pytest.raises(ValueError, match="one row per text"):
        classifier.fit(TEXTS, LABELS[:2], verbose=0)


def test_integer_inputs_work_as_before(encoder, batch, vocab_file):
    plain = BertClassifier(encoder, num_classes=3)
    assert plain.preprocessor is None
    assert_all_close(plain.predict(batch, verbose=0), plain(batch))
    with pytest.raises(ValueError, match="has no preprocessor.*from_pretrained"):
        plain.predict(["some text"], verbose=0)
    attached = BertClassifier(encoder, num_classes=3,
                              preprocessor=BertPreprocessor.from_vocab_file(vocab_file))
    assert_all_close(attached.predict(batch, verbose=0), attached(batch))


def test_keras_file_and_model_directory_keep_the_preprocessor(encoder_dir, tmp_path):
    classifier = BertClassifier.from_pretrained(encoder_dir, num_classes=3, max_seq_length=6)
    expected = classifier.predict(TEXTS, verbose=0)
    classifier.save(str(tmp_path / "clf.keras"))
    reloaded = keras.models.load_model(str(tmp_path / "clf.keras"))
    assert reloaded.preprocessor.max_seq_length == 6
    assert_all_close(reloaded.predict(TEXTS, verbose=0), expected)
    # A .keras model carries its vocabulary inline: save_pretrained writes it out.
    reloaded.save_pretrained(str(tmp_path / "dir"))
    again = BertClassifier.from_pretrained(str(tmp_path / "dir"))
    assert (tmp_path / "dir" / "vocab.txt").exists()
    assert_all_close(again.predict(TEXTS, verbose=0), expected)


@pytest.mark.slow
def test_token_classifier_and_qa_predict_what_their_exports_return(encoder_dir, tmp_path):
    tagger = BertTokenClassifier.from_pretrained(encoder_dir, num_classes=3,
                                                 label_names=["O", "B-LOC", "I-LOC"])
    texts = ["john lives in paris .", "", "who"]
    tags = tagger.predict(texts)
    assert tags["label"].shape == (3, 5)
    assert tags["start"][0].tolist() == [0, 5, 11, 14, 20]
    assert tags["mask"][1].sum() == 0
    qa = BertSpanLabeler.from_pretrained(encoder_dir)
    questions, contexts = ["who lives in paris ?", "where ?"], ["john lives in paris .", ""]
    answers = qa.predict((questions, contexts))
    for model, inputs, got in ((tagger, {"text": texts}, tags),
                               (qa, {"question": questions, "context": contexts}, answers)):
        model.save_pretrained(str(tmp_path / model.task_name))
        export = export_model(str(tmp_path / model.task_name), str(tmp_path / "x" / model.name))
        out = run_signature(load_export(export), inputs)
        assert sorted(out) == sorted(got)
        for key in out:
            if out[key].dtype.kind == "f":
                np.testing.assert_allclose(got[key], out[key], atol=1e-5)
            else:
                assert got[key].tolist() == out[key].tolist(), key
    start, end = answers["start"][0], answers["end"][0]
    assert answers["answer"][0].decode() == contexts[0][start:end]
    assert answers["start"][1] == -1  # An empty context has no answer.
    # Integer inputs still give logits.
    ids = tagger.preprocessor(tf.constant(texts))
    assert tagger.predict(ids, verbose=0).shape == (3, 7, 3)


def test_unknown_encoder_dir_without_vocab(encoder, tmp_path):
    encoder.save_pretrained(str(tmp_path / "novocab"))
    classifier = BertClassifier.from_pretrained(str(tmp_path / "novocab"), num_classes=2)
    assert classifier.preprocessor is None
    with pytest.raises(ValueError, match="has no preprocessor"):
        classifier.fit(["a"], np.array([0]), verbose=0)
    assert isinstance(classifier.encoder, BertEncoder)


def test_one_token_type_takes_pairs_only_in_one_segment(vocab_file):
    """An encoder with one token type (RoBERTa's type_vocab_size 1) never gets segment id 1:
    pairs go through a tokenizer of the RoBERTa family (one segment), and a BERT pair
    template is refused by name."""
    from keras_bert.text import BertTokenizer

    class TwoSeparators(BertTokenizer):
        pair_separator = 2

    encoder = task_encoder(type_vocab_size=1)
    pairs = (["the movie"], ["is good"])
    model = BertClassifier(encoder=encoder, num_classes=2, preprocessor=BertPreprocessor(
        TwoSeparators(vocab_file), sequence_length=None))
    assert_all_close(model.predict(pairs, verbose=0), by_hand(model, *pairs))
    model.preprocessor = BertPreprocessor(BertTokenizer(vocab_file), sequence_length=None)
    with pytest.raises(ValueError, match="type_vocab_size=1.*segment id 1"):
        model.predict(pairs, verbose=0)
