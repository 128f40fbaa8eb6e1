"""Embeddings written for other programs (tools/predict.py --output): .npy and JSON Lines."""

import io
import json

import numpy as np
import pytest

from keras_bert.tasks.text_embedding.output import write_embeddings

TEXTS = ["a cat", "ünïcode \u2028 text", ""]
EMBEDDINGS = np.random.default_rng(0).normal(size=(3, 4)).astype("float32")


def test_npy_is_the_float32_array_in_input_order(tmp_path):
    path = str(tmp_path / "x.npy")
    summary = write_embeddings(TEXTS, EMBEDDINGS.astype("float64"), path)
    assert summary == f"wrote 3 embeddings of 4 floats to {path}"
    got = np.load(path)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, EMBEDDINGS)
    assert [p.name for p in tmp_path.iterdir()] == ["x.npy"]  # No staging file left.


def test_json_lines_keep_each_text_and_its_exact_floats(tmp_path):
    path = tmp_path / "x.jsonl"
    write_embeddings(TEXTS, EMBEDDINGS, str(path))
    stream = io.StringIO()
    assert write_embeddings(TEXTS, EMBEDDINGS, stdout=stream) is None
    for text in (path.read_text(encoding="utf-8"), stream.getvalue()):
        rows = [json.loads(line) for line in text.split("\n")[:-1]]
        assert [row["text"] for row in rows] == TEXTS
        np.testing.assert_array_equal(np.asarray([r["embedding"] for r in rows], "float32"),
                                      EMBEDDINGS)


def test_bad_outputs_are_named(tmp_path):
    with pytest.raises(ValueError, match="is a folder; name a file"):
        write_embeddings(TEXTS, EMBEDDINGS, str(tmp_path))
    with pytest.raises(ValueError, match=r"one embedding row per text: \[2, D\]"):
        write_embeddings(TEXTS[:2], EMBEDDINGS, str(tmp_path / "x.npy"))

