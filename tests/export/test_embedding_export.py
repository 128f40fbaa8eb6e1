"""Text embedding exports: the raw-string SavedModel (embedding, similarity) and LiteRT,
equal to `BertTextEmbedder.predict` / `similarity`. (Its op set is checked in test_op_set.py.)"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.export import export_model
from keras_bert.tasks import BertTextEmbedder
from tests.conftest import ROOT, built_once
from tests.export.conftest import TAG_TEXTS, tiny_encoder, write_vocab

# Builds, reloads and converts an embedder export (SavedModel and LiteRT).
pytestmark = pytest.mark.slow

TEXTS = TAG_TEXTS + ["a good movie", "the cat was not bad", "Café! who jumped over the dog?"]


def build_embedding_export(root):
    """A tiny embedder (max pooling, a projection to 6) saved under `root`: its model dir,
    SavedModel export and vocab."""
    vocab_file = write_vocab(root)
    model = BertTextEmbedder(tiny_encoder(4), pooling="max", projection_dim=6)
    model_dir = os.path.join(root, "model")
    model.save_pretrained(model_dir, vocab_file=vocab_file, task_info={"max_seq_length": 24})
    export_dir = export_model(model_dir, os.path.join(root, "exports", "embedder"))
    return {"model_dir": model_dir, "export_dir": export_dir, "vocab_file": vocab_file}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    built = built_once(tmp_path_factory, "embedder", build_embedding_export)
    return {**built, "model": BertTextEmbedder.from_pretrained(built["model_dir"]),
            "loaded": tf.saved_model.load(built["export_dir"])}


def test_the_export_embeds_as_predict(built):
    model, loaded = built["model"], built["loaded"]
    expected = model.predict(TEXTS)
    assert expected.shape == (len(TEXTS), 6)
    for name in ("serving_default", "embedding"):
        out = loaded.signatures[name](text=tf.constant(TEXTS))
        assert sorted(out) == ["embedding"]
        np.testing.assert_allclose(out["embedding"].numpy(), expected, atol=1e-5)
    # One at a time (each padded to its own length) and an empty request.
    for text, row in zip(TEXTS, expected):
        np.testing.assert_allclose(loaded.embedding(tf.constant([text]))["embedding"][0], row,
                                   atol=1e-5)
    assert loaded.embedding(tf.zeros([0], tf.string))["embedding"].shape == (0, 6)


def test_the_similarity_signature_is_the_row_cosine(built):
    model, loaded = built["model"], built["loaded"]
    a, b = TEXTS, TEXTS[::-1]
    out = loaded.signatures["similarity"](text=tf.constant(a), text_b=tf.constant(b))
    vectors_a, vectors_b = model.predict(a), model.predict(b)
    cosine = np.sum(vectors_a * vectors_b, axis=1)  # Unit rows: the dot is the cosine.
    np.testing.assert_allclose(out["similarity"].numpy(), cosine, atol=1e-5)
    np.testing.assert_allclose(model.similarity(a, b, pairwise=True), cosine, atol=1e-5)
    with pytest.raises(tf.errors.InvalidArgumentError, match="same batch size"):
        loaded.similarity(tf.constant(a), tf.constant(b[:2]))


def test_export_info_names_the_module_and_its_settings(built):
    with open(os.path.join(built["export_dir"], "keras_bert_export.json")) as f:
        info = json.load(f)
    assert info["module"] == "TextEmbedderServingModule"
    assert (info["pooling"], info["normalize"], info["max_seq_length"]) == ("max", True, 24)
    assert info["signatures"]["embedding"]["outputs"]["embedding"] == {
        "dtype": "float32", "shape": [None, 6]}
    assert sorted(info["signatures"]["similarity"]["inputs"]) == ["text", "text_b"]


def test_a_rank_2_request_is_refused_by_name(built):
    with pytest.raises(tf.errors.InvalidArgumentError, match="text"):
        built["loaded"].signatures["embedding"](text=tf.constant([["a", "b"]]))


def test_a_process_without_keras_serves_the_export(built, tmp_path):
    # As on a TF Serving host: core TensorFlow and the tokenizer's op library only.
    code = textwrap.dedent("""
        import importlib.util, json, os, sys
        for name in ("keras", "keras_bert", "tf_keras"):
            sys.modules[name] = None
        import numpy as np
        import tensorflow as tf
        # The tokenizer's kernel, loaded as TF Serving links it (tensorflow_text's
        # Python package imports keras).
        tf.load_op_library(os.path.join(
            importlib.util.find_spec("tensorflow_text").submodule_search_locations[0],
            "python", "ops", "_fast_wordpiece_tokenizer.so"))
        loaded = tf.saved_model.load(sys.argv[1])
        texts = json.loads(sys.argv[2])
        out = loaded.signatures["serving_default"](text=tf.constant(texts))
        np.save(sys.argv[3], out["embedding"].numpy())
    """)
    out = str(tmp_path / "embedding.npy")
    run = subprocess.run([sys.executable, "-c", code, built["export_dir"], json.dumps(TEXTS), out],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    np.testing.assert_allclose(np.load(out), built["model"].predict(TEXTS), atol=1e-5)


def test_litert_export_embeds_as_predict_here_and_through_the_predict_tool(built, tmp_path):
    """The third kind LiteRT exports (the encoder's embed is the classifier's,
    test_tflite.py), run here and by tools/predict.py in its own process."""
    from keras_bert.export.tflite import run_tflite
    from keras_bert.export.tflite_runtime import litert_interpreter

    model = built["model"]
    lite = export_model(built["model_dir"], str(tmp_path / "lite"), format="tflite")
    with open(os.path.join(lite, "keras_bert_export.json")) as f:
        info = json.load(f)
    assert info["module"] == "TextEmbedderServingModule"
    assert info["ops"]["flex"] == []
    assert sorted(info["signatures"]) == ["embed", "serving_default"]
    interpreter = litert_interpreter(lite)
    expected = model.predict(TEXTS)
    batched = run_tflite(interpreter, TEXTS)["embedding"]
    np.testing.assert_allclose(batched, expected, atol=1e-5)
    single = np.concatenate([run_tflite(interpreter, [t])["embedding"] for t in TEXTS])
    np.testing.assert_allclose(single, expected, atol=1e-5)
    # As a user runs it: a fresh process, nothing on stderr (no TensorFlow or
    # LiteRT start-up notice) at default verbosity; an embedder's rows are JSON Lines.
    run = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "predict.py"),
                          "--model", lite, *TEXTS], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0 and run.stderr == "", run.stderr[-3000:]
    rows = [json.loads(line) for line in run.stdout.splitlines()]
    assert [row["text"] for row in rows] == TEXTS
    np.testing.assert_allclose([row["embedding"] for row in rows], expected, atol=1e-4)


@pytest.mark.slow
def test_the_real_model_export_equals_predict(tmp_path):
    from keras_bert.checkpoints.minilm import minilm_checkpoint_dir

    try:
        folder = minilm_checkpoint_dir()
    except FileNotFoundError as e:
        pytest.skip(str(e))
    model = BertTextEmbedder.from_pretrained(folder)
    export = export_model(model, str(tmp_path / "minilm"))
    loaded = tf.saved_model.load(export)
    texts = TEXTS + ["the quick brown fox " * 100]
    np.testing.assert_allclose(loaded.embedding(tf.constant(texts))["embedding"].numpy(),
                               model.predict(texts), atol=1e-5)
