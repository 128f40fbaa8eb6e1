"""Errors, atomic output and the command-line tool."""

import os

import numpy as np
import pytest

from keras_bert.checkpoints import CheckpointError, check_inputs, convert_checkpoint
from tests.checkpoints.conftest import (
    WORDS,
    assert_convert_fails,
    google_config,
    hf_folder,
    huggingface_config,
    random_weights,
    tiny_config,
    to_huggingface,
    write_google,
    write_huggingface,
    write_vocab,
)
from tests.conftest import tool_module

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _google(tmp_path, config_changes=None):
    config = tiny_config()
    values = google_config(config)
    values.update(config_changes or {})
    return write_google(str(tmp_path / "google"), random_weights(config), values)


def test_shape_mismatch_names_tensor_and_shapes(tmp_path):
    bad = np.zeros((33, 16), np.float32)  # intermediate_size is 32
    folder = hf_folder(tmp_path, tensor_changes={"bert.encoder.layer.1.intermediate.dense.weight": bad})
    assert_convert_fails(
        tmp_path,
        folder,
        r"bert\.encoder\.layer\.1\.intermediate\.dense\.weight: expected shape "
        r"\(32, 16\), found \(33, 16\)",
    )


def test_config_that_does_not_describe_the_weights(tmp_path):
    folder = _google(tmp_path, {"vocab_size": len(WORDS) + 5})
    assert_convert_fails(
        tmp_path,
        folder,
        rf"bert/embeddings/word_embeddings: expected shape \({len(WORDS) + 5}, 16\), "
        rf"found \({len(WORDS)}, 16\)",
    )


def test_config_with_fewer_layers_than_the_checkpoint(tmp_path):
    folder = _google(tmp_path, {"num_hidden_layers": 1})
    assert_convert_fails(tmp_path, folder, r"layer_1/.*num_hidden_layers=1")


def test_vocab_size_mismatch(tmp_path):
    folder = hf_folder(tmp_path)
    write_vocab(os.path.join(folder, "vocab.txt"), WORDS + ["extra"])
    assert_convert_fails(
        tmp_path,
        folder,
        rf"vocab\.txt has {len(WORDS) + 1} tokens, the config says "
        rf"vocab_size={len(WORDS)}.* has {len(WORDS)} rows",
    )


@pytest.mark.parametrize(
    "fmt, missing, match",
    [
        ("huggingface", "vocab.txt", r"Vocabulary file not found: .*vocab\.txt"),
        ("huggingface", "config.json", r"Config file not found: .*config\.json"),
        ("huggingface", "model.safetensors", r"No weights file in .*model\.safetensors"),
        ("google", "vocab.txt", r"Vocabulary file not found: .*vocab\.txt"),
        ("google", "bert_config.json", r"Config file not found: .*bert_config\.json"),
        ("google", "bert_model.ckpt.data-00000-of-00001",
         r"bert_model\.ckpt\.data-\*.*truncated, corrupt or missing"),
    ],
)
def test_missing_file(tmp_path, fmt, missing, match):
    folder = hf_folder(tmp_path) if fmt == "huggingface" else _google(tmp_path)
    os.remove(os.path.join(folder, missing))
    assert_convert_fails(tmp_path, folder, match, format=fmt)


def test_missing_encoder_tensor(tmp_path):
    config = tiny_config(hidden_act="gelu")
    tensors = to_huggingface(random_weights(config, heads=False), config)
    del tensors["bert.encoder.layer.0.attention.self.key.weight"]
    folder = write_huggingface(str(tmp_path / "hf"), tensors, huggingface_config(config))
    assert_convert_fails(
        tmp_path,
        folder,
        r"missing encoder weight\(s\) bert\.encoder\.layer\.0\.attention\.self\.key\.weight",
    )


def test_half_present_head_is_an_error(tmp_path):
    config = tiny_config(hidden_act="gelu")
    tensors = to_huggingface(random_weights(config), config)
    del tensors["cls.predictions.transform.dense.bias"]
    folder = write_huggingface(str(tmp_path / "hf"), tensors, huggingface_config(config))
    assert_convert_fails(tmp_path, folder, r"incomplete checkpoint.*cls/predictions/transform/dense/bias")


