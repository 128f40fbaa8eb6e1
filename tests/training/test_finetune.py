"""tools/finetune.py end to end (in this process) on hand-made data with a tiny model, and the loop's rules
(its signals: tests/training/test_talking.py); its ram:// output and tools/export.py reading it
(issue 38 item 4)."""

import json
import os
import secrets

import numpy as np
import pytest

from keras_bert import storage
from keras_bert.tasks import BertClassifier, BertSpanLabeler, BertTokenClassifier
from keras_bert.tasks.classification.options import ClassificationOptions
from keras_bert.training import finetune as finetune_lib
from tests.conftest import run_tool as tool_in_process
from tests.training.finetune_fixtures import (
    CONLL_TEXT,
    sentiment_rows,
    squad_json,
    write_json,
    write_sentiment_splits,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "finetune.py")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, tiny_model_dir):
    root = tmp_path_factory.mktemp("finetune")
    write_sentiment_splits(root, 200, 40, model_dir=tiny_model_dir)
    return root


def run_tool(*args):
    """tools/finetune.py in this process (tests.conftest.run_tool); returns (status, output)."""
    code, out, err = tool_in_process("finetune", "--jit-compile", "off", *args)
    return code, out + err


def read_task_json(model_dir):
    with open(os.path.join(model_dir, "task.json"), encoding="utf-8") as f:
        return json.load(f)


def _ram_csv(path, rows):
    storage.write_bytes(path, ("text,label\n" + "".join(f"{t},{y}\n" for t, y in rows)).encode())
    return path


def test_classification_learns_writes_ram_and_refuses_to_replace_it(workdir):
    # One fine-tune for two checks: it learns and writes the best model, and a
    # ram:// --output (ram:// is this process' memory: the tools run in this
    # process) is protected as a local one (no --overwrite: refused, nothing
    # replaced); the export tool reads back what it wrote remotely.
    ram = f"ram://tools-{secrets.token_hex(4)}"
    output = f"{ram}/models/sentiment"
    args = ("--task", "classification", "--model", workdir / "tiny",
            "--train", _ram_csv(f"{ram}/train.csv", sentiment_rows(200, 0)),
            "--eval", _ram_csv(f"{ram}/dev.csv", sentiment_rows(40, 1)),
            "--output", output, "--learning-rate", 5e-3, "--epochs", 3, "--batch-size", 8,
            "--max-seq-length", 16, "--early-stopping-patience", 0)
    code, log = run_tool(*args)
    assert code == 0, log
    assert "best epoch" in log and f"wrote {output}" in log
    manifest = storage.committed_manifest(output)
    assert manifest and "model.weights.h5" in manifest["files"]
    info = json.loads(storage.read_bytes(f"{output}/task.json"))
    assert info["task"] == "classification"
    assert info["task_config"]["label_names"] == ["neg", "pos"]
    assert info["max_seq_length"] == 16 and info["lowercase"] is True
    assert info["pairs"] is False
    assert info["eval_metrics"]["accuracy"] >= 0.9
    assert not storage.exists(output + ".checkpoints")  # Removed after the run.
    model = BertClassifier.from_pretrained(output)
    assert model.label_names == ["neg", "pos"]

    # Again without --overwrite: refused before any work, the committed model untouched.
    code, log = run_tool(*args)
    assert code == 1 and "exists; pass --overwrite" in log
    assert storage.committed_manifest(output) == manifest

    code, out, err = tool_in_process("export", "--model", output,
                                     "--output", f"{ram}/exports/sentiment", "--no-tune")
    assert code == 0, err
    assert storage.committed_manifest(f"{ram}/exports/sentiment/1")
    assert f"{ram}/exports/sentiment/1" in out


@pytest.mark.slow
def test_unknown_eval_label_stops_with_file_and_line_or_is_skipped(workdir):
    dev = workdir / "dev_unknown.csv"
    dev.write_text("text,label\ngood movie,pos\nthe plot,meh\n\"bad, bad\",neg\n", encoding="utf-8")
    common = ("--task", "classification", "--model", workdir / "tiny", "--train",
              workdir / "train.csv", "--eval", dev, "--epochs", 1, "--max-seq-length", 16)
    code, log = run_tool(*common, "--output", workdir / "unknown")
    assert code != 0
    assert f"{dev}:3: unknown label 'meh'" in log and "--unknown-labels skip" in log
    assert not os.path.exists(workdir / "unknown")
    code, log = run_tool(*common, "--output", workdir / "skipped", "--unknown-labels", "skip")
    assert code == 0, log
    assert f"{dev}:3: skipped: unknown label" in log
    assert "kept 2 of 3 rows; skipped 1 (unknown label: 1)" in log


