"""A checkpoint is one unit: a SIGKILL at any step of its write keeps the last whole one.

Also: run-state JSON files are replaced whole and a damaged one is named;
a non-finite loss or weight stops training before anything is saved.
The kills are real SIGKILLs of a tool's process (forked from one that imported
TensorFlow once: tests/writer_harness.py Forker) stopped at an exact point of
the writer (its `keras_bert.steps.reached`, patched by tests/writer_harness.py).
"""

import json
import os
import signal
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import steps
from keras_bert.training import PretrainingConfig, run_pretraining
from keras_bert.training import finetune as finetune_lib
from keras_bert.training.trainer import NonFiniteError, Trainer
from tests import writer_harness
from tests.conftest import run_tool
from tests.training.conftest import REPO, subprocess_env, tiny_bert_config
from tests.training import test_trainer as trainer_tests
from tests.training.finetune_fixtures import write_sentiment_splits

PRETRAIN = os.path.join(REPO, "tools", "pretrain.py")
FINETUNE = os.path.join(REPO, "tools", "finetune.py")
# test_trainer's run (checkpoints at 10, 20, 30), keeping one checkpoint.
SETTINGS = dict(trainer_tests.SETTINGS, max_checkpoints=1)


def _kill_at(command, point, tmp_path, forker):
    """Runs the tool `command` ([python, TOOL, *args]) in a forked process until it pauses at
    `point`, then SIGKILLs it; returns its output."""
    marker = tmp_path / "paused"
    proc = writer_harness.start(command[1], *command[2:], env=subprocess_env(), forker=forker,
                                stop=point, marker=marker)
    try:
        writer_harness.wait_paused(marker, proc, timeout=300)
        proc.send_signal(signal.SIGKILL)
        assert proc.wait() == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.communicate()[0] + writer_harness.errors(proc)


def _pretrain_command(data_dir, output_dir, tmp_path):
    config_file = tmp_path / "bert_config.json"
    tiny_bert_config(32).to_json_file(config_file)
    return [sys.executable, PRETRAIN, *trainer_tests._cli_args(data_dir, output_dir, config_file),
            "--max-checkpoints", "1"]


def _resume_pretraining(data_dir, output_dir):
    first = trainer_tests._FirstStep()
    result = run_pretraining(data_dir, str(output_dir), PretrainingConfig(**SETTINGS),
                             bert_config=tiny_bert_config(32), callbacks=[first], verbose=0,
                             tensorboard=False)
    return result, first.first


# Each kill point of a unit's write is crashed in process below (nothing in the Trainer
# cleans up on the way out, so the files left are a SIGKILL's). SIGKILLed in a fresh
# process: here after the commit of step 20 (unit 10's pruning not done), and the
# fine-tune below after the data iterator's write (the same Trainer.save).
@pytest.mark.slow  # A fresh process (TensorFlow's import); the in-process variant below.
def test_pretraining_killed_mid_checkpoint_resumes_from_the_last_whole_one(
        dynamic_data, uninterrupted, tmp_path, forker):
    output_dir = tmp_path / "run"
    _kill_at(_pretrain_command(dynamic_data, output_dir, tmp_path), "checkpoint-committed:20",
             tmp_path, forker)
    checkpoints = output_dir / "checkpoints"
    assert "ckpt-20" in (checkpoints / "checkpoint").read_text()
    assert not (output_dir / "model").exists()
    result, first = _resume_pretraining(dynamic_data, output_dir)
    assert first == 20 and result["step"] == 30
    assert int(result["model"].optimizer.iterations.numpy()) == 30
    # Killed and resumed, it ends exactly as the run that was never stopped.
    trainer_tests._assert_same(result["model"], uninterrupted)
    # One unit is left (max_checkpoints=1): model/optimizer and data of step 30.
    assert sorted(os.listdir(checkpoints / "data-worker-0")) == [
        "ckpt-30.data-00000-of-00001", "ckpt-30.index"]
    assert not [n for n in os.listdir(checkpoints) if n.startswith("ckpt-") and "30" not in n]


# === The unit in-process: leftovers, NaN ===


