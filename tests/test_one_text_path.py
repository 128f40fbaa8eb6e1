"""The preprocessor is the model's one text path: a setting changed on it, or a
subclass attached, changes fit, predict, the model directory and every export alike."""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertClassifier, BertTokenClassifier
from keras_bert.export import build_serving_module, export_model
from keras_bert.export.predict import load_export
from keras_bert.text import BertPreprocessor

TEXTS = ["the movie was good and the plot was great",
         "bad film",
         "the city is a lovely city and the movie is nice and happy"]
PAIRS = (["the movie was good and the plot was great and nice"], ["bad film was boring"])


@pytest.fixture(scope="module")
def classifier(tiny_model_dir):
    keras.utils.set_random_seed(1)
    return BertClassifier.from_pretrained(tiny_model_dir, num_classes=2,
                                          label_names=["neg", "pos"])


def widths(features):
    return tuple(features["token_ids"].shape)


def test_a_setting_changed_after_loading_changes_every_path(classifier, tmp_path):
    model = classifier
    before = widths(model.preprocess_samples(tf.constant(TEXTS)))
    assert before[1] > 6  # Batch-longest, past the length set below.
    model.preprocessor.sequence_length = 6
    try:
        # fit / predict: the hook packs to the new length.
        assert widths(model.preprocess_samples(tf.constant(TEXTS))) == (3, 6)
        model.fit(TEXTS, ["pos", "neg", "pos"], epochs=1, verbose=0)
        logits = model.predict(TEXTS, verbose=0)
        ids = model.preprocess_samples(tf.constant(TEXTS))
        np.testing.assert_allclose(logits, model(ids, training=False), atol=1e-5)
        # The model directory keeps it, and a reload packs with it.
        model.save_pretrained(str(tmp_path / "dir"))
        saved = json.load(open(tmp_path / "dir" / "task.json"))
        assert saved["sequence_length"] == 6
        reloaded = BertClassifier.from_pretrained(str(tmp_path / "dir"))
        assert reloaded.preprocessor.sequence_length == 6
        # The SavedModel export packs to it and answers as predict does.
        export_dir = export_model(model, str(tmp_path / "export"), warmup=False)
        loaded = load_export(export_dir)
        packed = loaded.signatures["preprocess"](text=tf.constant(TEXTS))
        assert widths(packed) == (3, 6)
        np.testing.assert_array_equal(packed["token_ids"], ids["token_ids"])
        probabilities = loaded.signatures["classify"](text=tf.constant(TEXTS))["probabilities"]
        np.testing.assert_allclose(probabilities, tf.nn.softmax(logits), atol=1e-5)
        assert json.load(open(os.path.join(export_dir, "keras_bert_export.json")))[
            "sequence_length"] == 6
    finally:
        model.preprocessor.sequence_length = None
    assert widths(model.preprocess_samples(tf.constant(TEXTS))) == before
    # Set back, the reloaded directory's model pads to each batch's longest again.
    reloaded.preprocessor.sequence_length = None
    reloaded.save_pretrained(str(tmp_path / "again"))
    assert "sequence_length" not in json.load(open(tmp_path / "again" / "task.json"))
    assert BertClassifier.from_pretrained(str(tmp_path / "again")).preprocessor.sequence_length \
        is None


@pytest.mark.slow
def test_litert_export_packs_with_the_preprocessor_setting(classifier):
    from keras_bert.export.tflite import convert_module, run_tflite
    from keras_bert.export.tflite_runtime import litert_interpreter

    model = classifier
    model.preprocessor.sequence_length = 7
    try:
        module = build_serving_module(model)
        lite = litert_interpreter(convert_module(module))
        outputs = run_tflite(lite, TEXTS)
        expected = tf.nn.softmax(model.predict(TEXTS, verbose=0))
        np.testing.assert_allclose(outputs["probabilities"], expected, atol=1e-4)
        # Seven positions: the first text is cut, as predict cuts it.
        full = BertClassifier(model.encoder, num_classes=2,
                              preprocessor=model.preprocessor.with_settings(sequence_length=None))
        assert not np.allclose(full.predict(TEXTS[:1], verbose=0), expected[:1], atol=1e-4)
    finally:
        model.preprocessor.sequence_length = None


def test_truncation_set_on_the_preprocessor_reaches_the_export(classifier):
    model = classifier
    model.preprocessor.max_seq_length = 10
    model.preprocessor.truncation = "round_robin"
    try:
        ids = model.preprocess_samples(tuple(tf.constant(t) for t in PAIRS))["token_ids"]
        module = build_serving_module(model, pairs=True)
        exported = module.preprocess(tf.constant(PAIRS[0]), tf.constant(PAIRS[1]))
        np.testing.assert_array_equal(exported["token_ids"], ids)
        assert module.truncation == "round_robin" and module.max_seq_length == 10
    finally:
        model.preprocessor.truncation = "longest_first"
        model.preprocessor.max_seq_length = 128


class FirstWordDropped(BertPreprocessor):
    """A user's subclass: drops each text's first word before tokenizing."""

    def call(self, inputs):
        inputs = inputs if isinstance(inputs, (list, tuple)) else (inputs,)
        return super().call(tuple(tf.strings.regex_replace(t, r"^\S+\s*", "") for t in inputs))


