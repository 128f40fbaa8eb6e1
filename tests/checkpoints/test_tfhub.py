"""TF Hub / Kaggle BERT SavedModels and Model Garden TF2 checkpoints load in one call (issue 39).

The fixtures under tests/fixtures/tfhub/ were written by
tests/fixtures/makers/make_tfhub_fixtures.py with Model Garden itself (tf-models-official
2.20, tf_keras 2.21): `export_tfhub_lib.export_model` / `export_preprocessing`
(the code that made tfhub.dev's BERTs), a user's `hub.KerasLayer` model, and
`tf.train.Checkpoint`s of `BertEncoder`, `BertPretrainerV2` and
`BertClassifier`. expected.npz holds the outputs of each source's own runtime:
the SavedModel loaded with tf.saved_model.load, or Model Garden's Keras 2
model. This file imports neither tensorflow_hub, tf_keras nor Model Garden.
"""

import json
import os
import re
import shutil

import numpy as np
import pytest

from keras_bert.checkpoints import CheckpointError, build_model, detect_format, read_checkpoint
from keras_bert.checkpoints.convert import model_outputs
from keras_bert.models import BertEncoder
from keras_bert.tasks import BertClassifier
from keras_bert.text import BertPreprocessor
from tests.checkpoints.conftest import offline_caches, stored_fixture
from tests.conftest import ROOT, run_tool

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "tfhub")
# float32 TF vs float32 Keras with a fused QKV projection: ~3e-6 apart.
ATOL = 1e-5


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory):
    """One conversion cache for the module; the Hugging Face cache empty and offline."""
    with offline_caches(tmp_path_factory.mktemp("tfhub")) as root:
        yield root / "keras_bert_cache"


def _fixture(kind):
    return stored_fixture("tfhub", kind)


def _inputs(expected):
    return {k: expected[k] for k in ("token_ids", "segment_ids", "padding_mask")}


def _assert_encoder_matches(encoder, expected):
    out = encoder(_inputs(expected))
    real = expected["padding_mask"].astype(bool)
    np.testing.assert_allclose(np.asarray(out["sequence_output"])[real],
                               expected["sequence_output"][real], atol=ATOL)
    np.testing.assert_allclose(np.asarray(out["pooled_output"]), expected["pooled_output"],
                               atol=ATOL)
    return out


def _pair(tmp_path, encoder_vocab=None):
    """A folder holding the encoder and preprocess SavedModels (tfhub.dev's pair)."""
    folder = tmp_path / "bert_pair"
    shutil.copytree(os.path.join(FIXTURES, "encoder"), folder / "bert_en_uncased_L-2_H-32_A-4")
    shutil.copytree(os.path.join(FIXTURES, "preprocess"), folder / "bert_en_uncased_preprocess")
    if encoder_vocab is not None:
        (folder / "bert_en_uncased_L-2_H-32_A-4" / "assets" / "vocab.txt").write_text(
            encoder_vocab)
    return str(folder)


def test_tf_hub_encoder_matches_its_saved_model_signature():
    folder, expected = _fixture("encoder")
    assert detect_format(folder) == "tf_hub"
    encoder = BertEncoder.from_pretrained(folder)
    out = _assert_encoder_matches(encoder, expected)
    # encoder_outputs: one per layer, as the SavedModel's.
    real = expected["padding_mask"].astype(bool)
    np.testing.assert_allclose(np.asarray(out["encoder_outputs"][0])[real],
                               expected["encoder_outputs_0"][real], atol=ATOL)
    # The config from the weights' shapes; the tanh GELU from the saved Keras config.
    source = read_checkpoint(folder)
    assert (source.config.num_layers, source.config.num_heads, source.config.hidden_act) == (
        2, 4, "gelu_approx")
    # Casing from export_tfhub's do_lower_case variable.
    assert source.lowercase is True and "do_lower_case" in source.lowercase_from
    assert BertPreprocessor.from_pretrained(folder).tokenizer.lowercase is True


