"""Hugging Face folders and Hub-cache ids against transformers itself.

A tiny random `BertForSequenceClassification` (transformers and torch from
setup.cfg's `test` extra) is written with `save_pretrained`, once as a
folder and once in a fake huggingface_hub cache read with HF_HUB_OFFLINE=1
(no network). keras_bert's classifier, on raw strings, must give
transformers' logits, and its encoder transformers' hidden states.
"""

import json

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.models import BertEncoder
from keras_bert.tasks import BertClassifier
from tests.checkpoints.conftest import WORDS
from tests.checkpoints.test_sources import _hub_cache

# transformers and torch take ~15 s to import and build here: the slow tier.
pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TEXTS = ["The quick brown fox jumps over the lazy dog.", "Where is the train station?",
         "Hello!"]
LABELS = ["negative", "neutral", "positive"]


@pytest.fixture(scope="module")
def hf_model(tmp_path_factory):
    """A saved transformers classifier and its outputs on TEXTS."""
    folder = tmp_path_factory.mktemp("transformers") / "tiny-bert"
    config = transformers.BertConfig(
        vocab_size=len(WORDS), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=24, hidden_act="gelu",
        id2label=dict(enumerate(LABELS)), label2id={k: i for i, k in enumerate(LABELS)})
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(config).eval()
    with torch.no_grad():  # Weights large enough that a misplaced one shows.
        for name, parameter in model.named_parameters():
            scale = 0.2 if "LayerNorm.weight" in name else 0.3
            parameter.copy_(torch.randn_like(parameter) * scale
                            + (1.0 if "LayerNorm.weight" in name else 0.0))
    model.save_pretrained(str(folder))
    # The tokenizer files as the Hub holds them (keras_bert reads do_lower_case).
    (folder / "vocab.txt").write_text("\n".join(WORDS) + "\n")
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"do_lower_case": True, "tokenizer_class": "BertTokenizer"}))
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
    encoded = tokenizer(TEXTS, padding=True, return_tensors="pt")
    with torch.no_grad():
        out = model(**encoded, output_hidden_states=True)
        pooled = model.bert.pooler(out.hidden_states[-1])
    return {
        "folder": str(folder),
        "inputs": {"token_ids": encoded["input_ids"].numpy().astype(np.int32),
                   "segment_ids": encoded["token_type_ids"].numpy().astype(np.int32),
                   "padding_mask": encoded["attention_mask"].numpy().astype(np.int32)},
        "logits": out.logits.numpy(),
        "sequence_output": out.hidden_states[-1].numpy(),
        "pooled_output": pooled.numpy(),
    }


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_BERT_CACHE", str(tmp_path / "keras_bert_cache"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf_cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _check_classifier(classifier, hf_model):
    assert classifier.label_names == LABELS
    packed = classifier.preprocessor(tf.constant(TEXTS))  # Raw strings, as predict takes them.
    width = hf_model["inputs"]["token_ids"].shape[1]
    for key, value in hf_model["inputs"].items():
        np.testing.assert_array_equal(np.asarray(packed[key])[:, :width].astype(np.int32), value)
    np.testing.assert_allclose(np.asarray(classifier(packed)), hf_model["logits"], atol=1e-5)


def test_huggingface_folder_matches_transformers(hf_model):
    _check_classifier(BertClassifier.from_pretrained(hf_model["folder"]), hf_model)
    encoder = BertEncoder.from_pretrained(hf_model["folder"])
    out = encoder(hf_model["inputs"])
    real = hf_model["inputs"]["padding_mask"].astype(bool)
    np.testing.assert_allclose(np.asarray(out["sequence_output"])[real],
                               hf_model["sequence_output"][real], atol=1e-5)
    np.testing.assert_allclose(np.asarray(out["pooled_output"]), hf_model["pooled_output"],
                               atol=1e-5)


def test_hub_cache_id_matches_transformers_offline(hf_model, tmp_path, monkeypatch):
    import socket

    def refuse(*args, **kwargs):
        raise AssertionError("the network was reached")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    _hub_cache(tmp_path, "org/tiny-bert", hf_model["folder"])
    _check_classifier(BertClassifier.from_pretrained("org/tiny-bert"), hf_model)


def _saved_by_transformers(hf_model, folder, words, lowercase=True):
    """hf_model's weights in `folder` with the tokenizer files that transformers itself writes.

    transformers 5 writes tokenizer.json and tokenizer_config.json and no vocab.txt; a 4.x
    `save_pretrained(legacy_format=False)` writes the same files (and vocab.txt, deleted
    here, so both versions give a transformers-5 folder).
    """
    import shutil

    folder.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(f"{hf_model['folder']}/{name}", folder / name)
    if int(transformers.__version__.split(".")[0]) >= 5:
        tokenizer = transformers.BertTokenizer(
            vocab={w: i for i, w in enumerate(words)}, do_lower_case=lowercase)
    else:
        (folder / "vocab.txt").write_text("\n".join(words) + "\n")
        tokenizer = transformers.BertTokenizerFast(
            vocab_file=str(folder / "vocab.txt"), do_lower_case=lowercase)
    tokenizer.save_pretrained(str(folder), legacy_format=False)
    (folder / "vocab.txt").unlink(missing_ok=True)
    assert {"tokenizer.json", "tokenizer_config.json"} <= {p.name for p in folder.iterdir()}
    return transformers.AutoTokenizer.from_pretrained(str(folder))


def test_folder_written_by_transformers_5_loads(hf_model, tmp_path):
    # No vocab.txt: the vocabulary and the casing come from tokenizer.json.
    folder = tmp_path / "tiny-bert-5"
    _saved_by_transformers(hf_model, folder, WORDS)
    assert not (folder / "vocab.txt").exists()
    _check_classifier(BertClassifier.from_pretrained(str(folder)), hf_model)


def test_tokenizer_json_wins_over_vocab_txt_as_in_transformers(hf_model, tmp_path, caplog):
    # A vocab.txt left from another model: transformers' tokenizer reads
    # tokenizer.json, and so does keras_bert (with a warning).
    folder = tmp_path / "tiny-bert-both"
    words = WORDS[:5] + WORDS[5:][::-1]  # Another id for every word.
    reference = _saved_by_transformers(hf_model, folder, words)
    (folder / "vocab.txt").write_text("\n".join(WORDS) + "\n")
    with caplog.at_level("WARNING"):
        classifier = BertClassifier.from_pretrained(str(folder))
    assert "tokenizer.json is used" in caplog.text
    packed = classifier.preprocessor(tf.constant(TEXTS))
    want = reference(TEXTS, padding=True)["input_ids"]
    got = np.asarray(packed["token_ids"])[:, :len(want[0])]
    np.testing.assert_array_equal(got, np.asarray(want))
    assert got[0, 1] == words.index("the")
