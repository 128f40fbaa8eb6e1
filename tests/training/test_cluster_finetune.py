"""Multi-worker fine-tuning: two workers on localhost equal one process of the same global batch."""

import json
import os
import signal
import subprocess
import sys
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.data.batching import training_batches
from keras_bert.tasks import BertClassifier
from tests.conftest import run_tool
from tests.training.conftest import REPO, subprocess_env
from tests.training.finetune_fixtures import make_model_dir, write_sentiment_splits
from tests.training.test_distribute import _free_port

TOOL = os.path.join(REPO, "tools", "finetune.py")


def test_pipelines_with_a_seed_split_the_batches_of_one_process():
    # Examples of varied lengths (two length buckets), each tagged by its label.
    examples = tf.data.Dataset.from_tensor_slices(
        ({"token_ids": tf.ragged.constant([[1] * (3 + i % 20) for i in range(40)])},
         tf.range(40))).map(lambda x, y: ({"token_ids": x["token_ids"]}, y))

    def batches(size, pipeline=0, pipelines=1):
        stream = training_batches(examples, size, 32, seed=3, input_pipeline_id=pipeline,
                                  num_input_pipelines=pipelines)
        return [(x["token_ids"].numpy(), y.numpy()) for x, y in stream.take(4)]

    whole = batches(8)
    parts = [batches(4, i, 2) for i in range(2)]
    for k, (tokens, labels) in enumerate(whole):
        np.testing.assert_array_equal(np.concatenate([p[k][1] for p in parts]), labels)
        np.testing.assert_array_equal(np.concatenate([p[k][0] for p in parts]), tokens)
    # Without a seed each pipeline reads its own examples (every n-th).
    unseeded = training_batches(examples, 4, 32, input_pipeline_id=1, num_input_pipelines=2)
    assert set(np.concatenate([y.numpy() for _, y in unseeded.take(5)]) % 2) == {1}


def _args(root, output, *extra):
    # No dropout anywhere: two workers draw other masks than one process.
    return ["--task", "classification", "--model", str(root / "tiny"),
            "--train", str(root / "train.csv"), "--eval", str(root / "dev.csv"),
            "--output", str(output), "--epochs", "2", "--batch-size", "8",
            "--max-seq-length", "16", "--learning-rate", "1e-3", "--dropout-rate", "0",
            "--early-stopping-patience", "0", "--jit-compile", "off", "--log-every", "1",
            "--no-tensorboard", *extra]


def _data(tmp_path, num_train):
    root = tmp_path / "data"
    root.mkdir()
    make_model_dir(str(tmp_path / "model"), max_position_embeddings=32, dropout_rate=0.0,
                   attention_dropout_rate=0.0)
    write_sentiment_splits(root, num_train, 16, model_dir=str(tmp_path / "model"))
    return root


def _start_workers(tmp_path, root, name, args=None):
    """Two tools/finetune.py workers on localhost; returns (processes, log paths).

    Configured by a Kubernetes Indexed Job's variables alone (no TF_CONFIG),
    with the TF_USE_LEGACY_KERAS=1 that Ray Train sets in its workers. Each
    is given its own --output (one shared --checkpoint-dir): only the
    chief's may appear. `args(output)`: the tool's arguments (default: the
    classifier's, `_args`).
    """
    args = args or (lambda output: _args(root, output))
    hosts = ",".join(f"127.0.0.1:{_free_port()}" for _ in range(2))
    procs, paths = [], []
    for index in range(2):
        env = subprocess_env(KERAS_BERT_WORKER_HOSTS=hosts, JOB_COMPLETION_INDEX=str(index),
                             TF_USE_LEGACY_KERAS="1")
        paths.append(tmp_path / f"{name}-{index}.log")
        command = [sys.executable, TOOL, *args(tmp_path / f"out-{index}"),
                   "--checkpoint-dir", str(tmp_path / "shared")]
        with open(paths[-1], "w") as log:
            procs.append(subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT))
    return procs, paths


