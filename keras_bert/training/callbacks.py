"""Keras callbacks for long training runs: progress, TensorBoard."""

import importlib.util
import os
import sys
import time

import keras
import numpy as np
import tensorflow as tf

from keras_bert.progress import Progress


def metric_text(value):
    """A metric for a log line: "0.8125"; "2.5000e+58" when large (never 59 digits)."""
    return f"{value:.4f}" if not abs(value) >= 1e9 else f"{value:.4e}"


def _summary_value(value):
    """`value` as the float32 a summary holds: beyond float32's range, +-inf (not a crash)."""
    with np.errstate(over="ignore"):
        return np.float32(value)


class StepLogger(keras.callbacks.Callback):
    """Training progress: a bar with ETA on a terminal, a line every `log_every` steps elsewhere.

        step 200/1000 loss 7.0213 ... learning_rate 9.0e-05 examples/s 412.3 (12.1 s) ETA 1:05

    A resumed run counts its rate and ETA from the step it resumed at.

    Args:
        log_every: int, steps between lines.
        batch_size: int, examples per step (global batch x accumulation), for
            examples/second.
        total_steps: int or None, shown as "step N/total".
        stream: file to write to (default sys.stdout).
        mode: "auto" (a bar on a terminal), "bar" or "lines".
    """

    def __init__(self, log_every, batch_size, total_steps=None, stream=None, mode="auto"):
        super().__init__()
        self.log_every = log_every
        self.batch_size = batch_size
        self.total_steps = total_steps
        self.stream = stream
        self.mode = mode
        self.progress = None
        self._last_step = None
        self._last_time = None

    def on_train_batch_begin(self, batch, logs=None):
        if self.progress is None:
            self._last_step, self._last_time = batch, time.perf_counter()
            self.progress = Progress(
                self.total_steps, unit="step", mode=self.mode, every=self.log_every,
                stream=self.stream or sys.stdout, initial=batch, format_line=self._line)

    def on_train_batch_end(self, batch, logs=None):
        if self.progress is None:
            return
        values = {name: float(value) for name, value in (logs or {}).items()}
        self.progress.update(batch + 1, values)

    def clear(self):
        """Erases the progress bar's line, so that other output starts on a clean line."""
        if self.progress is not None:
            self.progress.clear()

    def on_train_end(self, logs=None):
        if self.progress is not None:
            self.progress.close()

    def _line(self, step, values):
        now = time.perf_counter()
        elapsed = max(now - self._last_time, 1e-9)
        speed = (step - self._last_step) * self.batch_size / elapsed
        self._last_step, self._last_time = step, now
        total = f"/{self.total_steps}" if self.total_steps else ""
        parts = [f"step {step}{total}"]
        for name, value in values:
            if name == "learning_rate":
                parts.append(f"{name} {value:.3e}")
            else:
                parts.append(f"{name} {metric_text(value)}")
        parts.append(f"examples/s {speed:.1f} ({elapsed:.1f} s)")
        return " ".join(parts)


class TensorBoard(keras.callbacks.Callback):
    """Writes the training logs as TensorBoard scalars over the global step.

    Each log entry becomes `batch_<name>` in `log_dir/train` (Keras' names)
    at the global step, so a resumed run continues its curves (Keras'
    callback counts from 0 at every `on_train_begin`); written whenever a
    multiple of `update_freq` steps was passed.

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
                tf.summary.scalar(f"batch_{name}", _summary_value(float(value)))

    def on_train_end(self, logs=None):
        if self._writer is not None:
            self._writer.close()
            self._writer = None


def tensorboard_available():
    """Whether the `tensorboard` package (Keras' TensorBoard callback needs it) is installed."""
    return importlib.util.find_spec("tensorboard") is not None


def write_scalars(log_dir, step, values, prefix=""):
    """Appends the scalars `values` {name: number} (names after `prefix`) to the
    TensorBoard event files in `log_dir`, at the global `step`. Non-numeric
    values are skipped; one beyond float32's range is written as +-inf."""
    writer = tf.summary.create_file_writer(os.fspath(log_dir))
    with writer.as_default():
        for name, value in values.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                tf.summary.scalar(prefix + name, _summary_value(value), step=int(step))
    writer.flush()
    writer.close()