def test_pair_regression_from_jsonl_with_a_held_out_split(workdir):
    data = workdir / "sts.jsonl"
    rows = sentiment_rows(40, seed=2)
    with open(data, "w", encoding="utf-8") as f:
        for i, ((a, _), (b, _)) in enumerate(zip(rows, rows[1:])):
            f.write(json.dumps({"s1": a, "s2": b, "score": float(i % 5)}) + "\n")
        f.write("{broken\n")
    output = workdir / "sts"
    code, log = run_tool(
        "--task", "classification", "--regression", "--model", workdir / "tiny",
        "--train", data, "--eval-fraction", 0.25, "--text-column", "s1", "--text-b-column", "s2",
        "--label-column", "score", "--output", output, "--epochs", 1, "--batch-size", 8,
        "--max-seq-length", 24)
    assert code == 0, log
    assert "29 train / 10 eval (eval_fraction 0.25, seed 0)" in log  # 39 good rows.
    assert f"{data}:40: skipped: malformed row: invalid JSON" in log
    info = read_task_json(output)
    assert info["regression"] is True and info["task_config"]["num_classes"] == 1
    assert info["pairs"] is True
    assert info["early_stopping_metric"] == "pearson"
    assert set(info["eval_metrics"]) == {"pearson", "spearman", "mse"}


@pytest.mark.slow  # Tens of seconds of the default tier's time (round 10).
def test_token_classification_end_to_end(workdir):
    data = workdir / "ner.txt"
    data.write_text(CONLL_TEXT * 8 + "Broken\n\n", encoding="utf-8")
    output = workdir / "ner"
    code, log = run_tool(
        "--task", "token_classification", "--model", workdir / "tiny", "--train", data,
        "--eval", data, "--output", output, "--learning-rate", 5e-3, "--epochs", 2,
        "--batch-size", 4, "--max-seq-length", 24)
    assert code == 0, log
    assert f"{data}:137: skipped: malformed row: one column 'Broken'" in log
    info = read_task_json(output)
    assert info["task_config"]["label_names"] == ["O", "B-LOC", "B-ORG", "B-PER", "I-ORG", "I-PER"]
    assert set(info["eval_metrics"]) >= {"precision", "recall", "f1"}
    model = BertTokenClassifier.from_pretrained(str(output))
    assert model.num_classes == 6


def test_span_qa_end_to_end(workdir):
    data = write_json(str(workdir / "squad.json"), squad_json(version_2_with_negative=True))
    output = workdir / "qa"
    code, log = run_tool(
        "--task", "span_qa", "--model", workdir / "tiny", "--train", data, "--eval", data,
        "--output", output, "--epochs", 1, "--batch-size", 4, "--max-seq-length", 48,
        "--doc-stride", 16, "--max-query-length", 12)
    assert code == 0, log
    info = read_task_json(output)
    assert info["task"] == "span_qa" and info["version_2_with_negative"] is True
    assert info["max_seq_length"] == 48 and info["doc_stride"] == 16
    assert set(info["eval_metrics"]) >= {"exact", "f1", "has_answer_f1", "no_answer_f1"}
    with open(output / "eval_predictions.json", encoding="utf-8") as f:
        predictions = json.load(f)
    assert sorted(predictions) == ["q1", "q2", "q3", "q4", "q5", "q6", "q7"]
    assert isinstance(BertSpanLabeler.from_pretrained(str(output)), BertSpanLabeler)


@pytest.mark.slow  # TFDS mock data builds its dataset in the slow path
def test_tfds_classification_with_mock_data(workdir, tmp_path):
    tfds = pytest.importorskip("tensorflow_datasets")
    options = finetune_lib.FinetuneOptions(
        epochs=1, batch_size=4, max_seq_length=16, jit_compile="off", log_every=100)
    task_options = ClassificationOptions()
    with tfds.testing.mock_data(num_examples=12):
        train = finetune_lib.read_task_data("classification", "tfds:glue/sst2", True,
                                            task_options)
        held_out = finetune_lib.read_task_data("classification", "tfds:glue/sst2", False,
                                               task_options)
    # The reader returns the ClassLabel names as data; the options stay as given.
    assert train.label_names == ["negative", "positive"]
    assert task_options == ClassificationOptions()
    result = finetune_lib.finetune(
        "classification", str(workdir / "tiny"), str(tmp_path / "sst2"), train, held_out, options,
        task_options=task_options)
    assert result.train_examples == len(train) and result.steps == 3
    info = read_task_json(tmp_path / "sst2")
    assert info["task_config"]["label_names"] == ["negative", "positive"]


