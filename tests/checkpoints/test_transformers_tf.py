"""transformers-TF tf_model.h5 folders load in one call (issue 26).

The fixtures under tests/fixtures/transformers_tf/ were written by
tests/fixtures/makers/make_tf_h5_fixtures.py with transformers' own TFBertModel and
TFBertFor{SequenceClassification,TokenClassification,QuestionAnswering}
(save_pretrained), together with those models' outputs (expected.npz). So
this file needs neither transformers nor tf_keras, and the ground truth is
the TF model itself, not keras_bert's reading of its names.
"""

import json
import os
import shutil

import h5py
import numpy as np
import pytest

from keras_bert.checkpoints import CheckpointError, build_model, detect_format, read_checkpoint
from keras_bert.checkpoints.convert import model_outputs
from keras_bert.models import BertEncoder
from keras_bert.tasks import BertClassifier, BertSpanLabeler, BertTokenClassifier
from keras_bert.text import BertPreprocessor
from tests.checkpoints.conftest import (
    huggingface_config,
    offline_caches,
    random_weights,
    stored_fixture,
    tiny_config,
    to_huggingface,
    write_huggingface,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "transformers_tf")
# float32 TF vs float32 Keras with a fused QKV projection: ~2e-6 apart.
ATOL = 1e-5


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory):
    """One conversion cache for the module; the Hugging Face cache empty and offline."""
    with offline_caches(tmp_path_factory.mktemp("tf_h5")) as root:
        yield root / "keras_bert_cache"


def _fixture(kind):
    return stored_fixture("transformers_tf", kind)


def _inputs(expected, prefix=""):
    return {k: expected[prefix + k] for k in ("token_ids", "segment_ids", "padding_mask")}


def _assert_same_tokens(preprocessor, texts, expected):
    """Our in-graph tokenizer gives the ids transformers' tokenizer gave."""
    packed = {k: np.asarray(v) for k, v in preprocessor(texts).items()}
    for row, mask in enumerate(expected["text_padding_mask"].astype(bool)):
        ours = packed["padding_mask"][row].astype(bool)
        np.testing.assert_array_equal(packed["token_ids"][row][ours],
                                      expected["text_token_ids"][row][mask])
        np.testing.assert_array_equal(packed["segment_ids"][row][ours],
                                      expected["text_segment_ids"][row][mask])


def _texts(expected):
    """(texts, texts_b) as lists of str; text_b is "" for single texts."""
    return [str(t) for t in expected["text"]], [str(b) for b in expected["text_b"]]


def _copy(kind, tmp_path):
    folder = str(tmp_path / kind)
    shutil.copytree(os.path.join(FIXTURES, kind), folder)
    return folder


def test_tf_bert_model_loads_as_encoder_with_its_casing_and_length():
    folder, expected = _fixture("model")
    assert detect_format(folder) == "transformers_tf"
    encoder = BertEncoder.from_pretrained(folder)
    for prefix in ("", "text_"):
        out = encoder(_inputs(expected, prefix))
        real = expected[prefix + "padding_mask"].astype(bool)
        np.testing.assert_allclose(np.asarray(out["sequence_output"])[real],
                                   expected[prefix + "sequence_output"][real], atol=ATOL)
        np.testing.assert_allclose(np.asarray(out["pooled_output"]),
                                   expected[prefix + "pooled_output"], atol=ATOL)
    # Casing from tokenizer_config.json, the length from config.json.
    preprocessor = BertPreprocessor.from_pretrained(folder)
    assert preprocessor.tokenizer.lowercase is True and preprocessor.max_seq_length == 32
    singles = [str(t) for t, b in zip(expected["text"], expected["text_b"]) if not b]
    _assert_same_tokens(preprocessor, singles, {
        k: v[:len(singles)] for k, v in expected.items() if k.startswith("text_")})


