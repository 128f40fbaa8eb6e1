"""Text settings travel with the model, end to end (issue 25).

A checkpoint's casing (do_lower_case) is what conversion, the export and
feature extraction use, even where the vocabulary alone suggests the other
casing; a fine-tuning run's --max-seq-length and --lowercase are what its
model's preprocessor, task.json and the export use.
"""

import csv
import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.checkpoints import convert_checkpoint
from keras_bert.export import build_serving_module
from keras_bert.export.features import extract_features
from keras_bert.models import BertEncoder, load_model_dir
from keras_bert.tasks import BertClassifier
from keras_bert.tasks.classification.options import ClassificationOptions
from keras_bert.text import BertPreprocessor, infer_lowercase
from keras_bert.text.settings import TextSettings, resolve_lengths
from keras_bert.training import finetune as finetune_lib
from tests.checkpoints.conftest import (
    WORDS,
    huggingface_config,
    random_weights,
    tiny_config,
    to_huggingface,
    write_huggingface,
)
from tests.conftest import tiny_config as suite_config
from tests.training.finetune_fixtures import make_vocab, sentiment_rows

# Uppercase tokens enough for `infer_lowercase` to call the vocabulary cased.
CASED_WORDS = list(WORDS) + ["Hello", "The", "Where", "North"]


def _convert(root, words, do_lower_case):
    """A tiny Hugging Face folder saying do_lower_case, converted to a model directory."""
    config = tiny_config(vocab_size=len(words))
    folder = os.path.join(root, "hf")
    values = {**huggingface_config(config), "do_lower_case": do_lower_case}
    write_huggingface(folder, to_huggingface(random_weights(config, heads=False), config),
                      values, words=words)
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": do_lower_case}, f)
    model_dir = os.path.join(root, "model")
    convert_checkpoint(folder, model_dir)
    return model_dir


@pytest.mark.parametrize("do_lower_case, words", [
    (False, WORDS),        # Cased, though the vocabulary has no uppercase token.
    (True, CASED_WORDS),   # Uncased, though the vocabulary looks cased.
])
def test_the_source_casing_is_what_the_export_and_features_use(tmp_path, do_lower_case, words):
    assert infer_lowercase(list(words)) is not do_lower_case  # The vocabulary says the other.
    model_dir = _convert(str(tmp_path), words, do_lower_case)
    with open(os.path.join(model_dir, "task.json")) as f:
        assert json.load(f)["lowercase"] is do_lower_case
    texts = ["Hello", "hello"]

    # The export (export_model's serving module, called in this process) and
    # feature extraction; BertPreprocessor.from_pretrained: tests/checkpoints/test_sources.py.
    module = build_serving_module(load_model_dir(model_dir, BertEncoder))
    ids = module.preprocess(tf.constant(texts))["token_ids"].numpy()
    lines = tmp_path / "lines.txt"
    lines.write_text("\n".join(texts) + "\n")
    extract_features(model_dir, str(lines), str(tmp_path / "f.npy"), pooling="cls",
                     verbose=False)
    features = np.load(tmp_path / "f.npy")

    if do_lower_case:
        np.testing.assert_array_equal(ids[0], ids[1])
        np.testing.assert_allclose(features[0], features[1], atol=1e-6)
    else:
        assert ids[0, 1] == words.index("[UNK]") and ids[1, 1] == words.index("hello")
        assert np.abs(features[0] - features[1]).max() > 1e-3