def test_encoder_with_its_preprocess_model_reads_vocabulary_casing_and_length(tmp_path):
    _, expected = _fixture("encoder")
    # The encoder's own vocab.txt is scrambled: only the preprocess model's gives these ids.
    with open(os.path.join(FIXTURES, "preprocess", "assets", "vocab.txt")) as f:
        tokens = f.read().split("\n")[:-1]
    folder = _pair(tmp_path, "\n".join(tokens[:5] + tokens[5:][::-1]) + "\n")
    assert detect_format(folder) == "tf_hub"
    preprocessor = BertPreprocessor.from_pretrained(folder)
    assert preprocessor.max_seq_length == 16 and preprocessor.tokenizer.lowercase is True
    texts = [str(t) for t in expected["text"]]
    packed = {k: np.asarray(v) for k, v in preprocessor(texts).items()}
    for row, mask in enumerate(expected["text_padding_mask"].astype(bool)):
        ours = packed["padding_mask"][row].astype(bool)
        np.testing.assert_array_equal(packed["token_ids"][row][ours],
                                      expected["text_token_ids"][row][mask])
    # Raw strings through the preprocess + encoder pipeline of TF Hub.
    encoder = BertEncoder.from_pretrained(folder)
    pooled = np.asarray(encoder(packed)["pooled_output"])
    np.testing.assert_allclose(pooled, expected["text_pooled_output"], atol=ATOL)
    pairs = preprocessor(([texts[1]], [str(expected["text_b"][1])]))
    np.testing.assert_allclose(np.asarray(encoder(pairs)["pooled_output"]),
                               expected["pair_pooled_output"][1:2], atol=ATOL)


def test_preprocess_casing_is_read_from_its_graph():
    from keras_bert.checkpoints import tf_hub

    # bert_*_uncased_preprocess lower-cases in its graph (CaseFoldUTF8); a graph
    # without that op (here the encoder's) reads as cased.
    assert tf_hub.read_preprocess(os.path.join(FIXTURES, "preprocess"))[1:] == (True, 16)
    assert tf_hub.read_preprocess(os.path.join(FIXTURES, "encoder"))[1:] == (False, None)


def test_user_model_with_a_keras_layer_bert_keeps_its_dense_head():
    folder, expected = _fixture("keras_layer_classifier")
    classifier = BertClassifier.from_pretrained(folder)
    assert classifier.num_classes == 3
    np.testing.assert_allclose(np.asarray(classifier(_inputs(expected))), expected["logits"],
                               atol=ATOL)


def test_user_model_with_an_unusual_head_loads_the_backbone_and_says_so(caplog):
    folder, _ = _fixture("keras_layer_mlp")
    _, encoder_expected = _fixture("encoder")  # The same hub.KerasLayer weights.
    with caplog.at_level("WARNING"):
        source = read_checkpoint(folder)
        build_model(source)
    lines = [r.getMessage() for r in caplog.records if "backbone only" in r.getMessage()]
    assert len(lines) == 1 and "hidden/kernel" in lines[0] and "relu" not in lines[0]
    assert source.head is None and "classifier/kernel" in source.unused
    _assert_encoder_matches(BertEncoder.from_pretrained(folder), encoder_expected)
    assert BertClassifier.from_pretrained(folder, num_classes=2).num_classes == 2


def test_model_garden_tf2_encoder_checkpoint_with_bert_config():
    folder, expected = _fixture("tf2_encoder")
    assert detect_format(folder) == "model_garden"
    assert detect_format(os.path.join(folder, "bert_model.ckpt")) == "model_garden"
    _assert_encoder_matches(BertEncoder.from_pretrained(folder), expected)


def test_model_garden_encoder_v2_checkpoint_named_under_its_scope():
    folder, expected = _fixture("tf2_encoder_v2")
    assert detect_format(folder) == "model_garden"
    source = read_checkpoint(folder)
    # Object paths of the subclassed encoder; names under "bert_encoder_v2/".
    assert "encoder/_embedding_layer/embeddings" in source.source_name(
        "bert/embeddings/word_embeddings")
    _assert_encoder_matches(BertEncoder.from_pretrained(folder), expected)


