"""Model directories and model constructors on bad input: a clear ValueError, never a
silently different model."""

import json
import os

import h5py
import pytest

from keras_bert.models import BertEncoder, BertPretrainer, load_model_dir
from keras_bert.tasks import BertClassifier
from tests.models.conftest import tiny_config

SIX_LAYERS = dict(num_layers=6, hidden_size=16, num_heads=4)


@pytest.fixture(scope="module")
def saved_dirs(tmp_path_factory):
    """A 6-layer encoder dir and a classifier dir (config.json restored by each test)."""
    root = tmp_path_factory.mktemp("dirs")
    encoder = BertEncoder(**tiny_config(**SIX_LAYERS).to_dict())
    encoder.save_pretrained(str(root / "encoder"))
    classifier = BertClassifier(BertEncoder(**tiny_config().to_dict()), num_classes=2,
                                label_names=["neg", "pos"])
    classifier.save_pretrained(str(root / "classifier"))
    return {"encoder": str(root / "encoder"), "classifier": str(root / "classifier")}


def edit_json(path, **changes):
    with open(path, encoding="utf-8") as f:
        values = json.load(f)
    original = dict(values)
    values.update(changes)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(values, f)
    return original


def restore_json(path, values):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(values, f)


@pytest.mark.parametrize("changes", [
    {"num_layers": 5}, {"num_layers": 1}, {"num_layers": 0}, {"num_heads": 8},
    {"num_heads": 2},
])
def test_config_json_that_does_not_match_the_weights_fails_to_load(saved_dirs, changes):
    path = os.path.join(saved_dirs["encoder"], "config.json")
    original = edit_json(path, **changes)
    try:
        with pytest.raises(ValueError, match="config.json") as raised:
            BertEncoder.from_pretrained(saved_dirs["encoder"])
        assert next(iter(changes)) in str(raised.value)
    finally:
        restore_json(path, original)


def test_weights_without_a_saved_config_are_still_checked_by_shape(saved_dirs, tmp_path):
    # A directory written before the weights file carried its config.
    import shutil

    model_dir = str(tmp_path / "old")
    shutil.copytree(saved_dirs["encoder"], model_dir)
    with h5py.File(os.path.join(model_dir, "model.weights.h5"), "a") as f:
        if "keras_bert_config" in f.attrs:
            del f.attrs["keras_bert_config"]
    edit_json(os.path.join(model_dir, "config.json"), num_layers=2)
    with pytest.raises(ValueError, match="6 encoder blocks; config.json says num_layers=2"):
        BertEncoder.from_pretrained(model_dir)


@pytest.mark.parametrize("text", ["[1, 2]", '"config"'])
def test_config_json_that_is_not_an_object_names_the_file(saved_dirs, text, tmp_path):
    import shutil

    model_dir = str(tmp_path / "m")
    shutil.copytree(saved_dirs["encoder"], model_dir)
    with open(os.path.join(model_dir, "config.json"), "w") as f:
        f.write(text)
    with pytest.raises(ValueError, match="config.json.*JSON object"):
        BertEncoder.from_pretrained(model_dir)


@pytest.mark.parametrize("text, match", [
    ("[1, 2]", "task.json must hold a JSON object"),
    ("{not json", "task.json is not valid JSON"),
    ('{"task": "classification", "lowercase": "false"}', "task.json: lowercase must be true"),
    ('{"task": "classification", "max_seq_length": "64"}', "task.json: max_seq_length must be"),
    ('{"task": "classification", "max_seq_length": true}', "task.json: max_seq_length must be"),
    ('{"task": "classification", "task_config": {"num_classes": 2, "label_names": "ab"}}',
     "task.json: task_config.label_names must be a list"),
    ('{"task": "classification", "task_config": []}', "task.json: task_config must be"),
    ('{"task": "classification", "task_config": {"num_classes": 2, "typo": 1}}',
     "task.json: task_config does not build"),
])
def test_bad_task_json_names_the_file_and_key(saved_dirs, tmp_path, text, match):
    import shutil

    model_dir = str(tmp_path / "m")
    shutil.copytree(saved_dirs["classifier"], model_dir)
    with open(os.path.join(model_dir, "task.json"), "w") as f:
        f.write(text)
    with pytest.raises(ValueError, match=match):
        load_model_dir(model_dir, BertEncoder)


@pytest.mark.parametrize("kwargs, name", [
    ({"config": tiny_config()}, "config"),
    ({"hiden_size": 7}, "hiden_size"),
])
def test_encoder_refuses_unknown_arguments(kwargs, name):
    with pytest.raises(ValueError, match=f"Unrecognized keyword arguments.*{name}"):
        BertEncoder(**kwargs)


def test_task_models_refuse_unknown_arguments():
    encoder = BertEncoder(**tiny_config(num_layers=1).to_dict())
    with pytest.raises(ValueError, match="BertPretrainer.*'mlm'"):
        BertPretrainer(encoder, mlm=True)
    with pytest.raises(ValueError, match="BertClassifier.*'num_clases'"):
        BertClassifier(encoder, num_classes=2, num_clases=3)