def test_finetune_max_seq_length_is_what_the_model_task_json_and_export_use(
        tmp_path, tiny_model_dir):
    rows = sentiment_rows(8)
    for name in ("train", "dev"):
        with open(tmp_path / f"{name}.csv", "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows([("text", "label")] + rows)
    task_options = ClassificationOptions()
    train = finetune_lib.read_task_data("classification", str(tmp_path / "train.csv"), True,
                                        task_options)
    dev = finetune_lib.read_task_data("classification", str(tmp_path / "dev.csv"), False,
                                      task_options)
    seen = {}

    class Record(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            preprocessor = self.model.preprocessor
            seen.update(max_seq_length=preprocessor.max_seq_length,
                        lowercase=preprocessor.tokenizer.lowercase)

    output = str(tmp_path / "out")
    # The tiny model takes 128 positions and its directory saves no settings.
    options = finetune_lib.FinetuneOptions(epochs=1, batch_size=8, max_seq_length=11,
                                           lowercase=False, jit_compile="off", log_every=100)
    finetune_lib.finetune("classification", tiny_model_dir, output, train, dev, options,
                          callbacks=[Record()], progress="lines", task_options=task_options)
    # The model trained in the run packs as the run does.
    assert seen == {"max_seq_length": 11, "lowercase": False}
    with open(os.path.join(output, "task.json")) as f:
        info = json.load(f)
    assert (info["max_seq_length"], info["lowercase"], info["truncation"]) == (
        11, False, "longest_first")
    again = BertClassifier.from_pretrained(output)
    assert again.preprocessor.max_seq_length == 11
    assert again.preprocessor.tokenizer.lowercase is False
    module = build_serving_module(load_model_dir(output, BertEncoder))
    assert (module.max_seq_length, module.lowercase) == (11, False)
    long_text = tf.constant(["the movie was good " * 10])
    assert module.preprocess(long_text)["token_ids"].shape[1] == 11


# === One length setting: what a save accepts, a load accepts (issue 45 item 3) ===

POSITIONS = 32


@pytest.fixture(scope="module")
def small_encoder(tmp_path_factory):
    """(vocab.txt, a 32-position encoder): shorter than every default length."""
    vocab = str(tmp_path_factory.mktemp("lengths") / "vocab.txt")
    tokens = make_vocab(vocab)
    keras.utils.set_random_seed(0)
    config = suite_config(vocab_size=len(tokens), num_layers=1,
                          max_position_embeddings=POSITIONS)
    return vocab, BertEncoder(**config.to_dict())


def _lengths(preprocessor):
    return preprocessor.sequence_length, preprocessor.max_seq_length, preprocessor.truncation


@pytest.fixture(scope="module")
def fitted_dir(small_encoder, tmp_path_factory):
    """The issue's classifier: sequence_length=16 on 32 positions, fit, saved."""
    vocab, encoder = small_encoder
    preprocessor = BertPreprocessor.from_vocab_file(vocab, sequence_length=16)
    model = BertClassifier(encoder, num_classes=2, label_names=["neg", "pos"],
                           preprocessor=preprocessor)
    rows = sentiment_rows(16)
    model.fit([text for text, _ in rows], [label for _, label in rows], epochs=1, verbose=0)
    path = str(tmp_path_factory.mktemp("fitted") / "model")
    model.save_pretrained(path)
    return path, model.predict(["the movie was good"], verbose=0)


def test_the_issue_classifier_loads_its_own_directory(fitted_dir):
    path, logits = fitted_dir
    again = BertClassifier.from_pretrained(path)  # Was: "max_seq_length=512 (saved in ...)".
    assert _lengths(again.preprocessor) == (16, 16, "longest_first")
    np.testing.assert_allclose(again.predict(["the movie was good"], verbose=0), logits,
                               atol=1e-6)


@pytest.mark.parametrize("given", [
    {}, {"max_seq_length": 16}, {"sequence_length": 16}, {"sequence_length": None},
    {"sequence_length": None, "max_seq_length": 24}, {"sequence_length": 16, "max_seq_length": 512},
    {"sequence_length": 24, "max_seq_length": 32},
    {"sequence_length": None, "max_seq_length": 20, "truncation": "round_robin"},
])
def test_save_then_from_pretrained_round_trips_every_accepted_combination(
        small_encoder, tmp_path, given):
    vocab, encoder = small_encoder
    preprocessor = BertPreprocessor.from_vocab_file(vocab, **given)
    model = BertClassifier(encoder, num_classes=2, preprocessor=preprocessor)
    reach = preprocessor.truncation_length
    path = str(tmp_path / "model")
    if reach > POSITIONS:
        # It cannot pack for this encoder: refused at save, by the load's own check.
        name = "sequence_length" if preprocessor.sequence_length else "max_seq_length"
        with pytest.raises(ValueError, match=rf"Expected {name} in \[3, {POSITIONS}\].* "
                                             rf"{name}={reach} "):
            model.save_pretrained(path)
        assert not os.path.exists(path)
        with pytest.raises(ValueError, match=rf"{name}={reach} "):
            resolve_lengths(TextSettings(), TextSettings(
                preprocessor.max_seq_length, sequence_length=preprocessor.sequence_length),
                POSITIONS)
        return
    model.save_pretrained(path)
    again = BertClassifier.from_pretrained(path)
    assert _lengths(again.preprocessor) == _lengths(preprocessor)