def test_tf_sequence_classifier_keeps_head_and_labels_and_takes_raw_strings():
    folder, expected = _fixture("sequence_classification")
    classifier = BertClassifier.from_pretrained(folder)
    assert classifier.label_names == ["negative", "neutral", "positive"]
    np.testing.assert_allclose(np.asarray(classifier(_inputs(expected))), expected["logits"],
                               atol=ATOL)
    # Raw strings in (the attached preprocessor): the two single texts, then the pair.
    texts, texts_b = _texts(expected)
    np.testing.assert_allclose(np.asarray(classifier(texts[:2])), expected["text_logits"][:2],
                               atol=ATOL)
    np.testing.assert_allclose(np.asarray(classifier((texts[2:], texts_b[2:]))),
                               expected["text_logits"][2:], atol=ATOL)


@pytest.mark.slow  # Keras predict traces its function: ~6 s a call on 2 cores.
def test_tf_sequence_classifier_predict_on_raw_strings():
    folder, expected = _fixture("sequence_classification")
    classifier = BertClassifier.from_pretrained(folder)
    texts, texts_b = _texts(expected)
    np.testing.assert_allclose(classifier.predict(texts[:2], verbose=0),
                               expected["text_logits"][:2], atol=ATOL)
    np.testing.assert_allclose(classifier.predict((texts[2:], texts_b[2:]), verbose=0),
                               expected["text_logits"][2:], atol=ATOL)


def test_tf_token_classifier_keeps_head_labels_and_cased_tokenizer():
    folder, expected = _fixture("token_classification")
    tagger = BertTokenClassifier.from_pretrained(folder)
    assert tagger.label_names == ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    # A cased model (do_lower_case false): "John" keeps its own id.
    assert tagger.preprocessor.tokenizer.lowercase is False
    texts, texts_b = _texts(expected)
    _assert_same_tokens(tagger.preprocessor, texts[:2], {
        k: v[:2] for k, v in expected.items() if k.startswith("text_")})
    _assert_same_tokens(tagger.preprocessor, (texts[2:], texts_b[2:]), {
        k: v[2:] for k, v in expected.items() if k.startswith("text_")})
    for prefix in ("", "text_"):
        real = expected[prefix + "padding_mask"].astype(bool)
        np.testing.assert_allclose(np.asarray(tagger(_inputs(expected, prefix)))[real],
                                   expected[prefix + "logits"][real], atol=ATOL)


def test_tf_question_answering_loads_as_span_labeler(cache):
    folder, expected = _fixture("question_answering")
    qa = BertSpanLabeler.from_pretrained(folder)
    questions, contexts = _texts(expected)
    _assert_same_tokens(qa.preprocessor, (questions, contexts), expected)
    for prefix in ("", "text_"):
        out = qa(_inputs(expected, prefix))
        real = expected[prefix + "padding_mask"].astype(bool)
        for key in ("start_logits", "end_logits"):
            np.testing.assert_allclose(np.asarray(out[key])[real],
                                       expected[prefix + key][real], atol=ATOL)
        assert np.all(np.asarray(out["start_logits"])[~real] < -1e8)
    (converted,) = [n for n in os.listdir(cache / "converted")
                    if n.startswith("question_answering-")]
    task = json.loads((cache / "converted" / converted / "task.json").read_text())
    assert task["task"] == "span_qa" and task["lowercase"] is True


def test_tf_pretraining_model_keeps_its_mlm_and_nsp_heads():
    folder, expected = _fixture("pretraining")
    model, report = build_model(read_checkpoint(folder))
    assert report.loaded_parts == ["encoder", "pooler", "mlm_head", "nsp_head"]
    # The MLM head lists the word embeddings again (tied): read once, the copy skipped.
    assert len(report.ignored) == 5 and report.unused == []
    assert all(why.startswith("the same weight as tf_bert_for_pre_training/bert/embeddings/")
               for why in report.ignored.values())
    out = model_outputs(model, _inputs(expected))
    real = expected["padding_mask"].astype(bool)
    np.testing.assert_allclose(out["mlm_logits"][real], expected["mlm_logits"][real],
                               rtol=ATOL, atol=ATOL)
    np.testing.assert_allclose(out["nsp_logits"], expected["nsp_logits"], atol=ATOL)