def _truncate(path):
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(size // 2)


def test_truncated_safetensors(tmp_path):
    folder = hf_folder(tmp_path)
    _truncate(os.path.join(folder, "model.safetensors"))
    assert_convert_fails(tmp_path, folder, r"Cannot read .*model\.safetensors.*truncated or corrupt")


@pytest.mark.parametrize("suffix", [".data-00000-of-00001", ".index"])
def test_truncated_google_checkpoint(tmp_path, suffix):
    folder = _google(tmp_path)
    _truncate(os.path.join(folder, "bert_model.ckpt" + suffix))
    assert_convert_fails(tmp_path, folder, r"bert_model\.ckpt.*(truncated|missing)")


@pytest.mark.slow  # Tens of seconds of the default tier's time (round 10).
def test_failed_check_writes_nothing(tmp_path):
    # Conversion and writing succeed; a zero tolerance fails the check, which
    # runs on the staged copy before it is renamed into place.
    assert_convert_fails(tmp_path, hf_folder(tmp_path), r"does not match.*max \|diff\|", check=True,
                  tolerance=0.0)


def test_existing_output_needs_overwrite(tmp_path):
    folder = hf_folder(tmp_path)
    out = tmp_path / "model"
    out.mkdir()
    (out / "keep.txt").write_text("fine-tuned work")
    # A folder that is not a model directory keras_bert wrote is never replaced.
    for overwrite in (False, True):
        with pytest.raises(ValueError, match="choose a new or empty folder"):
            convert_checkpoint(folder, str(out), overwrite=overwrite)
    assert (out / "keep.txt").read_text() == "fine-tuned work"
    (out / "keep.txt").unlink()
    convert_checkpoint(folder, str(out))
    # An earlier conversion is replaced with --overwrite only.
    with pytest.raises(CheckpointError, match="--overwrite"):
        convert_checkpoint(folder, str(out))
    convert_checkpoint(folder, str(out), overwrite=True)
    # task.json holds the text settings taken from the source.
    assert sorted(os.listdir(out)) == ["config.json", "model.weights.h5", "task.json",
                                       "vocab.txt"]
    assert sorted(os.listdir(tmp_path)) == ["hf", "model"]


def test_tool_help_explains_both_formats(capsys):
    with pytest.raises(SystemExit) as exit_info:
        tool_module("convert_checkpoint").main(["--help"])
    assert exit_info.value.code == 0
    help_text = capsys.readouterr().out
    for expected in ("bert_config.json", "bert_model.ckpt.index", "model.safetensors",
                     "pytorch_model.bin", "gelu_approx", "--check", "--format"):
        assert expected in help_text


def test_tool_converts_and_checks(tmp_path, capsys):
    folder = _google(tmp_path)
    out = str(tmp_path / "model")
    assert tool_module("convert_checkpoint").main(["--input", folder, "--output", out, "--check"]) == 0
    printed = capsys.readouterr().out
    assert "check vs numpy: max |diff| sequence_output=" in printed
    assert "loaded: encoder, pooler, mlm_head, nsp_head" in printed
    assert os.path.isfile(os.path.join(out, "model.weights.h5"))


def test_tool_reports_errors_without_traceback(tmp_path, capsys):
    folder = hf_folder(tmp_path)
    os.remove(os.path.join(folder, "vocab.txt"))
    assert tool_module("convert_checkpoint").main(["--input", folder, "--output", str(tmp_path / "model")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: Vocabulary file not found")
    assert not (tmp_path / "model").exists()


def test_checkpoint_without_bert_names(tmp_path):
    config = tiny_config()
    folder = write_google(
        str(tmp_path / "google"),
        {"model/dense/kernel": np.zeros((4, 4), np.float32)},
        google_config(config),
    )
    assert_convert_fails(tmp_path, folder, r"no BERT weights found \(found: model/dense/kernel\)")


def test_check_inputs_are_packed_as_the_model_packs_them(tmp_path):
    vocab = str(tmp_path / "vocab.txt")
    write_vocab(vocab)
    inputs = check_inputs(vocab)  # Singles and a pair, in one padded batch.
    ids = {word: i for i, word in enumerate(WORDS)}
    rows = [
        "[CLS] the quick brown fox jumps over the lazy dog . [SEP]",
        "[CLS] where is the train station ? [SEP] it is two blocks north of here . [SEP]",
        "[CLS] hello ! [SEP]",
    ]
    rows = [[ids[w] for w in row.split()] for row in rows]
    width = max(len(row) for row in rows)
    assert inputs["token_ids"].tolist() == [row + [0] * (width - len(row)) for row in rows]
    assert inputs["segment_ids"][1].tolist() == [0] * 8 + [1] * 9
    assert inputs["segment_ids"][[0, 2]].sum() == 0
    assert inputs["padding_mask"].sum(axis=1).tolist() == [len(row) for row in rows]
    assert all(v.dtype == np.int32 for v in inputs.values())
    write_vocab(vocab, [w for w in WORDS if w != "[MASK]"])
    with pytest.raises(CheckpointError, match=r"vocab\.txt.*'\[MASK\]' is missing"):
        check_inputs(vocab)
