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


@pytest.mark.skipif(importlib.util.find_spec("tensorboard") is None,
                    reason="the tensorboard package is not installed")
def test_tensorboard_steps_continue_after_a_resume(tmp_path):
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    board = TensorBoard(str(tmp_path), update_freq=1)
    board.set_model(model)
    board.on_train_begin()
    for step in (20, 21):  # Global steps of a run resumed at 20.
        board.on_train_batch_begin(step)
        board.on_train_batch_end(step, {"loss": float(step)})
    board.on_train_end()
    steps = {}
    for path in tf.io.gfile.glob(str(tmp_path / "train" / "events*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                if value.tag == "batch_loss":
                    steps[event.step] = float(tf.make_ndarray(value.tensor))
    assert steps == {21: 20.0, 22: 21.0}
    assert np.isfinite(list(steps.values())).all()