def _wait(procs, timeout=240):
    try:
        return [p.wait(timeout=timeout) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()


def _wait_for(marker, path, procs, timeout=240):
    deadline = time.time() + timeout
    while marker not in path.read_text():
        assert all(p.poll() is None for p in procs), path.read_text()[-3000:]
        assert time.time() < deadline, f"no {marker!r} in {path} after {timeout} s"
        time.sleep(0.05)


def _weights(model_dir):
    return BertClassifier.from_pretrained(str(model_dir)).get_weights()


def _eval_lines(log):
    return [line.split(" (")[0] for line in log.splitlines() if " eval: " in line]


def _stopped_at(log):
    return int(log.split("stopped by ")[1].split(" at step ")[1].split(";")[0])


# Text embedding is the task run on two workers: its loss gathers every worker's examples,
# so its two-worker result is more than the mean of each half's (the other tasks' parts:
# test_each_task_splits_its_batches_and_loss_as_two_workers_do, in process).
@pytest.mark.slow  # Two runs of two fine-tuning worker processes over local gRPC.
def test_two_workers_preempted_and_resumed_match_one_uninterrupted_process(tmp_path):
    model_class, args = _task_setup(tmp_path, "text_embedding")  # 12 steps an epoch, 24 in all.
    root = tmp_path / "data"
    procs, paths = _start_workers(tmp_path, root, "first", args)
    # The one-process reference runs here meanwhile (no third TensorFlow import).
    code, out, err = run_tool("finetune", *args(tmp_path / "single"))
    single_log = out + err
    assert code == 0, single_log[-3000:]
    # SIGTERM to the worker that is not the chief, once training runs.
    _wait_for("step 3/24 ", paths[0], procs)
    procs[1].send_signal(signal.SIGTERM)
    codes = _wait(procs)
    first = [p.read_text() for p in paths]
    assert codes == [143, 143], first[0][-3000:] + first[1][-3000:]
    assert "strategy MultiWorkerMirroredStrategy" in first[0]
    assert "TF_USE_LEGACY_KERAS is set" in first[0]  # Unset: tf_keras is not installed.
    assert "stopped by SIGTERM at step" in first[1]
    assert "stopped by another worker's stop signal at step" in first[0]
    # One common checkpoint: both stopped at one step, and it holds each worker's data position.
    step = _stopped_at(first[0])
    assert _stopped_at(first[1]) == step and 3 <= step < 24
    shared = tmp_path / "shared"
    assert f'model_checkpoint_path: "ckpt-{step}"' in (shared / "checkpoint").read_text()
    for index in range(2):
        assert (shared / f"data-worker-{index}" / f"ckpt-{step}.index").exists()

    procs, paths = _start_workers(tmp_path, root, "second", args)
    codes = _wait(procs)
    second = [p.read_text() for p in paths]
    assert codes == [0, 0], second[0][-3000:] + second[1][-3000:]
    assert f"resumed from step {step}/24" in second[0]
    _assert_one_process_result(tmp_path, single_log, [a + b for a, b in zip(first, second)],
                               model_class)


def _assert_one_process_result(tmp_path, single_log, worker_logs, model_class=BertClassifier):
    """The chief's model (out-0) equals one process's (single) to 1e-6; both workers printed
    that process's evaluations; the chief's task.json holds its best epoch and metrics; worker
    1 wrote no output, and the shared checkpoints are gone."""
    def weights(name):
        model = model_class.from_pretrained(str(tmp_path / name))
        # Span QA's start/end bias: a softmax over positions does not see it (one constant
        # added to every position), so its gradient is float noise (about 1e-9), which
        # Adam scales up to steps of up to the learning rate in either run alike.
        free = {id(model.output_dense.bias)} if model_class.__name__ == "BertSpanLabeler" else ()
        return {v.path: v.numpy() for v in model.weights if id(v) not in free}

    chief, single = weights("out-0"), weights("single")
    assert chief.keys() == single.keys()
    for path, reference in single.items():
        np.testing.assert_allclose(chief[path], reference, atol=1e-6, err_msg=path)
    # The same evaluations and best-epoch choice on both workers as in one process.
    assert len(_eval_lines(single_log)) == 2
    assert (_eval_lines(worker_logs[0]) == _eval_lines(worker_logs[1])
            == _eval_lines(single_log))
    with open(tmp_path / "out-0" / "task.json") as f, open(tmp_path / "single" / "task.json") as g:
        chief, single = json.load(f), json.load(g)
    assert chief["epoch"] == single["epoch"]
    assert chief["eval_metrics"].keys() == single["eval_metrics"].keys()
    for name, value in single["eval_metrics"].items():
        assert chief["eval_metrics"][name] == pytest.approx(value, abs=1e-6), name
    # One writer: worker 1 wrote no model, and the chief removed the checkpoints.
    assert not os.path.exists(tmp_path / "out-1")
    assert not os.path.exists(tmp_path / "shared")


def _task_data(root, task):
    """(model class, the task's own arguments) for a small data set of `task` under `root`."""
    from keras_bert.tasks import (BertMultiLabelClassifier, BertSpanLabeler,
                                  BertTextEmbedder, BertTokenClassifier)
    from tests.tasks.test_multi_label import TRAIN
    from tests.tasks.test_text_embedding_tool import pair_rows, write_csv
    from tests.training.finetune_fixtures import CONLL_TEXT, squad_json, write_json

    if task == "classification":
        data = write_sentiment_splits(root, 24, 8)
        return BertClassifier, ["--train", data["train"], "--eval", data["dev"],
                                "--max-seq-length", "16"]
    if task == "multi_label_classification":
        data = root / "tags.csv"
        data.write_text("text,tags\n" + "".join(f"{t},{l}\n" for t, l in TRAIN * 4))
        return BertMultiLabelClassifier, ["--train", data, "--eval", data,
                                          "--label-column", "tags", "--max-seq-length", "16"]
    if task == "token_classification":
        data = root / "ner.txt"
        data.write_text(CONLL_TEXT * 2, encoding="utf-8")
        return BertTokenClassifier, ["--train", data, "--eval", data, "--max-seq-length", "24"]
    if task == "span_qa":
        data = write_json(str(root / "squad.json"), squad_json(version_2_with_negative=True))
        return BertSpanLabeler, ["--train", data, "--eval", data, "--max-seq-length", "48",
                                 "--doc-stride", "16", "--max-query-length", "12"]
    train = write_csv(root / "pairs.csv", pair_rows(96))
    held_out = write_csv(root / "held_out.csv", pair_rows(12, seed=1))
    return BertTextEmbedder, ["--train", train, "--eval", held_out,
                              "--negative-columns", "negative", "--max-seq-length", "16"]


def _task_setup(tmp_path, task):
    """(model class, args(output): the tool's arguments) for `task` on its small data set."""
    root = tmp_path / "data"
    root.mkdir()
    model = make_model_dir(str(tmp_path / "model"), max_position_embeddings=64,
                           dropout_rate=0.0, attention_dropout_rate=0.0)
    model_class, data_args = _task_data(root, task)

    def args(output):
        # No dropout anywhere: two workers draw other masks than one process.
        return [str(a) for a in ["--task", task, "--model", model, "--output", output,
                                 "--epochs", "2", "--batch-size", "8", "--learning-rate",
                                 "1e-3", "--dropout-rate", "0",
                                 "--early-stopping-patience", "0", "--jit-compile", "off",
                                 "--log-every", "1", "--no-tensorboard", *data_args]]

    return model_class, args


class _Built(BaseException):
    """Raised by the stand-in Trainer: the tool has built what it would train, and stops."""


# What two workers add to one process, per task: its data split into two input pipelines,
# and its loss on each half of the global batch (the replicas' losses, each divided by 2, are
# summed). The rest (the Trainer's collectives, chief-only writes, every worker's evaluation,
# preemption and resume) is every task's code, run on two workers by text embedding's test above.
@pytest.mark.slow  # Each task's tool run up to its training (10-20 s).
@pytest.mark.parametrize("task", ["classification", "multi_label_classification",
                                  "token_classification", "span_qa"])
def test_each_task_splits_its_batches_and_loss_as_two_workers_do(tmp_path, task, monkeypatch):
    from keras_bert.training import finetune as finetune_lib

    built = {}

    def stand_in(model, strategy, dataset_fn, batch_size, *args, **kwargs):
        built.update(model=model, dataset_fn=dataset_fn, batch_size=batch_size)
        raise _Built

    monkeypatch.setattr(finetune_lib, "Trainer", stand_in)
    _, args = _task_setup(tmp_path, task)
    with pytest.raises(_Built):
        run_tool("finetune", *args(tmp_path / "out"))
    model, dataset_fn, size = built["model"], built["dataset_fn"], built["batch_size"]

    def batches(pipeline, pipelines):
        stream = dataset_fn(size // pipelines, pipeline, pipelines)
        return [keras.utils.unpack_x_y_sample_weight(e) for e in stream.take(3)]

    halves = [batches(i, 2) for i in range(2)]
    for step, whole in enumerate(batches(0, 1)):
        parts = [half[step] for half in halves]
        # Worker i's batch is slice i of one process's batch of the global size.
        tf.nest.map_structure(
            lambda w, a, b: np.testing.assert_array_equal(np.concatenate([a, b]), w),
            whole[:2], *[part[:2] for part in parts])
    x, y, weight = whole
    # One process's loss and gradients = the mean of the two halves' (the replicas').
    losses, gradients = [], []
    for rows in (slice(None), slice(None, size // 2), slice(size // 2, None)):
        part = tf.nest.map_structure(lambda t: t[rows], (x, y)) + (
            None if weight is None else weight[rows],)
        with tf.GradientTape() as tape:
            loss = model.compute_loss(x=part[0], y=part[1], y_pred=model(part[0], training=True),
                                      sample_weight=part[2], training=True)
        losses.append(float(loss))
        gradients.append([tf.convert_to_tensor(g).numpy()
                          for g in tape.gradient(loss, model.trainable_variables)])
    assert losses[0] == pytest.approx((losses[1] + losses[2]) / 2, rel=1e-5), losses
    for g, a, b in zip(*gradients):
        np.testing.assert_allclose((a + b) / 2, g, atol=1e-6)


@pytest.mark.slow  # Two fine-tuning worker processes, one killed.
def test_a_killed_worker_ends_the_other_with_a_message_within_60_s(tmp_path):
    root = _data(tmp_path, 96)
    procs, paths = _start_workers(tmp_path, root, "run")
    _wait_for("step 2/24 ", paths[0], procs)
    procs[1].kill()
    killed = time.time()
    codes = _wait(procs[:1], timeout=90)
    waited = time.time() - killed
    log = paths[0].read_text()
    assert codes == [1], log[-3000:]
    assert waited < 60, log[-3000:]
    assert "another worker stopped answering" in log and "Traceback" not in log, log[-3000:]
    assert "start every worker again with the same command" in log