def _tiny_trainer(checkpoint_dir, nan_batch=None, checkpoint_every=2):
    """A Dense(1) regression Trainer; batch `nan_batch` (0-based) holds a NaN feature."""
    x = np.linspace(-1, 1, 80, dtype="float32").reshape(20, 4)
    y = x.sum(axis=1, keepdims=True)
    if nan_batch is not None:
        x[nan_batch * 2] = np.nan  # Batches of 2 rows.

    def dataset_fn(batch_size, pipeline, pipelines):
        return tf.data.Dataset.from_tensor_slices((x, y)).batch(batch_size).repeat()

    strategy = tf.distribute.get_strategy()
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, name="dense")])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    return Trainer(model, strategy, dataset_fn, 2, str(checkpoint_dir),
                   checkpoint_every=checkpoint_every, max_checkpoints=1)


class _Crash(BaseException):
    """Stands in for SIGKILL in this process: nothing catches it, nothing cleans up."""


@pytest.mark.parametrize("point, resumed_from", [
    ("checkpoint-begin", 2), ("checkpoint-data-written", 2), ("checkpoint-committed", 4)])
def test_a_crash_at_each_step_of_a_unit_keeps_the_last_whole_one(tmp_path, monkeypatch, point,
                                                                 resumed_from):
    def crash(name, step=None):
        if (name, step) == (point, 4):
            raise _Crash

    monkeypatch.setattr(steps, "reached", crash)
    with pytest.raises(_Crash):
        _tiny_trainer(tmp_path / "ckpt").train(6, verbose=0)  # max_checkpoints=1
    monkeypatch.undo()
    trainer = _tiny_trainer(tmp_path / "ckpt")
    assert trainer.restore() == resumed_from  # The old code lost data-worker-0/ckpt-2 here.
    trainer.train(6, verbose=0)
    assert sorted(os.listdir(tmp_path / "ckpt" / "data-worker-0")) == [
        "ckpt-6.data-00000-of-00001", "ckpt-6.index"]


def test_a_nan_loss_stops_before_anything_of_its_step_is_saved(tmp_path):
    trainer = _tiny_trainer(tmp_path / "ckpt", nan_batch=2)  # The loss of step 3 is NaN.
    seen = []
    record = keras.callbacks.LambdaCallback(on_train_batch_end=lambda b, logs: seen.append(b))
    with pytest.raises(NonFiniteError, match=r"step 3: the loss is nan") as error:
        trainer.train(6, callbacks=[record], verbose=0)
    assert error.value.step == 3
    assert "ckpt-2) is kept" in str(error.value) and "--learning-rate" in str(error.value)
    assert seen == [0, 1]  # Callbacks (fine-tuning's best-model saver) never saw step 3.
    assert tf.train.latest_checkpoint(str(tmp_path / "ckpt")).endswith("ckpt-2")
    assert not (tmp_path / "ckpt" / "ckpt-4.index").exists()


def test_non_finite_weights_are_never_saved_and_the_error_names_the_weight(tmp_path):
    trainer = _tiny_trainer(tmp_path / "ckpt")
    trainer.train(2, verbose=0)
    kernel = trainer.model.get_layer("dense").kernel
    kernel.assign(np.full(kernel.shape, np.inf, "float32"))
    trainer.step.assign(3)
    with pytest.raises(NonFiniteError, match=rf"the weight {kernel.path} holds NaN or inf"):
        trainer.save()
    assert not (tmp_path / "ckpt" / "ckpt-3.index").exists()
    assert tf.train.latest_checkpoint(str(tmp_path / "ckpt")).endswith("ckpt-2")


def test_a_model_that_starts_non_finite_is_refused_before_training(tmp_path):
    trainer = _tiny_trainer(tmp_path / "ckpt")
    bias = trainer.model.get_layer("dense").bias
    bias.assign([np.nan])
    with pytest.raises(NonFiniteError, match=rf"The weight {bias.path} holds NaN or inf before "
                                             r"training \(step 0\): the model it starts from"):
        trainer.train(2, verbose=0)
    assert not (tmp_path / "ckpt").exists() or not os.listdir(tmp_path / "ckpt")


