"""A task model reaches its own serving code, and loading a task's model
directory imports that task on demand: neither goes through a registry that
`keras_bert/__init__.py` had to fill first."""

import json

import pytest

from keras_bert.export.export import build_serving_module
from keras_bert.export.serving_module import BertServingModule
from keras_bert.models import BertEncoder, registry
from keras_bert.models.model_dir import load_model_dir
from keras_bert.tasks.span_qa.model import BertSpanLabeler
from keras_bert.tasks.span_qa.serving import SpanQAServingModule
from keras_bert.tasks.token_classification.model import BertTokenClassifier
from keras_bert.tasks.token_classification.serving import TokenClassifierServingModule

TAGS = ["O", "B-LOC", "I-LOC"]


@pytest.fixture
def tagger_dir(encoder, vocab_file, tmp_path):
    encoder_dir = str(tmp_path / "encoder")
    encoder.save_pretrained(encoder_dir, vocab_file=vocab_file)
    tagger = BertTokenClassifier.from_pretrained(encoder_dir, num_classes=3, label_names=TAGS)
    path = str(tmp_path / "tagger")
    tagger.save_pretrained(path)
    return path


@pytest.fixture
def empty_registry(monkeypatch):
    """No task registered: every lookup by name fails."""
    monkeypatch.setattr(registry, "_REGISTRY", {})
    return registry._REGISTRY


def test_task_models_name_their_task_and_serving_module():
    assert BertTokenClassifier.task_name == "token_classification"
    assert BertTokenClassifier.serving_module_class is TokenClassifierServingModule
    assert BertSpanLabeler.serving_module_class is SpanQAServingModule


def test_predict_on_strings_needs_no_registry(tagger_dir, monkeypatch):
    tagger = BertTokenClassifier.from_pretrained(tagger_dir)
    monkeypatch.setattr(registry, "_REGISTRY", {})
    # Any registry lookup would now fail: the tagger must reach its serving module itself.
    tags = tagger.predict(["john lives in paris ."])
    assert tags["label"].shape == (1, 5)
    assert set(tags["label"][0].astype(str)) <= set(TAGS)
    assert tags["start"][0].tolist() == [0, 5, 11, 14, 20]
    assert isinstance(build_serving_module(tagger), TokenClassifierServingModule)
    # An explicit class wins (the base module serves the tagger's encoder).
    base = build_serving_module(tagger, serving_module_class=BertServingModule)
    assert type(base) is BertServingModule and "tag" not in base.SIGNATURES
    assert not registry._REGISTRY


@pytest.mark.parametrize("name", ["nope", "os.path", "../classification"])
def test_an_unknown_task_name_is_still_an_error(tagger_dir, empty_registry, name):
    path = f"{tagger_dir}/task.json"
    with open(path, encoding="utf-8") as f:
        info = json.load(f)
    info["task"] = name
    with open(path, "w", encoding="utf-8") as f:
        json.dump(info, f)
    with pytest.raises(ValueError, match=rf"task\.json names an unknown task {name!r}"):
        load_model_dir(tagger_dir, BertEncoder)
