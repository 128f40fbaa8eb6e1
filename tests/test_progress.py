"""keras_bert.progress: a bar with ETA on a terminal, plain lines elsewhere."""

import io

import pytest

from keras_bert.progress import Progress, format_duration


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_lines_mode_prints_every_n_units_without_control_codes():
    stream = io.StringIO()
    progress = Progress(35, unit="step", every=10, stream=stream)
    assert progress.mode == "lines"  # Not a terminal.
    for done in range(1, 36):
        progress.update(done, {"loss": 0.5})
    lines = stream.getvalue().splitlines()
    assert [line.split()[1] for line in lines] == ["10/35", "20/35", "30/35", "35/35"]
    assert lines[0].startswith("step 10/35 (29%) loss 0.5000 ")
    assert "ETA " in lines[0] and "ETA " not in lines[-1]
    assert "\x1b" not in stream.getvalue() and "\r" not in stream.getvalue()


def test_lines_mode_keeps_a_short_job_quiet():
    stream = io.StringIO()
    progress = Progress(100, unit="line", interval=60, stream=stream)
    for done in range(10, 101, 10):
        progress.update(done)
    progress.close()
    assert stream.getvalue() == ""


def test_rate_and_eta_of_a_resumed_run_count_from_where_it_resumed():
    progress = Progress(100, mode="lines", initial=50, stream=io.StringIO())
    progress._start -= 10.0  # 10 s since this run started...
    progress.update(60)  # ...for 10 steps: 1 step/s, 40 steps left.
    assert progress.rate() == pytest.approx(1.0, rel=0.05)
    assert progress.eta() == pytest.approx(40.0, rel=0.05)


def test_bar_mode_on_a_terminal_draws_a_keras_bar_and_keeps_logged_lines():
    stream = Terminal()
    progress = Progress(4, unit="step", stream=stream)
    assert progress.mode == "bar"
    progress.update(1, {"loss": 1.0})
    progress.log("epoch 1 eval: accuracy 0.5000")
    for done in (2, 3, 4):
        progress.update(done, {"loss": 1.0})
    out = stream.getvalue()
    assert "━" in out and "\r" in out  # keras.utils.Progbar, redrawn in place.
    assert "\repoch 1 eval: accuracy 0.5000\n" in out  # On a line of its own.
    assert out.endswith("\n")  # The finished bar stays.


def test_mode_is_checked():
    with pytest.raises(ValueError, match="mode='tty'"):
        Progress(1, mode="tty")


def test_format_duration():
    assert [format_duration(s) for s in (5, 65, 3725)] == ["5s", "1:05", "1:02:05"]


def test_byte_unit_keeps_the_bar_s_integer_counts_readable():
    from keras_bert.progress import byte_unit

    assert byte_unit(460_000) == ("KB", 1e3)  # 460 KB, not "0/0" MB.
    assert byte_unit(5e9) == ("MB", 1e6)