def test_model_garden_classifier_checkpoint_keeps_its_head():
    folder, expected = _fixture("tf2_classifier")
    classifier = BertClassifier.from_pretrained(folder)
    assert classifier.num_classes == 3
    np.testing.assert_allclose(np.asarray(classifier(_inputs(expected))), expected["logits"],
                               atol=ATOL)
    _assert_encoder_matches(classifier.encoder, expected)


def test_model_garden_pretrainer_with_params_yaml_keeps_its_mlm_head():
    folder, expected = _fixture("tf2_pretrainer")
    assert os.path.isfile(os.path.join(folder, "params.yaml"))
    model, report = build_model(read_checkpoint(folder))
    assert "mlm_head" in report.loaded_parts
    out = model_outputs(model, _inputs(expected))
    real = expected["padding_mask"].astype(bool)
    np.testing.assert_allclose(out["sequence_output"][real], expected["sequence_output"][real],
                               atol=ATOL)
    np.testing.assert_allclose(out["mlm_logits"][real], expected["mlm_logits"][real], atol=ATOL)


def test_legacy_model_garden_pretrainer_keeps_its_mlm_and_nsp_heads():
    folder, expected = _fixture("tf2_pretrainer_v1")
    model, report = build_model(read_checkpoint(folder))
    assert report.loaded_parts == ["encoder", "pooler", "mlm_head", "nsp_head"]
    out = model_outputs(model, _inputs(expected))
    real = expected["padding_mask"].astype(bool)
    np.testing.assert_allclose(out["mlm_logits"][real], expected["mlm_logits"][real], atol=ATOL)
    np.testing.assert_allclose(out["nsp_logits"], expected["nsp_logits"], atol=ATOL)


def test_convert_tool_checks_a_user_classifier_against_its_saved_model(tmp_path):
    status, out, err = run_tool("convert_checkpoint", "--input",
                                os.path.join(FIXTURES, "keras_layer_classifier"), "--output",
                                tmp_path / "converted", "--check")
    assert status == 0, err
    # --check runs the SavedModel itself (tf.saved_model.load), as hub.KerasLayer would.
    assert "Converted tf_hub checkpoint" in out and "check vs the SavedModel" in out
    diff = float(re.search(r"head_logits=([0-9.e+-]+)", out).group(1))
    assert diff < ATOL
    task = json.loads((tmp_path / "converted" / "task.json").read_text())
    assert task["lowercase"] is True and task["task_config"]["num_classes"] == 3


@pytest.mark.slow  # an export, a fit and a finetune.py run: ~10-20 s.
def test_finetune_and_raw_string_export_of_a_tf_hub_classifier(tmp_path):
    from keras_bert.export.predict import load_export, run_signature

    folder, _ = _fixture("keras_layer_classifier")
    texts = ["The quick brown fox jumps over the lazy dog.", "Where is the train station?",
             "Hello!", "What a great movie, I love this film!"]
    classifier = BertClassifier.from_pretrained(folder)
    logits = np.asarray(classifier(texts))
    # --no-tune: the sub-batch tuning (timed rounds of up to 20 s, longest on a loaded
    # machine) is the same for every classifier; tests/export/test_export_tuning.py and
    # README.md's export command run it.
    status, out, err = run_tool("export", "--model", folder, "--output", tmp_path / "exports",
                                "--no-tune")
    assert status == 0, err
    outputs = run_signature(load_export(str(tmp_path / "exports" / "1")), {"text": texts})
    softmax = np.exp(logits - logits.max(-1, keepdims=True))
    np.testing.assert_allclose(outputs["probabilities"], softmax / softmax.sum(-1, keepdims=True),
                               atol=1e-5)
    before = [np.array(w) for w in classifier.weights]
    history = classifier.fit(texts, [0, 1, 2, 1], batch_size=2, epochs=1, verbose=0).history
    assert np.isfinite(history["loss"]).all()
    assert any(not np.allclose(a, np.asarray(b)) for a, b in zip(before, classifier.weights))

    # tools/finetune.py --model on the encoder + preprocess pair: its sequence length carries over.
    import csv

    with open(tmp_path / "train.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label"])
        writer.writerows([(text, str(i % 2)) for i, text in enumerate(texts * 2)])
    status, out, err = run_tool("finetune", "--task", "classification", "--model",
                                _pair(tmp_path), "--output", tmp_path / "tuned", "--train",
                                tmp_path / "train.csv", "--eval-fraction", "0.25", "--epochs",
                                "1", "--batch-size", "2", "--jit-compile", "off")
    assert status == 0, err
    task = json.loads((tmp_path / "tuned" / "task.json").read_text())
    assert task["task_config"]["num_classes"] == 2 and task["max_seq_length"] == 16


