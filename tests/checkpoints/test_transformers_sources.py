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
