import importlib.util
import io

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.training import StepLogger, TensorBoard


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
