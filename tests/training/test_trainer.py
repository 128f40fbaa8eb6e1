"""Killed runs resume where they stopped and end exactly like uninterrupted ones."""

import os
import signal
import subprocess
import sys
import time

import keras
import numpy as np

from keras_bert.training import PretrainingConfig, run_pretraining
from tests.training.conftest import REPO, subprocess_env, tiny_bert_config

TOOL = os.path.join(REPO, "tools", "pretrain.py")
# Dropout on, dynamic masking: resuming must also restore the dropout RNG
# and the data position (which decides the masks). No XLA: compiling costs
# more than it saves on 30 tiny steps (tests/training/test_distribute.py
# and test_optimizers.py cover the XLA step).
SETTINGS = dict(num_train_steps=30, batch_size=16, learning_rate=1e-3, warmup_steps=3,
                checkpoint_every=10, log_every=10, seed=1, jit_compile="off")


def _cli_args(data_dir, output_dir, config_file):
    args = ["--train", data_dir, "--output", str(output_dir), "--config",
            str(config_file), "--no-tensorboard"]
    for key, value in SETTINGS.items():
        args += ["--" + key.replace("_", "-"), str(value)]
    return args


class _FirstStep(keras.callbacks.Callback):
    first = None

    def on_train_batch_begin(self, batch, logs=None):
        if self.first is None:
            self.first = batch


def _run(data_dir, output_dir):
    first = _FirstStep()
    result = run_pretraining(data_dir, str(output_dir), PretrainingConfig(**SETTINGS),
                             bert_config=tiny_bert_config(32), callbacks=[first],
                             verbose=0, tensorboard=False)
    return result, first.first


# `uninterrupted`, this run never stopped: tests/training/conftest.py.


def _start_then_signal(data_dir, output_dir, tmp_path, sig):
    """Runs tools/pretrain.py; sends `sig` once the step-10 checkpoint exists."""
    config_file = tmp_path / "bert_config.json"
    tiny_bert_config(32).to_json_file(config_file)
    log_path = tmp_path / "pretrain.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, TOOL] + _cli_args(data_dir, output_dir,
                                                                   config_file),
                                env=subprocess_env(), stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.time() + 300
            # The state file names a checkpoint once all its files are written
            # (the .index appears before it: a kill between them resumes from 0).
            state = output_dir / "checkpoints" / "checkpoint"
            while not (state.exists() and "ckpt-10" in state.read_text()):
                assert proc.poll() is None, log_path.read_text()[-3000:]
                assert time.time() < deadline, "no checkpoint after 300 s"
                time.sleep(0.02)
            assert proc.poll() is None, "finished before it could be stopped"
            proc.send_signal(sig)
            code = proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
    return code, log_path.read_text()


def _assert_same(model, expected):
    for w, e in zip(model.weights, expected):
        np.testing.assert_allclose(w.numpy(), e, atol=1e-6, err_msg=w.path)


def test_sigterm_saves_the_current_step_and_resumes_from_it(dynamic_data, uninterrupted,
                                                            tmp_path):
    output_dir = tmp_path / "run"
    code, log = _start_then_signal(dynamic_data, output_dir, tmp_path, signal.SIGTERM)
    assert code == 143, log[-3000:]
    stopped = int(log.split("stopped by SIGTERM at step ")[1].split(";")[0])
    assert 10 <= stopped < 30
    # Every finished step was saved, not only the last multiple of 10.
    assert (output_dir / "checkpoints" / f"ckpt-{stopped}.index").exists()
    result, first = _run(dynamic_data, output_dir)
    assert first == stopped and result["step"] == 30
    _assert_same(result["model"], uninterrupted)
    with open(output_dir / "model" / "task.json") as f:
        assert '"pretraining_steps": 30' in f.read()
