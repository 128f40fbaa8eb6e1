import importlib.util
import io

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.training import StepLogger, TensorBoard
from keras_bert.training.callbacks import metric_text, write_scalars


def test_step_logger_prints_a_line_every_n_steps():
    stream = io.StringIO()
    logger = StepLogger(log_every=2, batch_size=32, total_steps=6, stream=stream)
    logger.on_train_batch_begin(2)  # A run resumed at step 2.
    for batch in range(2, 6):
        logger.on_train_batch_end(batch, {"loss": 7.25, "learning_rate": 1e-4})
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("step 4/6 loss 7.2500 learning_rate 1.000e-04 examples/s ")
    assert lines[1].startswith("step 6/6 ")
    speed = float(lines[0].split("examples/s ")[1].split()[0])
    assert speed > 0
    assert " ETA " in lines[0] and " ETA " not in lines[1]  # Steps left, none at the end.
    assert "\x1b" not in stream.getvalue()  # No colour codes in a log file.


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_step_logger_on_a_terminal_draws_only_a_bar():
    stream = _Terminal()
    logger = StepLogger(log_every=2, batch_size=8, total_steps=4, stream=stream)
    logger.on_train_batch_begin(0)
    for batch in range(4):
        logger.on_train_batch_end(batch, {"loss": 1.5})
        if batch == 1:
            logger.clear()
            stream.write("epoch 1 eval: accuracy 0.5\n")
    logger.on_train_end()
    out = stream.getvalue()
    assert "━" in out  # keras.utils.Progbar's bar (its ETA beside it).
    assert "step 2/4" not in out and "examples/s" not in out  # One display: the bar.
    assert "\repoch 1 eval: accuracy 0.5\n" in out  # The bar's line cleared first.
    assert out.endswith("\n")


def _batch_losses(log_dir):
    """{step: value} of the `batch_loss` scalars under log_dir/train."""
    steps = {}
    for path in tf.io.gfile.glob(str(log_dir / "train" / "events*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                if value.tag == "batch_loss":
                    steps[event.step] = float(tf.make_ndarray(value.tensor))
    return steps


def _run_board(log_dir, update_freq, calls):
    """Feeds `calls` ((first step, last step) of each train call) to a TensorBoard."""
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    board = TensorBoard(str(log_dir), update_freq=update_freq)
    board.set_model(model)
    board.on_train_begin()
    for first, last in calls:
        board.on_train_batch_begin(first)
        board.on_train_batch_end(last, {"loss": float(last)})
    board.on_train_end()
    return _batch_losses(log_dir)


@pytest.mark.skipif(importlib.util.find_spec("tensorboard") is None,
                    reason="the tensorboard package is not installed")
def test_tensorboard_steps_continue_after_a_resume(tmp_path):
    # Global steps of a run resumed at 20.
    steps = _run_board(tmp_path, 1, [(20, 20), (21, 21)])
    assert steps == {21: 20.0, 22: 21.0}
    assert np.isfinite(list(steps.values())).all()


@pytest.mark.skipif(importlib.util.find_spec("tensorboard") is None,
                    reason="the tensorboard package is not installed")
def test_tensorboard_writes_every_update_freq_steps_with_steps_per_execution(tmp_path):
    # steps_per_execution=3: each call runs 3 steps and reports its last one.
    calls = [(first, first + 2) for first in range(0, 12, 3)]
    # Written when a multiple of 4 updates is passed: after 6, 9 and 12 updates.
    assert _run_board(tmp_path, 4, calls) == {6: 5.0, 9: 8.0, 12: 11.0}
    with pytest.raises(ValueError, match="update_freq=0"):
        TensorBoard(str(tmp_path), update_freq=0)


def test_write_scalars_appends_eval_metrics_at_a_global_step(tmp_path):
    write_scalars(tmp_path, 40, {"accuracy": 0.75, "label": "skipped"})
    write_scalars(tmp_path, 80, {"accuracy": 0.875})
    values = {}
    for path in tf.io.gfile.glob(str(tmp_path / "events*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                values[(value.tag, event.step)] = float(tf.make_ndarray(value.tensor))
    assert values == {("accuracy", 40): 0.75, ("accuracy", 80): 0.875}


def test_a_metric_beyond_float32_is_written_as_inf(tmp_path):
    # Issue 46: the mse of a 1e30 label crashed the summary writer (and every resume).
    write_scalars(tmp_path, 40, {"mse": 2.5e58, "neg": -1e39, "pearson": 0.5}, prefix="eval_")
    values = {}
    for path in tf.io.gfile.glob(str(tmp_path / "events*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                values[value.tag] = float(tf.make_ndarray(value.tensor))
    assert values == {"eval_mse": np.inf, "eval_neg": -np.inf, "eval_pearson": 0.5}


def test_metric_text_keeps_large_values_short():
    assert [metric_text(v) for v in (0.8125, 2.5e58, float("inf"), float("nan"))] == [
        "0.8125", "2.5000e+58", "inf", "nan"]