def test_convert_tool_takes_a_tf_h5_folder_and_checks_it(tmp_path, capsys):
    import sys

    sys.path.insert(0, os.path.join(ROOT, "tools"))
    try:
        import convert_checkpoint as tool
    finally:
        sys.path.pop(0)
    out = tmp_path / "converted"
    folder = os.path.join(FIXTURES, "sequence_classification")
    assert tool.main(["--input", os.path.join(folder, "tf_model.h5"), "--output", str(out),
                      "--check"]) == 0
    printed = capsys.readouterr().out
    assert "Converted transformers_tf checkpoint" in printed
    assert "check vs numpy" in printed and "labels: negative, neutral, positive" in printed
    task = json.loads((out / "task.json").read_text())
    assert task["task"] == "classification" and task["lowercase"] is True


def test_pytorch_weights_are_preferred_when_a_folder_has_both(tmp_path):
    folder = _copy("model", tmp_path)
    assert detect_format(folder) == "transformers_tf"
    open(os.path.join(folder, "model.safetensors"), "wb").close()
    assert detect_format(folder) == "huggingface"


@pytest.mark.parametrize("damage", ["truncated", "not_hdf5"])
def test_damaged_h5_says_which_file_and_what_to_do(tmp_path, damage):
    folder = _copy("model", tmp_path)
    weights = os.path.join(folder, "tf_model.h5")
    data = open(weights, "rb").read()
    with open(weights, "wb") as f:
        f.write(data[: len(data) // 2] if damage == "truncated" else b"not an h5 file\n" * 64)
    with pytest.raises(CheckpointError,
                       match=r"Cannot read .*tf_model\.h5: .*truncated or corrupt; download it "
                             r"again, or save it again with save_pretrained"):
        BertEncoder.from_pretrained(folder)


def test_sharded_tf_h5_is_refused_with_the_way_out(tmp_path):
    folder = _copy("model", tmp_path)
    os.rename(os.path.join(folder, "tf_model.h5"), os.path.join(folder, "tf_model-00001.h5"))
    with open(os.path.join(folder, "tf_model.h5.index.json"), "w") as f:
        json.dump({"weight_map": {}}, f)
    with pytest.raises(CheckpointError, match=r"sharded tf_model\.h5\.index\.json.*"
                                              r"max_shard_size"):
        read_checkpoint(folder)


def test_keras3_weights_file_is_not_taken_for_a_tf_h5(tmp_path):
    folder = _copy("model", tmp_path)
    weights = os.path.join(folder, "tf_model.h5")
    os.remove(weights)
    with h5py.File(weights, "w") as f:
        f.create_group("layers").create_dataset("vars", data=np.zeros(3))
    with pytest.raises(CheckpointError, match=r"not a Keras 2 weights file .*no layer_names"):
        read_checkpoint(folder)


def test_non_bert_config_is_refused_by_name(tmp_path):
    folder = _copy("sequence_classification", tmp_path)
    path = os.path.join(folder, "config.json")
    with open(path) as f:
        values = json.load(f)
    # No model_type: the class name says DistilBERT, whose tf_model.h5 is not read
    # (its PyTorch weights are: tests/checkpoints/test_family.py).
    del values["model_type"]
    values["architectures"] = ["TFDistilBertForSequenceClassification"]
    with open(path, "w") as f:
        json.dump(values, f)
    with pytest.raises(CheckpointError,
                       match=r"a distilbert tf_model\.h5; keras_bert reads BERT's variants "
                             r"from their PyTorch weights"):
        BertClassifier.from_pretrained(folder)
    # A config that says BERT but names a DistilBERT class: refused by the class name.
    with open(path, "w") as f:
        json.dump({**values, "model_type": "bert"}, f)
    with pytest.raises(CheckpointError,
                       match=r"is a DistilBERT checkpoint \(architectures "
                             r"'TFDistilBertForSequenceClassification'\), not BERT"):
        BertClassifier.from_pretrained(folder)
    with open(path, "w") as f:
        json.dump({**values, "model_type": "albert",
                   "architectures": ["AlbertForSequenceClassification"]}, f)
    with pytest.raises(CheckpointError, match=r"is a ALBERT checkpoint .*is not BERT"):
        BertClassifier.from_pretrained(folder)


def _reshape_weight(weights_file, stored, shape):
    """Replaces one weight of an h5 file with zeros of another shape."""
    with h5py.File(weights_file, "r+") as f:
        group = f[stored.split("/")[1]]  # The layer's group: "bert", "classifier".
        del group[stored]
        group.create_dataset(stored, data=np.zeros(shape, np.float32))


def test_wrong_shaped_weight_is_named(tmp_path):
    folder = _copy("model", tmp_path)
    stored = "tf_bert_model/bert/encoder/layer_._1/intermediate/dense/kernel:0"
    _reshape_weight(os.path.join(folder, "tf_model.h5"), stored, (32, 60))
    with pytest.raises(CheckpointError,
                       match=rf"{stored}: expected shape \(32, 64\), found \(32, 60\)"):
        read_checkpoint(folder)


def test_wrong_shaped_head_is_named(tmp_path):
    folder = _copy("sequence_classification", tmp_path)
    stored = "tf_bert_for_sequence_classification/classifier/kernel:0"
    _reshape_weight(os.path.join(folder, "tf_model.h5"), stored, (16, 3))
    with pytest.raises(CheckpointError,
                       match=rf"{stored}, .*bias:0: found shapes \(16, 3\) and \(3,\).*"
                             r"needs \[32, num_labels\]"):
        read_checkpoint(folder)


def test_hub_repository_with_only_tf_weights_downloads_tf_model_h5(tmp_path, monkeypatch):
    import huggingface_hub

    from keras_bert.checkpoints.hub import hub_snapshot

    monkeypatch.delenv("HF_HUB_OFFLINE")
    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    asked = []

    def fake_download(repo_id, cache_dir, allow_patterns, local_files_only):
        # A repository pushed from TFBertForSequenceClassification: no PyTorch weights.
        asked.append(allow_patterns)
        for name in allow_patterns:
            if name in ("config.json", "tf_model.h5"):
                (snapshot / name).write_text("")
        return str(snapshot)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_download)
    assert hub_snapshot("org/tf-only-bert") == str(snapshot)
    assert "tf_model.h5" in asked[-1] and "tf_model.h5" not in asked[0]
    assert (snapshot / "tf_model.h5").exists()


def test_pytorch_question_answering_head_is_read_too(tmp_path):
    # The head code is shared: a PyTorch BertForQuestionAnswering keeps its
    # qa_outputs ([2, hidden] Linear: start, end) the same way.
    config = tiny_config(hidden_act="gelu")
    rng = np.random.default_rng(11)
    qa_w = rng.normal(0, 0.5, (2, config.hidden_size)).astype(np.float32)
    qa_b = rng.normal(0, 0.5, (2,)).astype(np.float32)
    values = {**huggingface_config(config), "architectures": ["BertForQuestionAnswering"],
              "id2label": {"0": "LABEL_0", "1": "LABEL_1"}}
    tensors = {**to_huggingface(random_weights(config, heads=False), config),
               "qa_outputs.weight": qa_w, "qa_outputs.bias": qa_b}
    write_huggingface(str(tmp_path / "hf"), tensors, values)
    source = read_checkpoint(str(tmp_path / "hf"))
    assert source.head["task"] == "span_qa" and source.head["label_names"] is None
    np.testing.assert_array_equal(source.head["kernel"], qa_w.T)
    np.testing.assert_array_equal(source.head["bias"], qa_b)
    assert source.unused == [] and source.warnings == []
