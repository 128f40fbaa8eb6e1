"""Keras callbacks for long training runs."""

import os
import sys
import time

import keras
import tensorflow as tf


class StepLogger(keras.callbacks.Callback):
    """Prints one line every `log_every` steps: step, metrics, rate, speed.

    Works in log files (no carriage returns), unlike the progress bar.
    Example line:
        step 200/1000 loss 7.0213 mlm_loss 6.3311 masked_lm_accuracy 0.0820
        nsp_loss 0.6902 nsp_accuracy 0.5312 learning_rate 9.0e-05
        examples/s 412.3 (12.1 s)

    Args:
        log_every: int, steps between lines.
        batch_size: int, examples per step (global batch x accumulation), for
            examples/second.
        total_steps: int or None, shown as "step N/total".
        stream: file to write to (default sys.stdout).
    """

    def __init__(self, log_every, batch_size, total_steps=None, stream=None):
        super().__init__()
        self.log_every = log_every
        self.batch_size = batch_size
        self.total_steps = total_steps
        self.stream = stream
        self._last_step = None
        self._last_time = None

    def on_train_batch_begin(self, batch, logs=None):
        if self._last_step is None:
            self._last_step, self._last_time = batch, time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        step = batch + 1
        if self._last_step is None or step // self.log_every == self._last_step // self.log_every:
            return
        now = time.perf_counter()
        elapsed = max(now - self._last_time, 1e-9)
        speed = (step - self._last_step) * self.batch_size / elapsed
        total = f"/{self.total_steps}" if self.total_steps else ""
        parts = [f"step {step}{total}"]
        for name, value in (logs or {}).items():
            if name == "learning_rate":
                parts.append(f"{name} {float(value):.3e}")
            else:
                parts.append(f"{name} {float(value):.4f}")
        parts.append(f"examples/s {speed:.1f} ({elapsed:.1f} s)")
        stream = self.stream or sys.stdout
        # On a terminal the Keras progress bar owns the current line.
        newline = "\n" if getattr(stream, "isatty", lambda: False)() else ""
        stream.write(newline + " ".join(parts) + "\n")
        stream.flush()
        self._last_step, self._last_time = step, now


class TensorBoard(keras.callbacks.Callback):
    """Writes the training logs as TensorBoard scalars over the global step.

    Each entry of the batch logs (loss, metrics, `learning_rate`) becomes the
    scalar `batch_<name>` in `log_dir/train`, the tags and layout of
    `keras.callbacks.TensorBoard`'s batch summaries. The step is the global
    one that the Trainer passes as `batch` (plus one: the number of updates
    done), so a resumed run continues its curves instead of drawing over the
    start of the old ones; Keras' own callback counts from 0 at every
    `on_train_begin` and has no public way to start elsewhere. Logs are
    written whenever a multiple of `update_freq` steps was passed since the
    last write, which also holds with `steps_per_execution > 1` (one
    `on_train_batch_end` per call, `batch` = its last step).

    Args:
        log_dir: str, the run's log directory (what `tensorboard --logdir`
            reads).
        update_freq: int, steps between writes.
    """

    def __init__(self, log_dir, update_freq=100):
        super().__init__()
        if not isinstance(update_freq, int) or update_freq < 1:
            raise ValueError(
                "Expected update_freq to be a positive int (steps). "
                f"Received: update_freq={update_freq!r}"
            )
        self.log_dir = log_dir
        self.update_freq = update_freq
        self._writer = None
        self._last_step = None

    def on_train_begin(self, logs=None):
        self._writer = tf.summary.create_file_writer(os.path.join(self.log_dir, "train"))
        self._last_step = None

    def on_train_batch_begin(self, batch, logs=None):
        if self._last_step is None:
            self._last_step = batch

    def on_train_batch_end(self, batch, logs=None):
        step = batch + 1
        if self._last_step is None:
            self._last_step = batch
        if step // self.update_freq == self._last_step // self.update_freq:
            return
        self._last_step = step
        if self._writer is None or not isinstance(logs, dict):
            return
        with self._writer.as_default(step=step):
            for name, value in logs.items():
                tf.summary.scalar(f"batch_{name}", float(value))

    def on_train_end(self, logs=None):
        if self._writer is not None:
            self._writer.close()
            self._writer = None
