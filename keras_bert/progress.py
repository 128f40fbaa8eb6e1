"""One progress display for long work: a Keras progress bar on a terminal, plain lines elsewhere.

In a log file or a pipe, a plain line every `every` units or `interval`
seconds, with no carriage returns and no colour codes.

Example:
>>> progress = Progress(total=num_lines, unit="line")
>>> for batch in batches:
...     progress.update(progress.done + len(batch))
>>> progress.close()
"""

import contextlib
import logging
import sys
import time

MODES = ("auto", "bar", "lines")


@contextlib.contextmanager
def default_log_handler(name="keras_bert", stream=None):
    """Shows the library's INFO lines while the block runs, when nobody configured logging.

    If neither the logger `name` nor the root logger has a handler, one
    writing the bare message to `stream` (None: sys.stdout) at INFO is
    attached for the block. A program that configures logging keeps its own.
    """
    logger = logging.getLogger(name)
    if logger.handlers or logging.getLogger().handlers:
        yield
        return
    handler = logging.StreamHandler(stream or sys.stdout)
    handler.setFormatter(logging.Formatter("%(message)s"))
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    if level == logging.NOTSET:  # A level the program set stays.
        logger.setLevel(logging.INFO)
    # Not to the root logger too: absl's logging (TensorFlow's checkpoint saver
    # logs "Sharding callback duration") calls `logging.basicConfig()` mid-run,
    # which gives the root a stderr handler that would print every later line twice.
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate


def _is_terminal(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def format_duration(seconds):
    """1:02:03, 4:05 or 6s."""
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
    if seconds >= 60:
        return f"{seconds // 60}:{seconds % 60:02d}"
    return f"{seconds}s"


def byte_unit(total_bytes):
    """("KB", 1e3) or ("MB", 1e6): a unit that counts `total_bytes` in whole numbers above 100.

    The bar shows integer counts: 0.4 MB would read "0/0".
    >>> byte_unit(460_000)
    ('KB', 1000.0)
    """
    return ("MB", 1e6) if total_bytes >= 1e8 else ("KB", 1e3)


def _format_value(value):
    if isinstance(value, float):
        return f"{value:.4f}" if abs(value) >= 1e-3 or value == 0 else f"{value:.3e}"
    return str(value)


class Progress:
    """Reports progress through `total` units of work.

    Args:
        total: int or float, units in all (None: unknown).
        unit: str, what a unit is ("step", "line", "MB", ...).
        mode: "auto" (a bar on a terminal, else lines), "bar" or "lines".
        every: number or None; lines mode prints a line each time `done`
            passes a multiple of it. None: at most one every `interval` s.
        interval: float, seconds between lines when `every` is None.
        stream: file to write to (default: sys.stderr, read when writing).
        initial: units already done before this run (a resumed run): the
            rate and ETA count only what this run did.
        format_line: callable(done, values) -> str, the text of a line
            (default: "UNIT done/total (pct%) name value ... rate/s");
            " ETA ..." is appended while work remains.

    In lines mode a job that ends within `interval` seconds prints nothing.
    """

    def __init__(self, total, unit="step", mode="auto", every=None, interval=10.0,
                 stream=None, initial=0, format_line=None):
        if mode not in MODES:
            raise ValueError(f"Expected mode in {MODES}. Received: mode={mode!r}")
        self.total = total
        self.unit = unit
        self.every = every
        self.interval = interval
        self._stream = stream
        self.initial = initial
        self.done = initial
        self.format_line = format_line or self._default_line
        if mode == "auto":
            mode = "bar" if _is_terminal(self.stream) else "lines"
        self.mode = mode
        self._start = time.perf_counter()
        self._last_line_time = self._start
        self._printed = False
        self._bar = None
        self._closed = False

    @property
    def stream(self):
        return self._stream or sys.stderr

    # --- What the caller calls ---------------------------------------------

    def update(self, done, values=None):
        """Records that `done` units are done; `values`: dict or (name, value) pairs to show."""
        if self._closed:
            return
        previous, self.done = self.done, done
        values = list(values.items()) if isinstance(values, dict) else list(values or [])
        if self.mode == "bar":
            self._update_bar(done, values)
        if self.mode == "lines" and self._line_due(previous, done):
            self.log(self._line(done, values))
        if self.total is not None and done >= self.total:
            self.close(values)

    def log(self, text):
        """Writes a line that stays: above the bar on a terminal, as it is elsewhere."""
        self.clear()
        stream = self.stream
        stream.write(text + "\n")
        stream.flush()
        self._printed = True
        self._last_line_time = time.perf_counter()

    def clear(self):
        """Erases the bar from its line, before other output; the next update draws it again."""
        if self.mode == "bar" and self._bar is not None and not self._closed:
            width = getattr(self._bar, "_prev_total_width", 0)
            self.stream.write("\r" + " " * width + "\r")
            self.stream.flush()
            self._bar._prev_total_width = 0

    def close(self, values=None):
        """Ends the display (a last line in lines mode, if any was printed)."""
        if self._closed:
            return
        self._closed = True
        if self.mode == "bar" and self._bar is not None:
            self._with_stdout(self._bar.update, self.done, values or [], finalize=True)
        elif self.mode == "lines" and self._printed and self.done != self._last_line_done:
            self.log(self._line(self.done, values or []))

    # --- Rate, ETA, lines --------------------------------------------------

    _last_line_done = None

    def rate(self):
        """Units per second in this run."""
        elapsed = time.perf_counter() - self._start
        return (self.done - self.initial) / elapsed if elapsed > 0 else 0.0

    def eta(self):
        """Seconds left, or None."""
        rate = self.rate()
        if self.total is None or rate <= 0 or self.done >= self.total:
            return None
        return (self.total - self.done) / rate

    def _line_due(self, previous, done):
        if self.every:
            return done // self.every != previous // self.every
        finished = self.total is not None and done >= self.total
        now = time.perf_counter()
        if finished:
            return self._printed or now - self._start >= self.interval
        return now - self._last_line_time >= self.interval

    def _line(self, done, values):
        self._last_line_done = done
        line = self.format_line(done, values)
        eta = self.eta()
        return line if eta is None else f"{line} ETA {format_duration(eta)}"

    def _default_line(self, done, values):
        total = self.total
        if total is None:
            parts = [f"{self.unit} {_format_value(done)}"]
        else:
            percent = 100.0 * done / total if total else 100.0
            parts = [f"{self.unit} {_format_value(done)}/{_format_value(total)} ({percent:.0f}%)"]
        parts += [f"{name} {_format_value(value)}" for name, value in values]
        parts.append(f"{self.rate():.1f} {self.unit}/s")
        return " ".join(parts)

    # --- The bar -----------------------------------------------------------

    def _with_stdout(self, function, *args, **kwargs):
        # keras.utils.Progbar writes to sys.stdout; point it at our stream.
        saved, sys.stdout = sys.stdout, self.stream
        try:
            return function(*args, **kwargs)
        finally:
            sys.stdout = saved

    def _update_bar(self, done, values):
        if self._bar is None:
            self._bar = self._with_stdout(_make_bar, self.total, self.unit, self.initial)
        self._with_stdout(self._bar.update, done, values, finalize=False)


def _make_bar(total, unit, initial):
    import keras

    class Bar(keras.utils.Progbar):
        """Progbar whose time per unit counts from `initial` (a resumed run's first step)."""

        def _estimate_step_duration(self, current, now):
            return super()._estimate_step_duration(current - initial, now)

    # Every value shown as it is (the caller's are running means already).
    return Bar(total, unit_name=unit, stateless_metrics=set())