def test_parts_of_an_uncommitted_unit_are_removed_and_the_committed_one_resumes(tmp_path):
    checkpoint_dir = tmp_path / "ckpt"
    _tiny_trainer(checkpoint_dir).train(2, verbose=0)
    # What a kill inside step 4's write leaves: TensorFlow's staging folders
    # and a half-merged ckpt-4 of a unit the "checkpoint" file never named.
    for leftover in ("ckpt-4_temp/part-00000-of-00001.index", "ckpt-4.index",
                     "data-worker-0/ckpt-4_temp/part-00000-of-00001.index",
                     "data-worker-0/ckpt-4.index"):
        path = checkpoint_dir / leftover
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"half written")
    (checkpoint_dir / "notes.txt").write_text("the user's")
    trainer = _tiny_trainer(checkpoint_dir)
    assert trainer.restore() == 2
    assert sorted(os.listdir(checkpoint_dir)) == [
        "checkpoint", "ckpt-2.data-00000-of-00001", "ckpt-2.index", "data-worker-0",
        "notes.txt"]
    assert sorted(os.listdir(checkpoint_dir / "data-worker-0")) == [
        "ckpt-2.data-00000-of-00001", "ckpt-2.index"]
    trainer.train(4, verbose=0)
    assert tf.train.latest_checkpoint(str(checkpoint_dir)).endswith("ckpt-4")


# === Run-state files ===


def test_a_damaged_finetune_state_names_the_file_and_the_way_out(tmp_path):
    checkpoint_dir = tmp_path / "out.checkpoints"
    checkpoint_dir.mkdir()
    (checkpoint_dir / finetune_lib.STATE_FILE).write_text('{"fingerprint": "ab')  # Cut short.

    class Task:
        name, metrics = "classification", ("accuracy",)

    with pytest.raises(ValueError) as error:
        finetune_lib._Runner(Task(), str(tmp_path / "out"), str(checkpoint_dir),
                             finetune_lib.FinetuneOptions(), "fp", is_chief=True)
    message = str(error.value)
    assert str(checkpoint_dir / finetune_lib.STATE_FILE) in message and "is damaged" in message
    assert f"Delete the folder {checkpoint_dir}" in message


def test_the_finetune_state_is_replaced_whole(tmp_path):
    class Task:
        name, metrics = "classification", ("accuracy",)

    runner = finetune_lib._Runner(Task(), str(tmp_path / "out"), str(tmp_path / "c"),
                                  finetune_lib.FinetuneOptions(), "fp", is_chief=True)
    runner.state["history"].append({"epoch": 1})
    runner._write_state()
    # No temporary file is left beside it, and it is read back as written.
    assert os.listdir(tmp_path / "c") == [finetune_lib.STATE_FILE]
    with open(tmp_path / "c" / finetune_lib.STATE_FILE) as f:
        assert json.load(f)["history"] == [{"epoch": 1}]


def test_a_damaged_pretraining_run_file_names_the_file(tmp_path):
    from keras_bert.training.pretrain import _write_or_check_run

    path = tmp_path / "pretraining_run.json"
    path.write_text("[1, 2")
    with pytest.raises(ValueError, match=r"pretraining_run.json \(the settings of the "
                                         r"pretraining run in this folder\) is damaged"):
        _write_or_check_run(str(path), {"batch_size": 8}, is_chief=True)
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="holds a JSON list, not an object"):
        _write_or_check_run(str(path), {"batch_size": 8}, is_chief=True)
    path.unlink()
    _write_or_check_run(str(path), {"batch_size": 8}, is_chief=True)
    assert json.loads(path.read_text()) == {"batch_size": 8}
    assert os.listdir(tmp_path) == ["pretraining_run.json"]  # No temporary file left.


def test_leftovers_of_a_killed_write_do_not_block_the_next_finetune(tiny_model_dir, tmp_path):
    checkpoint_dir = tmp_path / "out.checkpoints"
    (checkpoint_dir / "ckpt-7_temp").mkdir(parents=True)
    (checkpoint_dir / "ckpt-7_temp" / "part-00000-of-00001.index").write_bytes(b"x")
    (checkpoint_dir / ".tmp-finetune_state-pid1-host-abc.json").write_text("{")
    finetune_lib.check_outputs(tiny_model_dir, str(tmp_path / "out"), str(checkpoint_dir))
    finetune_lib.remove_checkpoints(str(checkpoint_dir))
    assert not checkpoint_dir.exists()
    # A folder with something else in it is still refused.
    (checkpoint_dir / "ckpt-7_temp").mkdir(parents=True)
    (checkpoint_dir / "results.csv").write_text("mine")
    with pytest.raises(ValueError, match="not a fine-tuning checkpoint folder"):
        finetune_lib.check_outputs(tiny_model_dir, str(tmp_path / "out"), str(checkpoint_dir))


