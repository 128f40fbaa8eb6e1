"""The command-line tools on bad input: one line on stderr, a non-zero exit, no
traceback (unless --debug); or a correct result."""

import json
import os
import shutil
import threading

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


# === Inputs as users give them: any bytes, pipes (issue 46 item 8) ===

def _pipe(tmp_path, data):
    """A named pipe that yields `data` once to its first reader, as `<(zcat ...)` does."""
    path = str(tmp_path / "pipe")
    os.mkfifo(path)

    def write():
        try:
            with open(path, "wb") as f:
                f.write(data)
        except BrokenPipeError:  # A tool that refuses a pipe closes it unread.
            pass

    threading.Thread(target=write, daemon=True).start()
    return path


def test_predict_refuses_an_argument_that_is_not_utf8_as_a_file_is_refused(exports):
    status, _, err = run_tool("predict", "--model", exports, "fine", os.fsdecode(b"caf\xe9"))
    assert_one_line_error(status, err, "text 2 (b'caf\\xe9'): byte 0xe9 on line 1 is not UTF-8")


@pytest.mark.parametrize("data, match", [(b"\x00" * 200, "is a binary file (it holds NUL bytes)"),
                                         (bytes(range(256)) * 4, "is a binary file")])
def test_predict_refuses_a_binary_input_file_as_every_tool_does(exports, tmp_path, data, match):
    path = tmp_path / "texts.bin"
    path.write_bytes(data)
    status, _, err = run_tool("predict", "--model", exports, "--input", path)
    assert_one_line_error(status, err, f"{path} {match}")
    assert "UTF-16" not in err


def test_predict_reads_a_pipe_once_and_answers_every_line(exports, tmp_path, capsys):
    path = _pipe(tmp_path, b"a good movie\nthe film was bad\n")
    assert tool_module("predict").main(["--model", exports, "--input", path]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[0] for line in out] == ["a good movie", "the film was bad"]


def test_create_pretraining_data_on_a_pipe_asks_for_a_seekable_file(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\n")
    pipe = _pipe(tmp_path, b"a a a\n")
    status, _, err = run_tool("create_pretraining_data", pipe, "--output", tmp_path / "data",
                              "--vocab-file", vocab)
    assert_one_line_error(status, err, f"{pipe} is a pipe: the input corpus file needs a "
                                       f"seekable file")
    assert not os.path.exists(tmp_path / "data")


def test_extract_features_on_a_pipe_asks_for_a_seekable_file(tiny_model_dir, tmp_path):
    pipe = _pipe(tmp_path, b"a text\n")
    status, _, err = run_tool("extract_features", "--model", tiny_model_dir, "--input", pipe,
                              "--output", tmp_path / "f.npy")
    assert_one_line_error(status, err, f"{pipe} is a pipe: the input file needs a seekable file")
    assert not os.path.exists(tmp_path / "f.npy")


def test_finetune_trains_from_a_pipe(tiny_model_dir, tmp_path):
    rows = [f"{w} movie,{'pos' if w in ('good', 'great') else 'neg'}"
            for w in ("good", "bad", "great", "awful") * 5]
    pipe = _pipe(tmp_path, ("text,label\n" + "\n".join(rows) + "\n").encode())
    status, out, err = run_tool("finetune", "--task", "classification", "--model", tiny_model_dir,
                                "--train", pipe, "--format", "csv", "--eval-fraction", "0.2",
                                "--epochs", "1", "--output", tmp_path / "out")
    assert status == 0, err[-2000:]
    assert f"{pipe}: kept 20 of 20 rows" in out + err
    assert os.path.isfile(tmp_path / "out" / "model.weights.h5")


def test_classification_reader_reads_a_pipe_once(tmp_path):
    from keras_bert.tasks.classification.reader import read_classification_file

    pipe = _pipe(tmp_path, b"text,label\ngood,pos\nbad,neg\n")
    examples = read_classification_file(pipe, file_format="csv")
    assert examples.texts == ["good", "bad"] and examples.labels == ["pos", "neg"]


def test_multi_label_reader_reads_a_pipe_once(tmp_path):
    from keras_bert.tasks.multi_label_classification.reader import read_multi_label_file

    pipe = _pipe(tmp_path, b'{"text": "a", "label": [0, 1, 1]}\n{"text": "b", "label": [1, 0, 0]}\n')
    examples = read_multi_label_file(pipe, file_format="jsonl")
    assert examples.texts == ["a", "b"] and examples.labels == [["1", "2"], ["0"]]


def test_a_header_only_csv_says_it_has_no_rows(tmp_path):
    from keras_bert.tasks.classification.reader import read_classification_file

    path = tmp_path / "train.csv"
    path.write_text("text,label\n\n")
    with pytest.raises(ValueError, match=f"{path} has a header and no rows"):
        read_classification_file(str(path))


# === tools/predict.py on a model folder, and --output (issue 45 item 6) ===

@pytest.mark.parametrize("which", ["classifier", "tagger"])
def test_predict_on_a_model_folder_answers_as_its_export(which, classifier_export, task_exports,
                                                         tmp_path, capsys):
    model_dir, export = ((classifier_export["model_dir"], classifier_export["export_dir"])
                         if which == "classifier" else
                         (os.path.join(task_exports["root"], "tagger"),
                          task_exports["tagger_export"]))
    texts = ["a good movie", "the film was bad"]
    predict = tool_module("predict").main
    assert predict(["--model", export, *texts]) == 0
    from_export = capsys.readouterr().out.splitlines()
    out = tmp_path / "out.tsv"
    assert predict(["--model", model_dir, *texts, "--output", str(out)]) == 0
    assert f"wrote 2 lines to {out}" in capsys.readouterr().err
    assert out.read_text().splitlines() == from_export
    assert len(from_export) == 2 and from_export[0].startswith("a good movie\t")
