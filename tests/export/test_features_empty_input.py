"""extract_features on an empty input: an error naming the file, nothing written (issue 23)."""

import os
import subprocess
import sys

import pytest

from keras_bert.export.features import extract_features
from keras_bert.models import BertEncoder
from tests.models.conftest import tiny_config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("features_empty")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat"]
    (tmp / "vocab.txt").write_text("\n".join(vocab) + "\n")
    encoder = BertEncoder(**tiny_config(vocab_size=len(vocab), num_layers=1,
                                        max_position_embeddings=16).to_dict())
    encoder.save_pretrained(tmp / "model", vocab_file=str(tmp / "vocab.txt"))
    (tmp / "empty.txt").write_bytes(b"")
    return tmp


@pytest.mark.parametrize("name", ["out.npy", "out.tfrecord"])
def test_empty_input_is_an_error_and_writes_nothing(model_dir, name):
    output = model_dir / name
    with pytest.raises(ValueError, match=f"^No texts in {model_dir / 'empty.txt'}: the file is "
                                         f"empty"):
        extract_features(str(model_dir / "model"), str(model_dir / "empty.txt"), str(output),
                         verbose=False)
    assert not output.exists()
    assert not os.path.exists(str(output) + ".partial")


def test_cli_says_no_texts_in_one_line(model_dir):
    out = model_dir / "cli.npy"
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "tools", "extract_features.py"),
         "--model", str(model_dir / "model"), "--input", str(model_dir / "empty.txt"),
         "--output", str(out)],
        capture_output=True, text=True, timeout=300, env=dict(os.environ, PYTHONPATH=ROOT))
    assert result.returncode != 0
    assert f"No texts in {model_dir / 'empty.txt'}" in result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()


def test_one_empty_line_is_one_text(model_dir):
    # "\n" is one (empty) line: one row, "[CLS] [SEP]"'s features.
    path = model_dir / "one_line.txt"
    path.write_text("\n")
    output = model_dir / "one.npy"
    assert extract_features(str(model_dir / "model"), str(path), str(output), verbose=False) == 1
    import numpy as np

    assert np.load(output).shape == (1, 16)
