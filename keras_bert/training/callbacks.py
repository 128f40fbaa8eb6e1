"""Keras callbacks for long training runs."""

import sys
import time

import keras


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


class TensorBoard(keras.callbacks.TensorBoard):
    """`keras.callbacks.TensorBoard` whose step axis is the global training step.

    Keras counts batches from 0 at every `on_train_begin`; a resumed run
    would draw its curves over the start of the old ones. Here the summary
    step is the global step passed to the callbacks (with
    `steps_per_execution > 1`, the first step of each call).
    """

    def on_train_batch_begin(self, batch, logs=None):
        # Keras adds 1: summaries are written at step `batch + 1`.
        self._global_train_batch = batch
        super().on_train_batch_begin(batch, logs)