@pytest.mark.slow  # Tens of seconds of the default tier's time (round 10).
def test_a_subclassed_preprocessor_is_what_the_export_runs(classifier, tmp_path):
    custom = FirstWordDropped(classifier.preprocessor.tokenizer, sequence_length=None,
                               max_seq_length=128)
    model = BertClassifier(classifier.encoder, num_classes=2, preprocessor=custom)
    model.output_dense.set_weights(classifier.output_dense.get_weights())
    texts = ["good bad bad bad", "bad good good good"]
    logits = model.predict(texts, verbose=0)
    # The subclass runs in fit/predict: one piece fewer than the plain reading.
    ours = model.preprocess_samples(tf.constant(texts))["padding_mask"].numpy().sum(1)
    plain = classifier.preprocess_samples(tf.constant(texts))["padding_mask"].numpy().sum(1)
    np.testing.assert_array_equal(ours, plain - 1)
    loaded = load_export(export_model(model, str(tmp_path / "custom"), warmup=False))
    probabilities = loaded.signatures["classify"](text=tf.constant(texts))["probabilities"]
    np.testing.assert_allclose(probabilities, tf.nn.softmax(logits), atol=1e-5)
    with pytest.raises(ValueError, match="own call"):
        build_serving_module(model, sub_batches=2)


def test_a_tagger_predict_follows_its_preprocessor(tiny_model_dir):
    tagger = BertTokenClassifier.from_pretrained(tiny_model_dir, num_classes=2,
                                                 label_names=["O", "X"])
    text = ["the movie was good and the plot was great and the city"]
    assert len(tagger.predict(text)["label"][0]) > 5
    tagger.preprocessor.sequence_length = 5  # [CLS] three pieces [SEP]
    assert len(tagger.predict(text)["label"][0]) == 3


def test_a_new_task_model_fits_without_compile(tiny_model_dir):
    base = BertClassifier.from_pretrained(tiny_model_dir, num_classes=2)
    model = BertClassifier(base.encoder, num_classes=2, preprocessor=base.preprocessor)
    assert model.compiled  # At construction, as keras-hub's tasks.
    history = model.fit(TEXTS, [1, 0, 1], epochs=1, verbose=0)
    assert model.compiled and np.isfinite(history.history["loss"][0])
    opted_out = BertClassifier(base.encoder, num_classes=2, preprocessor=base.preprocessor,
                               compile=False)
    with pytest.raises(ValueError, match=r"You must call `compile\(\)`"):
        opted_out.fit(TEXTS, [1, 0, 1], epochs=1, verbose=0)


def test_preprocessor_settings_are_checked_when_set(classifier):
    preprocessor = classifier.preprocessor
    with pytest.raises(ValueError, match="sequence_length"):
        preprocessor.sequence_length = 2
    with pytest.raises(ValueError, match="truncation"):
        preprocessor.truncation = "middle_out"
    assert preprocessor.sequence_length is None and preprocessor.truncation == "longest_first"


def test_a_nested_list_is_refused_not_read_as_pairs(classifier):
    with pytest.raises(ValueError, match="list of lists"):
        classifier.preprocessor([["one", "two"], ["three", "four"]])


def test_names_users_bring_from_peers(classifier, tiny_model_dir, tmp_path):
    assert classifier.backbone is classifier.encoder  # keras-hub's name
    with pytest.raises(ValueError, match="sequence_length = N"):
        classifier.preprocessor(["a text"], max_length=8, padding="max_length")
    lines = []
    classifier.summary(print_fn=lines.append)
    assert "Preprocessor: BertPreprocessor" in lines[-1] and "max_seq_length=128" in lines[-1]
    # class_weight keyed by label names, as the labels are.
    by_name = classifier.fit(TEXTS, ["pos", "neg", "pos"], class_weight={"neg": 3.0, "pos": 1.0},
                             epochs=1, verbose=0)
    assert np.isfinite(by_name.history["loss"][0])
    with pytest.raises(ValueError, match="label_names are"):
        classifier.fit(TEXTS, [1, 0, 1], class_weight={"positive": 2.0}, epochs=1, verbose=0)
    # A classifier's directory loaded as a tagger without its head arguments.
    classifier.save_pretrained(str(tmp_path / "clf"))
    with pytest.raises(ValueError, match="holds a BertClassifier"):
        BertTokenClassifier.from_pretrained(str(tmp_path / "clf"))


def test_tokenizer_options_are_saved_with_the_model_directory(classifier, tmp_path):
    from keras_bert.text import BertTokenizer

    tokenizer = classifier.preprocessor.tokenizer
    options = BertTokenizer(tokenizer.vocabulary, lowercase=True, strip_accents=False,
                            never_split=["movie"])
    model = BertClassifier(classifier.encoder, num_classes=2, preprocessor=BertPreprocessor(
        options, sequence_length=None, max_seq_length=64))
    model.save_pretrained(str(tmp_path / "opts"))
    saved = json.load(open(tmp_path / "opts" / "task.json"))
    assert saved["tokenizer_options"] == {"strip_accents": False, "never_split": ["movie"]}
    reloaded = BertClassifier.from_pretrained(str(tmp_path / "opts")).preprocessor.tokenizer
    assert (reloaded.strip_accents, list(reloaded.never_split)) == (False, ["movie"])
    # The default tokenizer writes no options.
    classifier.save_pretrained(str(tmp_path / "plain"))
    assert "tokenizer_options" not in json.load(open(tmp_path / "plain" / "task.json"))
