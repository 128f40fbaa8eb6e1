"""keras-hub preset directories as a source of from_pretrained and tools/export.py.

Ground truth is keras-hub itself (a test-only dependency, setup.cfg's `test`
extra): a tiny random BertBackbone + BertTextClassifier with its
preprocessor, written with `save_to_preset`, and its outputs on raw
strings. keras-hub is imported once for the module (it is slow to import).
"""

import csv
import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from keras_bert import sources
from keras_bert.checkpoints import CheckpointError, convert_checkpoint
from keras_bert.models import BertEncoder
from keras_bert.tasks import BertClassifier
from keras_bert.text import BertPreprocessor
from tests.conftest import run_tool

keras_hub = pytest.importorskip("keras_hub")

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "quick", "brown", "fox", "dog",
         "jump", "##s", "##ed", "over", "lazy", "a", "good", "bad", "movie", ".", "!"]
TEXTS = ["The quick brown fox jumps over the lazy dog.", "A good movie!",
         "bad", "The dog jumped over a fox, twice: unknown words."]
SEQUENCE_LENGTH = 12  # Shorter than the first text: truncation is compared too.


def _randomize(model, seed):
    """Weights large enough that a misplaced one shows (keras-hub initializes at 0.02)."""
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        shape = tuple(variable.shape)
        if "gamma" in variable.path:
            value = 1.0 + rng.normal(0, 0.2, shape)
        else:
            value = rng.normal(0, 0.3, shape)
        variable.assign(value.astype("float32"))