def test_tfds_data_that_is_not_prepared_says_how_to_prepare_it(tmp_path):
    pytest.importorskip("tensorflow_datasets")
    with pytest.raises(FileNotFoundError) as error:
        finetune_lib.read_task_data("classification", "tfds:glue/mrpc", True,
                                    tfds_data_dir=str(tmp_path))
    message = str(error.value)
    assert "tfds build glue/mrpc --data_dir DIR" in message
    assert "--tfds-data-dir DIR" in message and str(tmp_path) in message


class _FakeTask:
    name = "classification"
    metrics = ("accuracy",)
    vocab_file = None

    def __init__(self, values):
        self.values = list(values)

    def evaluate(self, model, batch_size):
        return {"accuracy": self.values.pop(0)}

    def task_info(self):
        return {}

    def write_predictions(self, output_dir):
        pass


class _FakeModel:
    stop_training = False

    def __init__(self):
        self.saved = []

    def save_pretrained(self, output_dir, vocab_file=None, task_info=None):
        self.saved.append(task_info["epoch"])


def test_best_epoch_is_saved_and_patience_stops(tmp_path):
    options = finetune_lib.FinetuneOptions(early_stopping_patience=2)
    runner = finetune_lib._Runner(_FakeTask([0.5, 0.6, 0.55, 0.58, 0.9]), str(tmp_path / "out"),
                                  str(tmp_path / "ckpt"), options, "fp", is_chief=True)
    runner.model = _FakeModel()
    for epoch in (1, 2, 3):
        runner.end_epoch(epoch, {"loss": 1.0})
    assert runner.model.saved == [1, 2] and not runner.model.stop_training
    runner.end_epoch(4, {"loss": 1.0})
    assert runner.model.stop_training  # Two epochs without beating 0.6.
    assert runner.state["best_epoch"] == 2
    assert [h["accuracy"] for h in runner.state["history"]] == [0.5, 0.6, 0.55, 0.58]
    # A resumed run with the same fingerprint picks the state up; another run is refused.
    again = finetune_lib._Runner(_FakeTask([]), str(tmp_path / "out"), str(tmp_path / "ckpt"),
                                 options, "fp", is_chief=True)
    assert again.state["best_epoch"] == 2
    with pytest.raises(ValueError, match="checkpoints of another fine-tuning run"):
        finetune_lib._Runner(_FakeTask([]), str(tmp_path / "out"), str(tmp_path / "ckpt"),
                             options, "other", is_chief=True)


def test_unknown_metric_is_rejected(tmp_path):
    options = finetune_lib.FinetuneOptions(metric="f1")
    with pytest.raises(ValueError, match="--metric 'f1' is not a classification metric"):
        finetune_lib._Runner(_FakeTask([]), str(tmp_path), str(tmp_path / "c"), options, "x", True)


def test_options_are_validated():
    with pytest.raises(ValueError, match="warmup_fraction"):
        finetune_lib.FinetuneOptions(warmup_fraction=1.5)
    with pytest.raises(ValueError, match="dtype"):
        finetune_lib.FinetuneOptions(dtype="float16")
    assert np.isclose(finetune_lib.FinetuneOptions().learning_rate, 5e-5)


@pytest.mark.slow  # Tens of seconds of the default tier's time (round 10).
def test_freezing_and_layerwise_decay_from_the_cli(workdir):
    from keras_bert.models import BertEncoder
    from tests.training.finetune_fixtures import make_model_dir

    source = make_model_dir(str(workdir / "tiny2"), num_layers=2)
    output = workdir / "frozen"
    code, log = run_tool(
        "--task", "classification", "--model", source, "--train", workdir / "train.csv",
        "--eval", workdir / "dev.csv", "--output", output, "--learning-rate", 5e-3,
        "--epochs", 1, "--batch-size", 8, "--max-seq-length", 16,
        "--freeze-layers", 1, "--freeze-embeddings", "--layerwise-lr-decay", 0.5)
    assert code == 0, log
    before = BertEncoder.from_pretrained(source)
    after = BertEncoder.from_pretrained(str(output))
    same = lambda layer_a, layer_b: all(  # noqa: E731
        np.array_equal(a.numpy(), b.numpy()) for a, b in zip(layer_a.weights, layer_b.weights))
    assert same(before.embeddings, after.embeddings)
    assert same(before.encoder_blocks[0], after.encoder_blocks[0])
    assert not same(before.encoder_blocks[1], after.encoder_blocks[1])