def test_tf1_hub_module_is_refused_with_the_way_out(tmp_path):
    folder = tmp_path / "module"
    folder.mkdir()
    (folder / "tfhub_module.pb").write_bytes(b"")
    (folder / "saved_model.pb").write_bytes(b"")
    with pytest.raises(CheckpointError, match="TF1 Hub module.*TF2 SavedModel"):
        read_checkpoint(str(folder))


def test_saved_model_without_variables_is_refused(tmp_path):
    folder = tmp_path / "frozen"
    shutil.copytree(os.path.join(FIXTURES, "encoder"), folder)
    shutil.rmtree(folder / "variables")
    with pytest.raises(CheckpointError, match="no variables/variables.index.*Download"):
        read_checkpoint(str(folder))


def test_saved_model_that_is_not_bert_names_what_it_found(tmp_path):
    import tensorflow as tf

    module = tf.Module()
    module.table = tf.Variable(tf.zeros([3, 4]), name="some_table")
    tf.saved_model.save(module, str(tmp_path / "other"))
    with pytest.raises(CheckpointError, match="not a Model Garden BERT encoder.*some_table"):
        read_checkpoint(str(tmp_path / "other"))


def test_tf2_checkpoint_without_config_names_both_files(tmp_path):
    folder = tmp_path / "ckpt"
    shutil.copytree(os.path.join(FIXTURES, "tf2_encoder"), folder)
    os.remove(folder / "bert_config.json")
    with pytest.raises(CheckpointError, match="bert_config.json.*params.yaml"):
        read_checkpoint(str(folder))


def test_pre_layer_norm_experiment_is_refused(tmp_path):
    folder = tmp_path / "ckpt"
    shutil.copytree(os.path.join(FIXTURES, "tf2_pretrainer"), folder)
    text = (folder / "params.yaml").read_text()
    assert "norm_first: false" in text
    (folder / "params.yaml").write_text(text.replace("norm_first: false", "norm_first: true"))
    with pytest.raises(CheckpointError, match="norm_first=True.*post-LayerNorm"):
        read_checkpoint(str(folder))


def test_two_encoders_in_one_folder_are_refused(tmp_path):
    folder = tmp_path / "two"
    for name in ("a", "b"):
        shutil.copytree(os.path.join(FIXTURES, "encoder"), folder / name)
    with pytest.raises(CheckpointError, match=r"\['a', 'b'\].*one BERT encoder"):
        read_checkpoint(str(folder))


def test_partitioned_variables_are_refused_by_name(tmp_path):
    import tensorflow as tf

    folder = tmp_path / "sharded"
    shutil.copytree(os.path.join(FIXTURES, "tf2_encoder"), folder)
    for path in folder.glob("bert_model.ckpt*"):
        path.unlink()
    module = tf.Module()
    module.shards = [tf.Variable(tf.zeros([30, 32]), name=f"word_embeddings/embeddings/part_{i}")
                     for i in range(2)]
    tf.train.Checkpoint(encoder=module).write(str(folder / "bert_model.ckpt"))
    assert detect_format(str(folder)) == "model_garden"
    with pytest.raises(CheckpointError, match="embeddings/part_0 is a partitioned.*save it again"):
        read_checkpoint(str(folder))


def test_a_keras_bert_export_is_still_refused_as_an_export(tmp_path):
    folder = tmp_path / "exports" / "sentiment" / "1"
    shutil.copytree(os.path.join(FIXTURES, "encoder"), folder)
    (folder / "keras_bert_export.json").write_text("{}")
    for path in (folder, folder.parent):
        with pytest.raises(ValueError, match="is an export"):
            BertEncoder.from_pretrained(str(path))