@pytest.fixture(scope="module")
def presets(tmp_path_factory):
    """A keras-hub classifier preset, a backbone-only preset and the classifier's outputs."""
    root = tmp_path_factory.mktemp("keras_hub")
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=VOCAB, lowercase=True)
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(
        tokenizer=tokenizer, sequence_length=SEQUENCE_LENGTH)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=len(VOCAB), num_layers=2, num_heads=2, hidden_dim=16,
        intermediate_dim=32, max_sequence_length=24)
    classifier = keras_hub.models.BertTextClassifier(
        backbone=backbone, num_classes=3, preprocessor=preprocessor, dropout=0.2)
    _randomize(classifier, seed=3)
    classifier.save_to_preset(str(root / "classifier"))
    backbone.save_to_preset(str(root / "backbone"))
    tokenizer.save_to_preset(str(root / "backbone"))
    inputs = preprocessor(TEXTS)
    outputs = backbone(inputs)
    return {
        "classifier": str(root / "classifier"),
        "backbone": str(root / "backbone"),
        "logits": np.asarray(classifier(inputs)),
        "inputs": {k: np.asarray(v) for k, v in inputs.items()},
        "sequence_output": np.asarray(outputs["sequence_output"]),
        "pooled_output": np.asarray(outputs["pooled_output"]),
    }


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory):
    """One conversion cache for the module: each preset is converted once."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KERAS_BERT_CACHE", str(tmp_path_factory.mktemp("keras_bert_cache")))
        patch.setenv("HF_HUB_OFFLINE", "1")
        yield


def test_classifier_preset_predicts_keras_hubs_logits_on_raw_strings(presets):
    classifier = BertClassifier.from_pretrained(presets["classifier"])
    # The head, label count, dropout, casing and length come from the preset.
    assert classifier.num_classes == 3 and classifier.dropout_rate == 0.2
    assert classifier.preprocessor.tokenizer.lowercase is True
    assert classifier.preprocessor.max_seq_length == SEQUENCE_LENGTH
    assert classifier.encoder.max_position_embeddings == 24
    assert classifier.encoder.hidden_act == "gelu_approx"
    # Raw strings through the attached preprocessor (what predict runs; the
    # slow test below serves them from the export, which shares predict's
    # code), token for token keras-hub's.
    packed = classifier.preprocessor(tf.constant(TEXTS))
    for key in ("token_ids", "segment_ids", "padding_mask"):
        np.testing.assert_array_equal(np.asarray(packed[key]).astype(np.int32),
                                      presets["inputs"][key].astype(np.int32))
    np.testing.assert_allclose(classifier(packed), presets["logits"], atol=1e-5)


def test_backbone_preset_gives_keras_hubs_encoder_outputs(presets):
    encoder = BertEncoder.from_preset(presets["backbone"])
    inputs = {k: v.astype(np.int32) for k, v in presets["inputs"].items()}
    out = encoder(inputs)
    real = inputs["padding_mask"].astype(bool)
    np.testing.assert_allclose(np.asarray(out["sequence_output"])[real],
                               presets["sequence_output"][real], atol=1e-5)
    np.testing.assert_allclose(np.asarray(out["pooled_output"]), presets["pooled_output"],
                               atol=1e-5)
    # The encoder of the classifier preset is the same backbone.
    classifier_encoder = BertEncoder.from_pretrained(presets["classifier"])
    np.testing.assert_allclose(np.asarray(classifier_encoder(inputs)["pooled_output"]),
                               presets["pooled_output"], atol=1e-5)
    # A backbone preset without preprocessor.json keeps the config's length.
    preprocessor = BertPreprocessor.from_pretrained(presets["backbone"])
    assert preprocessor.max_seq_length == 24 and preprocessor.tokenizer.lowercase is True


@pytest.mark.slow
def test_predict_convert_export_and_finetune_of_a_classifier_preset(presets, tmp_path):
    from keras_bert.export.predict import load_export, run_signature

    report = convert_checkpoint(presets["classifier"], str(tmp_path / "converted"), check=True)
    assert report.format == "keras_hub"
    assert report.loaded_parts == ["encoder", "pooler", "classification_head"]
    # keras-hub's uncased tokenizer lower-cases without stripping accents: kept as its option.
    assert report.text_settings == {"lowercase": True, "max_seq_length": SEQUENCE_LENGTH,
                                    "tokenizer_options": {"strip_accents": False}}
    assert report.reference == "keras-hub" and report.max_abs_diff["head_logits"] < 1e-5

    # tools/export.py --model PRESET: raw strings in, keras-hub's logits
    # (as probabilities and labels) out. --no-tune: the sub-batch tuning is the same for
    # every classifier (tests/export/test_export_tuning.py, README.md's export command).
    status, out, err = run_tool("export", "--model", presets["classifier"],
                                "--output", tmp_path / "exports" / "sentiment", "--no-tune")
    assert status == 0, err
    path = str(tmp_path / "exports" / "sentiment" / "1")
    assert os.path.isfile(os.path.join(path, "assets.extra", "tf_serving_warmup_requests"))
    outputs = run_signature(load_export(path), {"text": TEXTS})
    logits = presets["logits"]
    softmax = np.exp(logits - logits.max(-1, keepdims=True))
    np.testing.assert_allclose(outputs["probabilities"], softmax / softmax.sum(-1, keepdims=True),
                               atol=1e-5)
    np.testing.assert_array_equal(outputs["label_id"], logits.argmax(-1))

    # tools/finetune.py --model PRESET starts from the converted preset.
    with open(tmp_path / "train.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label"])
        writer.writerows([(text, str(i % 3)) for i, text in enumerate(TEXTS * 3)])
    status, out, err = run_tool("finetune", "--task", "classification",
                                "--model", presets["classifier"], "--output", tmp_path / "tuned",
                                "--train", tmp_path / "train.csv", "--eval-fraction", "0.25",
                                "--epochs", "1", "--batch-size", "4", "--jit-compile", "off")
    assert status == 0, err
    task = json.loads((tmp_path / "tuned" / "task.json").read_text())
    assert task["task_config"]["num_classes"] == 3 and task["max_seq_length"] == SEQUENCE_LENGTH


def _copy_with_config(source, target, change):
    import shutil

    shutil.copytree(source, target)
    for name, edit in change.items():
        with open(os.path.join(target, name)) as f:
            values = json.load(f)
        edit(values)
        with open(os.path.join(target, name), "w") as f:
            json.dump(values, f)
    return str(target)


@pytest.mark.parametrize("class_name, name", [("RobertaBackbone", "RoBERTa"),
                                              ("DistilBertBackbone", "DistilBERT")])
def test_other_keras_hub_architectures_are_refused_by_name(presets, tmp_path, class_name, name):
    def rename(values):
        values["class_name"] = class_name
        values["registered_name"] = f"keras_hub>{class_name}"

    preset = _copy_with_config(presets["backbone"], tmp_path / "other", {"config.json": rename})
    with pytest.raises(CheckpointError, match=rf"a {name} preset \(keras-hub {class_name}\).*"
                                              rf"keras_bert loads BERT only"):
        BertEncoder.from_pretrained(preset)


def test_a_classifier_with_an_activation_is_refused(presets, tmp_path):
    def softmax(values):
        values["config"]["activation"] = "softmax"

    preset = _copy_with_config(presets["classifier"], tmp_path / "softmax",
                               {"task.json": softmax})
    with pytest.raises(CheckpointError, match=r"activation='softmax'.*activation=None"):
        BertClassifier.from_pretrained(preset)


def test_a_kaggle_preset_name_is_read_from_kagglehubs_cache_offline(presets, tmp_path,
                                                                     monkeypatch):
    import shutil
    import socket

    def refuse(*args, **kwargs):
        raise AssertionError("the network was reached")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setenv("KAGGLEHUB_CACHE", str(tmp_path / "kagglehub"))
    # kagglehub's layout: models/OWNER/MODEL/FRAMEWORK/VARIATION/VERSION (+ VERSION.complete).
    base = tmp_path / "kagglehub" / "models" / "keras" / "bert" / "keras"
    base = base / "bert_tiny_en_uncased_sst2"
    shutil.copytree(presets["classifier"], base / "5")
    with pytest.raises(FileNotFoundError) as error:  # An unfinished download.
        BertClassifier.from_pretrained("bert_tiny_en_uncased_sst2")
    message = str(error.value)
    assert "kaggle://keras/bert/keras/bert_tiny_en_uncased_sst2/5" in message
    assert str(base / "5") in message and "no network was reached" in message
    (base / "5.complete").write_text("")
    classifier = BertClassifier.from_pretrained("bert_tiny_en_uncased_sst2")
    packed = classifier.preprocessor(tf.constant(TEXTS))
    np.testing.assert_allclose(classifier(packed), presets["logits"], atol=1e-5)


def test_a_preset_without_weights_names_the_missing_file(presets, tmp_path):
    preset = _copy_with_config(presets["backbone"], tmp_path / "broken", {})
    os.remove(os.path.join(preset, "model.weights.h5"))
    with pytest.raises(CheckpointError, match=r"broken/model.weights.h5 is missing"):
        BertEncoder.from_pretrained(preset)


def test_an_edited_preset_vocabulary_in_its_assets_folder_is_converted_anew(presets, tmp_path):
    preset = str(tmp_path / "backbone")
    shutil.copytree(presets["backbone"], preset)
    first = sources.resolve_source(preset)
    vocabulary = os.path.join(preset, "assets", "tokenizer", "vocabulary.txt")
    tokens = open(vocabulary, encoding="utf-8").read().split("\n")
    i, j = tokens.index("the"), tokens.index("dog")  # Same length: the file's size stays.
    tokens[i], tokens[j] = tokens[j], tokens[i]
    mtime = os.stat(vocabulary).st_mtime_ns
    with open(vocabulary, "w", encoding="utf-8") as f:
        f.write("\n".join(tokens))
    os.utime(vocabulary, ns=(mtime, mtime))
    second = sources.resolve_source(preset)
    assert second != first
    with open(os.path.join(second, "vocab.txt"), encoding="utf-8") as f:
        assert f.read().split("\n")[i] == "dog"


def test_a_keras_nlp_era_preset_is_a_preset_not_a_model_directory(presets, tmp_path):
    from keras_bert import sources

    def keras_nlp(values):
        values["registered_name"] = "keras_nlp>BertBackbone"
        values["module"] = "keras_nlp.src.models.bert.bert_backbone"

    preset = _copy_with_config(presets["backbone"], tmp_path / "old", {"config.json": keras_nlp})
    # It has config.json and model.weights.h5, as a keras_bert model directory has.
    assert sources.keras_hub_class(preset) == "BertBackbone"
    assert not sources.is_model_dir(preset)
    assert sources.is_model_dir(sources.resolve_source(preset))


def test_a_preset_keeps_keras_hubs_accent_rule(tmp_path):
    # keras-hub's uncased BertTokenizer lower-cases and keeps accents (Google's
    # strips them): the converted model tokenizes as keras-hub does.
    vocab = VOCAB + ["café", "cafe", "é"]
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=vocab, lowercase=True)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=len(vocab), num_layers=1, num_heads=2, hidden_dim=16,
        intermediate_dim=32, max_sequence_length=24)
    backbone.save_to_preset(str(tmp_path / "accents"))
    tokenizer.save_to_preset(str(tmp_path / "accents"))
    texts = ["Café CAFE", "the café!", "É"]
    ours = BertEncoder.from_pretrained(str(tmp_path / "accents")).preprocessor.tokenizer
    assert ours.strip_accents is False and ours.lowercase is True
    expected = [np.asarray(row).tolist() for row in tokenizer(tf.constant(texts))]
    assert ours(tf.constant(texts)).to_list() == expected
    assert expected[0][0] == vocab.index("café")  # Kept, not folded to "cafe".
