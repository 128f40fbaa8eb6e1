"""The command-line tools on bad input: one line on stderr, a non-zero exit, no
traceback (unless --debug); or a correct result."""

import json
import os
import shutil

import pytest

from keras_bert.export.export import next_version, resolve_export_dir
from tests.conftest import run_tool  # In this process: (status, stdout, stderr).
from tests.conftest import tool_module

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def assert_one_line_error(status, err, match):
    assert status != 0
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and match in lines[0], err[-2000:]


@pytest.fixture
def exports(classifier_export, tmp_path):
    """A copy of exports/sentiment with its version 1."""
    base = str(tmp_path / "sentiment")
    shutil.copytree(os.path.dirname(classifier_export["export_dir"]), base)
    return base


def test_predict_with_an_empty_latest_version_says_so(exports, capsys):
    os.makedirs(os.path.join(exports, "2"))
    status = tool_module("predict").main(["--model", exports, "a good movie"])
    assert status == 1
    err = capsys.readouterr().err
    assert_one_line_error(status, err, f"{exports}/2 (the latest version")


def test_predict_ignores_files_and_non_ascii_digit_names(exports, capsys):
    open(os.path.join(exports, "7"), "w").close()
    os.makedirs(os.path.join(exports, "\u00b2"))
    assert tool_module("predict").main(["--model", exports, "a good movie"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith("a good movie\t")
    assert next_version(exports) == 2
    assert resolve_export_dir(os.path.join(exports, "\u00b2")).endswith("\u00b2/1")


def test_predict_keeps_blank_lines_of_input(exports, tmp_path, capsys):
    path = tmp_path / "texts.txt"
    path.write_text("a good movie\n\nthe film was bad\n   \n")
    assert tool_module("predict").main(["--model", exports, "--input", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 4
    assert out[0].startswith("a good movie\t") and out[2].startswith("the film was bad\t")
    assert out[1].startswith("\t") and out[3].startswith("   \t")


def test_predict_with_a_missing_input_file(exports, tmp_path):
    status, _, err = run_tool("predict", "--model", exports, "--input", tmp_path / "missing.txt")
    assert_one_line_error(status, err, "missing.txt")


def test_export_with_max_seq_length_0_in_task_json_is_an_error(classifier_export,
                                                               tmp_path, capsys):
    model_dir = str(tmp_path / "model")
    shutil.copytree(classifier_export["model_dir"], model_dir)
    with open(os.path.join(model_dir, "task.json")) as f:
        task = json.load(f)
    task["max_seq_length"] = 0
    with open(os.path.join(model_dir, "task.json"), "w") as f:
        json.dump(task, f)
    status = tool_module("export").main(["--model", model_dir, "--output", str(tmp_path / "out")])
    assert_one_line_error(status, capsys.readouterr().err, "max_seq_length must be >= 3")
    assert not os.path.exists(tmp_path / "out" / "1")


def test_create_pretraining_data_with_a_missing_corpus(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\n")
    status, _, err = run_tool("create_pretraining_data", tmp_path / "nope.txt",
                              "--output", tmp_path / "data", "--vocab-file", vocab)
    assert_one_line_error(status, err, "nope.txt")


def test_create_pretraining_data_with_a_blank_corpus_then_pretrain(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\n")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n   \n")
    status, _, err = run_tool("create_pretraining_data", corpus, "--output",
                              tmp_path / "data", "--vocab-file", vocab, "--max-seq-length", 16)
    assert_one_line_error(status, err, "gave no pretraining instances")
    status, _, err = run_tool("pretrain", "--train", tmp_path / "data", "--output",
                              tmp_path / "run", "--preset", "tiny", "--num-train-steps", 2)
    assert_one_line_error(status, err, "metadata.json not found")


def test_the_error_wrapper(capsys):
    run = tool_module("_cli").run

    def main(argv):
        raise KeyError("token_ids")

    assert run(main, ["--x"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: KeyError: 'token_ids'") and err.count("\n") == 1
    with pytest.raises(KeyError):
        run(main, ["--debug"])
    assert run(lambda argv: argv, ["--debug", "a"]) == ["a"]
