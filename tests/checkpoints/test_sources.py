"""from_pretrained(source) on any checkpoint users hold (issue 26, first slice).

Hugging Face folders and Hub ids (read from a fake huggingface_hub cache with
HF_HUB_OFFLINE=1: no network), Google TF1 folders and known names load in
one call, converted once into KERAS_BERT_CACHE with their casing, maximum
length and (fine-tuned Hugging Face heads) labels. Ground truth: the numpy
forward pass of the random weights the folders were written from.
"""

import json
import logging
import os
import shutil
import socket
import sys

import numpy as np
import pytest

from keras_bert.checkpoints import CheckpointError, KNOWN_NAMES, convert_checkpoint
from keras_bert.checkpoints.reference import numpy_forward
from keras_bert.models import BertEncoder
from keras_bert.tasks import BertClassifier, BertTokenClassifier
from keras_bert.text import BertPreprocessor, infer_lowercase
from tests.checkpoints.conftest import (
    WORDS,
    google_config,
    huggingface_config,
    minilm_reference,
    random_weights,
    reference_inputs,
    tiny_config,
    to_huggingface,
    write_google,
    write_huggingface,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    """A fresh conversion cache and an empty, offline Hugging Face cache."""
    monkeypatch.setenv("KERAS_BERT_CACHE", str(tmp_path / "keras_bert_cache"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf_cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path / "keras_bert_cache"


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a connection fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("the network was reached")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def _hf_folder(path, config=None, heads=False, tokenizer=None, extra_config=None,
               extra_tensors=None):
    config = config or tiny_config(hidden_act="gelu")
    weights = random_weights(config, heads=heads)
    values = {**huggingface_config(config), **(extra_config or {})}
    tensors = {**to_huggingface(weights, config), **(extra_tensors or {})}
    write_huggingface(str(path), tensors, values)
    if tokenizer is not None:
        with open(os.path.join(path, "tokenizer_config.json"), "w") as f:
            json.dump(tokenizer, f)
    return str(path), weights, config


def _hub_cache(tmp_path, repo_id, folder):
    """huggingface_hub's cache layout: models--ORG--NAME/{refs/main, snapshots/HASH/}."""
    repo = tmp_path / "hf_cache" / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(COMMIT)
    shutil.copytree(folder, repo / "snapshots" / COMMIT)
    return str(repo / "snapshots" / COMMIT)


def _outputs(encoder, batch):
    out = encoder(batch)
    return np.asarray(out["sequence_output"]), np.asarray(out["pooled_output"])


def _assert_matches_weights(encoder, weights, config, batch):
    ref = numpy_forward(weights, config, batch["token_ids"], batch["segment_ids"],
                        batch["padding_mask"])
    sequence, pooled = _outputs(encoder, batch)
    real = batch["padding_mask"].astype(bool)
    np.testing.assert_allclose(sequence[real], ref["sequence_output"][real], atol=1e-4)
    np.testing.assert_allclose(pooled, ref["pooled_output"], atol=1e-4)


def test_huggingface_folder_loads_in_one_call_and_is_converted_once(tmp_path, batch, cache,
                                                                    monkeypatch):
    folder, weights, config = _hf_folder(tmp_path / "hf", tokenizer={"do_lower_case": True})
    encoder = BertEncoder.from_pretrained(folder)
    _assert_matches_weights(encoder, weights, config, batch)
    (converted,) = os.listdir(cache / "converted")
    assert converted.startswith("hf-")
    # The casing is the source's; the maximum length is config.json's
    # max_position_embeddings, so fine-tuning keeps its own default.
    assert json.loads((cache / "converted" / converted / "task.json").read_text()) == {
        "lowercase": True}
    assert sorted(os.listdir(cache / "converted" / converted)) == [
        "config.json", "model.weights.h5", "task.json", "vocab.txt"]

    # The second load reads the cache: no conversion runs.
    import keras_bert.checkpoints.resolve as resolve

    monkeypatch.setattr(resolve, "convert_checkpoint",
                        lambda *a, **k: pytest.fail("converted twice"))
    again = BertEncoder.from_preset(folder)
    np.testing.assert_array_equal(_outputs(again, batch)[0], _outputs(encoder, batch)[0])
    # A touched file is the same checkpoint; changed content is a new cache entry.
    os.utime(os.path.join(folder, "model.safetensors"), ns=(1, 1))
    BertEncoder.from_pretrained(folder)
    with open(os.path.join(folder, "vocab.txt"), "a") as f:
        f.write("\n")
    with pytest.raises(pytest.fail.Exception, match="converted twice"):
        BertEncoder.from_pretrained(folder)


def test_casing_and_length_come_from_the_source_not_the_vocabulary(tmp_path):
    # The vocabulary is all lowercase, so a guess from it says lowercase=True.
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(WORDS) + "\n")
    assert infer_lowercase(str(vocab)) is True
    folder, _, config = _hf_folder(tmp_path / "hf", tokenizer={"do_lower_case": False})
    classifier = BertClassifier.from_pretrained(folder, num_classes=3)
    assert classifier.preprocessor.tokenizer.lowercase is False
    assert classifier.preprocessor.max_seq_length == config.max_position_embeddings == 24
    preprocessor = BertPreprocessor.from_pretrained(folder)
    assert preprocessor.tokenizer.lowercase is False and preprocessor.max_seq_length == 24
    # An explicit argument still wins.
    assert BertPreprocessor.from_pretrained(folder, lowercase=True).tokenizer.lowercase is True
    # The casing stays with an encoder that is saved again.
    BertEncoder.from_pretrained(folder).save_pretrained(str(tmp_path / "resaved"))
    assert json.loads((tmp_path / "resaved" / "task.json").read_text()) == {"lowercase": False}
    assert BertPreprocessor.from_pretrained(str(tmp_path / "resaved")).tokenizer.lowercase is False


def test_a_missing_fact_logs_the_default_taken(tmp_path, caplog):
    folder, _, _ = _hf_folder(tmp_path / "hf")  # No tokenizer_config.json.
    with caplog.at_level(logging.WARNING):
        preprocessor = BertPreprocessor.from_pretrained(folder)
    assert preprocessor.tokenizer.lowercase is True
    lines = [r.getMessage() for r in caplog.records if "lowercase=True" in r.getMessage()]
    assert len(lines) == 1 and "guessed from vocab.txt" in lines[0]


@pytest.mark.parametrize("name, lowercase", [("cased_L-2_H-16_A-2", False),
                                             ("uncased_L-2_H-16_A-2", True)])
def test_google_folder_loads_with_casing_from_its_name(tmp_path, batch, name, lowercase):
    config = tiny_config()
    weights = random_weights(config)
    folder = write_google(str(tmp_path / name), weights, google_config(config))
    classifier = BertClassifier.from_pretrained(folder, num_classes=2)
    assert classifier.preprocessor.tokenizer.lowercase is lowercase
    _assert_matches_weights(classifier.encoder, weights, config, batch)


def test_hub_id_is_read_from_the_offline_cache(tmp_path, batch, no_network):
    folder, weights, config = _hf_folder(tmp_path / "hf", tokenizer={"do_lower_case": True})
    _hub_cache(tmp_path, "org/tiny-bert", folder)
    from_hub = BertEncoder.from_pretrained("org/tiny-bert")
    direct = BertEncoder.from_pretrained(folder)
    np.testing.assert_array_equal(_outputs(from_hub, batch)[0], _outputs(direct, batch)[0])
    np.testing.assert_array_equal(_outputs(from_hub, batch)[1], _outputs(direct, batch)[1])
    _assert_matches_weights(from_hub, weights, config, batch)


def test_known_names_map_to_hub_ids(tmp_path, batch, no_network):
    assert KNOWN_NAMES["bert-base-uncased"] == "google-bert/bert-base-uncased"
    assert KNOWN_NAMES["bert_tiny_en_uncased"] == "google/bert_uncased_L-2_H-128_A-2"
    assert KNOWN_NAMES["bert_base_en"] == "google-bert/bert-base-cased"
    folder, weights, config = _hf_folder(tmp_path / "hf", tokenizer={"do_lower_case": True})
    _hub_cache(tmp_path, "sentence-transformers/all-MiniLM-L6-v2", folder)
    classifier = BertClassifier.from_preset("all-MiniLM-L6-v2", num_classes=2)
    _assert_matches_weights(classifier.encoder, weights, config, batch)


def test_hub_id_missing_offline_says_where_it_looked_and_that_no_network_was_reached(
        tmp_path, no_network):
    with pytest.raises(FileNotFoundError) as error:
        BertClassifier.from_pretrained("bert-base-uncased", num_classes=2)
    message = str(error.value)
    assert "google-bert/bert-base-uncased" in message
    assert str(tmp_path / "hf_cache") in message
    assert "no network was reached" in message
    assert "tools/convert_checkpoint.py" in message


def test_hub_unreachable_online_says_no_network_was_reached(tmp_path, monkeypatch):
    import huggingface_hub
    from huggingface_hub import errors

    monkeypatch.delenv("HF_HUB_OFFLINE")
    calls = []

    def unreachable(repo_id, **kwargs):
        calls.append((repo_id, kwargs["local_files_only"]))
        raise errors.LocalEntryNotFoundError("Connection error, and the file is not cached")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", unreachable)
    with pytest.raises(FileNotFoundError, match=r"could not be reached \(no network was "
                                                r"reached\)"):
        BertEncoder.from_pretrained("bert_tiny_en_uncased")
    assert calls == [("google/bert_uncased_L-2_H-128_A-2", False)]


def test_unknown_name_lists_the_table_and_how_to_convert(tmp_path):
    with pytest.raises(FileNotFoundError) as error:
        BertEncoder.from_pretrained("bert-basic-uncased")
    message = str(error.value)
    assert "'bert-basic-uncased' not found" in message
    assert os.path.abspath("bert-basic-uncased") in message
    assert "bert_base_en_uncased" in message and "all-MiniLM-L6-v2" in message
    assert str(tmp_path / "hf_cache") in message
    assert "tools/convert_checkpoint.py" in message
    # A missing path under an existing folder is a path, never a Hub id.
    with pytest.raises(FileNotFoundError, match="no such path"):
        BertEncoder.from_pretrained(str(tmp_path / "missing"))


# DistilBERT, ELECTRA (tests/checkpoints/test_family.py), RoBERTa and XLM-R
# (tests/checkpoints/test_roberta.py) load.
@pytest.mark.parametrize("model_type, name", [("modernbert", "ModernBERT"),
                                              ("albert", "ALBERT"),
                                              ("deberta-v2", "DeBERTa-v2")])
def test_other_architectures_are_refused_by_name(tmp_path, model_type, name):
    folder, _, _ = _hf_folder(tmp_path / "hf", extra_config={"model_type": model_type})
    with pytest.raises(CheckpointError,
                       match=rf"is a {name} checkpoint \(model_type='{model_type}'\).*"
                             rf"keras_bert loads BERT \(model_type 'bert'\) and its variants "
                             rf"DistilBERT"):
        BertEncoder.from_pretrained(folder)


def test_a_bert_config_naming_a_distilbert_class_says_which_model_type_to_set(tmp_path):
    folder, _, _ = _hf_folder(tmp_path / "hf",
                              extra_config={"architectures": ["DistilBertForMaskedLM"]})
    with pytest.raises(CheckpointError,
                       match=r"is a DistilBERT checkpoint .*says 'distilbert': set it in "
                             r"config\.json"):
        BertEncoder.from_pretrained(folder)


def test_fine_tuned_sequence_classifier_keeps_its_head_and_label_names(tmp_path, batch):
    config = tiny_config(hidden_act="gelu")
    rng = np.random.default_rng(7)
    head_w = rng.normal(0, 0.5, (3, config.hidden_size)).astype(np.float32)  # [labels, H]
    head_b = rng.normal(0, 0.5, (3,)).astype(np.float32)
    folder, weights, _ = _hf_folder(
        tmp_path / "hf", config=config,
        extra_config={"architectures": ["BertForSequenceClassification"],
                      "id2label": {"0": "negative", "1": "neutral", "2": "positive"},
                      "label2id": {"negative": 0, "neutral": 1, "positive": 2}},
        extra_tensors={"classifier.weight": head_w, "classifier.bias": head_b})
    classifier = BertClassifier.from_pretrained(folder)
    assert classifier.num_classes == 3
    assert classifier.label_names == ["negative", "neutral", "positive"]
    ref = numpy_forward(weights, config, batch["token_ids"], batch["segment_ids"],
                        batch["padding_mask"])
    np.testing.assert_allclose(np.asarray(classifier(batch)),
                               ref["pooled_output"] @ head_w.T + head_b, atol=1e-4)
    # Another label count would discard the trained head: only when asked.
    with pytest.raises(ValueError, match="new_head=True"):
        BertClassifier.from_pretrained(folder, num_classes=5)
    fresh = BertClassifier.from_pretrained(folder, num_classes=5, new_head=True)
    assert fresh.num_classes == 5 and fresh.label_names is None


def test_fine_tuned_token_classifier_keeps_its_head(tmp_path, batch):
    config = tiny_config(hidden_act="gelu")
    rng = np.random.default_rng(8)
    head_w = rng.normal(0, 0.5, (4, config.hidden_size)).astype(np.float32)
    head_b = rng.normal(0, 0.5, (4,)).astype(np.float32)
    folder, weights, _ = _hf_folder(
        tmp_path / "hf", config=config,
        extra_config={"architectures": ["BertForTokenClassification"],
                      "id2label": {"0": "O", "1": "B-PER", "2": "I-PER", "3": "B-LOC"}},
        extra_tensors={"classifier.weight": head_w, "classifier.bias": head_b})
    tagger = BertTokenClassifier.from_pretrained(folder)
    assert tagger.label_names == ["O", "B-PER", "I-PER", "B-LOC"]
    ref = numpy_forward(weights, config, batch["token_ids"], batch["segment_ids"],
                        batch["padding_mask"])
    real = batch["padding_mask"].astype(bool)
    np.testing.assert_allclose(np.asarray(tagger(batch))[real],
                               (ref["sequence_output"] @ head_w.T + head_b)[real], atol=1e-4)


def test_convert_tool_takes_a_hub_id_and_checks_it(tmp_path, no_network, capsys):
    folder, _, _ = _hf_folder(tmp_path / "hf", tokenizer={"do_lower_case": True})
    _hub_cache(tmp_path, "org/tiny-bert", folder)
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    try:
        import convert_checkpoint as tool
    finally:
        sys.path.pop(0)
    out = tmp_path / "converted"
    assert tool.main(["--input", "org/tiny-bert", "--output", str(out), "--check"]) == 0
    printed = capsys.readouterr().out
    # transformers is the reference when the test extra installed it.
    assert ("check vs numpy" in printed or "check vs transformers" in printed)
    assert "lowercase=True" in printed
    assert json.loads((out / "task.json").read_text()) == {"lowercase": True}


def test_convert_report_carries_head_checked_against_numpy(tmp_path):
    config = tiny_config(hidden_act="gelu")
    rng = np.random.default_rng(9)
    folder, _, _ = _hf_folder(
        tmp_path / "hf", config=config,
        extra_config={"architectures": ["BertForSequenceClassification"]},
        extra_tensors={"classifier.weight": rng.normal(0, 0.5, (2, 16)).astype(np.float32),
                       "classifier.bias": np.zeros(2, np.float32)})
    report = convert_checkpoint(folder, str(tmp_path / "out"), check=True)
    assert "classification_head" in report.loaded_parts and report.unused == []
    assert report.max_abs_diff["head_logits"] < 1e-4
    task = json.loads((tmp_path / "out" / "task.json").read_text())
    assert task["task"] == "classification" and task["task_config"]["num_classes"] == 2


@pytest.fixture(scope="module")
def minilm(minilm_source):
    return minilm_source, minilm_reference()


def test_real_minilm_folder_loads_straight_into_a_classifier_and_encoder(minilm):
    folder, reference = minilm
    inputs = reference_inputs(reference)
    real = reference["padding_mask"].astype(bool)
    classifier = BertClassifier.from_pretrained(folder, num_classes=3)
    encoder = BertEncoder.from_pretrained(folder)
    for model in (classifier.encoder, encoder):
        sequence, pooled = _outputs(model, inputs)
        # The reference is transformers' BertModel
        # (tests/fixtures/makers/make_reference_outputs.py).
        assert np.abs(sequence[real] - reference["sequence_output"][real]).max() <= 1e-4
        assert np.abs(pooled - reference["pooled_output"]).max() <= 1e-4
    # tokenizer_config.json says do_lower_case=true; max_position_embeddings is 512.
    assert classifier.preprocessor.tokenizer.lowercase is True
    assert classifier.preprocessor.max_seq_length == 512
    assert classifier.predict(["What a lovely day"], verbose=0).shape == (1, 3)


def test_a_file_of_a_folder_or_an_export_is_refused_with_the_way_out(tmp_path):
    # Mistakes the checks catch before any conversion: the messages name the real thing.
    model_dir = tmp_path / "minilm"
    model_dir.mkdir()
    (model_dir / "config.json").write_text(json.dumps({"num_layers": 2}))
    (model_dir / "model.weights.h5").write_bytes(b"")
    for name in ("config.json", "model.weights.h5"):
        with pytest.raises(ValueError, match=rf"is a file of the folder {model_dir}: .* "
                                             rf"Pass from_pretrained\('{model_dir}'\)"):
            BertEncoder.from_pretrained(str(model_dir / name))
    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "config.json").write_text(json.dumps({"model_type": "bert"}))
    with pytest.raises(ValueError, match="is a file of the folder"):
        BertClassifier.from_pretrained(str(hf / "config.json"))
    version = tmp_path / "exports" / "sentiment" / "3"
    version.mkdir(parents=True)
    (version / "saved_model.pb").write_bytes(b"")
    (tmp_path / "exports" / "sentiment-lite").mkdir()
    (tmp_path / "exports" / "sentiment-lite" / "model.tflite").write_bytes(b"")
    for export in (version, version.parent, version / "saved_model.pb",
                   tmp_path / "exports" / "sentiment-lite",
                   tmp_path / "exports" / "sentiment-lite" / "model.tflite"):
        with pytest.raises(ValueError, match="exports are for serving .* Load the model "
                                             "directory it was exported from"):
            BertClassifier.from_pretrained(str(export))