# === Fine-tuning end to end ===


def _finetune_args(root, output, *extra):
    return ["--jit-compile", "off", "--task", "classification", "--model", str(root / "tiny"),
            "--train", str(root / "train.csv"), "--eval", str(root / "dev.csv"),
            "--output", str(output), "--epochs", "3", "--batch-size", "8",
            "--max-seq-length", "16", "--early-stopping-patience", "0", *map(str, extra)]


@pytest.mark.slow  # Two fine-tuning runs (one in a fresh process).
def test_finetune_killed_mid_checkpoint_resumes_from_the_last_whole_one(tiny_model_dir,
                                                                        tmp_path, forker):
    root = tmp_path / "data"
    root.mkdir()
    write_sentiment_splits(root, 24, 8, model_dir=tiny_model_dir)  # 3 steps an epoch.
    output = tmp_path / "out"
    # Epoch 2's unit (step 6) is half written: its data iterator is, nothing else.
    _kill_at([sys.executable, FINETUNE, *_finetune_args(root, output)],
             "checkpoint-data-written:6", tmp_path, forker)
    checkpoints = str(output) + ".checkpoints"
    assert "ckpt-3" in open(os.path.join(checkpoints, "checkpoint")).read()
    # What a kill inside TensorFlow's own write of step 6 leaves: neither blocks the resume
    # nor is taken for a checkpoint, and goes with the rest.
    os.makedirs(os.path.join(checkpoints, "ckpt-6_temp"))
    with open(os.path.join(checkpoints, "ckpt-6_temp", "part-00000-of-00001.index"), "wb") as f:
        f.write(b"x")
    code, out, err = run_tool("finetune", *_finetune_args(root, output))
    assert code == 0, (out + err)[-3000:]
    assert "resumed from step 3/9" in out + err
    with open(output / "task.json") as f:
        assert json.load(f)["epoch"] in (1, 2, 3)
    assert not os.path.exists(checkpoints)


@pytest.mark.slow  # A fine-tuning run through the tool.
def test_a_diverging_finetune_exits_non_zero_and_saves_nothing(tiny_model_dir, tmp_path):
    root = tmp_path / "data"
    root.mkdir()
    write_sentiment_splits(root, 16, 8, model_dir=tiny_model_dir)
    weights = tmp_path / "weights.json"
    weights.write_text(json.dumps({"neg": 1e30, "pos": 1.0}))  # Gradients overflow.
    output = tmp_path / "out"
    code, out, err = run_tool("finetune", *_finetune_args(root, output, "--class-weights",
                                                          weights))
    assert code != 0
    assert "so the run diverged" in err and "[best]" not in out + err, (out + err)[-3000:]
    assert not output.exists()


# === Option checks ===


@pytest.mark.parametrize("value", [float("inf"), float("nan"), 5e5, 0.0, -1e-5])
def test_learning_rates_that_cannot_train_are_refused(value):
    with pytest.raises(ValueError, match=r"Expected learning_rate in \(0, 1\]"):
        finetune_lib.FinetuneOptions(learning_rate=value)
    with pytest.raises(ValueError, match=r"Expected learning_rate in \(0, 1\]"):
        PretrainingConfig(learning_rate=value)


def test_non_finite_multipliers_and_thresholds_are_refused():
    from keras_bert.tasks.span_qa.options import SpanQAOptions

    with pytest.raises(ValueError, match="encoder_lr_multiplier=inf"):
        finetune_lib.FinetuneOptions(encoder_lr_multiplier=float("inf"))
    with pytest.raises(ValueError, match="null_score_diff_threshold=nan"):
        SpanQAOptions(null_score_diff_threshold=float("nan"))
    assert finetune_lib.FinetuneOptions(learning_rate=1e-3).learning_rate == 1e-3
