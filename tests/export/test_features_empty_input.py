"""extract_features on an empty input: an error naming the file, nothing written (issue 23)."""

import os

import pytest

from keras_bert.export.features import extract_features
from keras_bert.models import BertEncoder
from tests.conftest import run_tool, tiny_config



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
    status, _, stderr = run_tool("extract_features", "--model", model_dir / "model",
                                 "--input", model_dir / "empty.txt", "--output", out)
    assert status != 0
    assert f"No texts in {model_dir / 'empty.txt'}" in stderr
    assert "Traceback" not in stderr
    assert not out.exists()


def test_one_empty_line_is_one_text(model_dir):
    # "\n" is one (empty) line: one row, "[CLS] [SEP]"'s features.
    path = model_dir / "one_line.txt"
    path.write_text("\n")
    output = model_dir / "one.npy"
    assert extract_features(str(model_dir / "model"), str(path), str(output), verbose=False) == 1
    import numpy as np

    assert np.load(output).shape == (1, 16)
