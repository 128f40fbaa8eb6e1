"""Runs a writer in a process of its own, stopped at one of its named steps.

keras_bert's writers call `keras_bert.steps.reached(name, step)` between the
steps of a commit (a no-op). This harness patches it, in the writer's process,
to pause at the wanted step: it writes the step's name to a marker file and
waits until the test removes that file (then the writer goes on) or kills it.
It can also run the object-store protocol on local paths (it patches
`keras_bert.storage.object_store`) and load keras_bert without its
`__init__` (no TensorFlow: a writer that starts in milliseconds).

    python tests/writer_harness.py [--bare] [--object-store] [--stop NAME[:STEP]]
        [--count N] [--marker FILE] (-c CODE | FILE) [ARGS...]

CODE runs with sys.argv == ["-c", *ARGS], FILE (a tool) as its `__main__`.
Tests use `start`, `wait_paused` and `kill_at`.
"""

import os
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def command(program, *args, stop=None, count=1, marker=None, bare=False, object_store=False):
    """The argv that runs `program` (Python code, or a .py file) under the harness."""
    options = ["--bare"] * bare + ["--object-store"] * object_store
    if stop:
        options += ["--stop", stop, "--count", str(count), "--marker", os.fspath(marker)]
    where = [program] if program.endswith(".py") and "\n" not in program else ["-c", program]
    return [sys.executable, os.path.abspath(__file__), *options, *where, *map(str, args)]


def start(program, *args, env=None, **options):
    """Starts `program` under the harness (`command`'s options); returns the Popen:
    its stdout a pipe, its stderr a temporary file (`errors` reads it)."""
    env = {**os.environ, "PYTHONPATH": ROOT, **(env or {})}
    log = tempfile.TemporaryFile("w+")
    process = subprocess.Popen(command(program, *args, **options), env=env,
                               stdout=subprocess.PIPE, stderr=log, text=True)
    process.log = log
    return process


def errors(process):
    """What the writer `process` wrote to stderr (its last 3000 characters)."""
    process.log.seek(0)
    return process.log.read()[-3000:]


def wait_paused(marker, process, timeout=240):
    """Waits until the writer `process` pauses (its `marker` exists)."""
    deadline = time.monotonic() + timeout
    while not os.path.exists(marker):
        if process.poll() is not None:
            raise AssertionError(f"the writer ended (rc {process.returncode}) before its "
                                 f"step:\n{errors(process)}")
        assert time.monotonic() < deadline, f"the writer never reached its step ({marker})"
        time.sleep(0.01)


def kill_at(stop, program, *args, tmp_path, count=1, **options):
    """Runs `program` until it reaches the step `stop`, then SIGKILLs it."""
    marker = os.path.join(tmp_path, f"reached-{stop.replace(':', '-')}")
    process = start(program, *args, stop=stop, count=count, marker=marker, **options)
    wait_paused(marker, process)
    process.send_signal(signal.SIGKILL)
    process.communicate()
    process.log.close()
    return marker


def _pause_at(wanted, count, marker, seconds=600):
    """A `keras_bert.steps.reached` that pauses at the `count`-th `wanted` step."""
    seen = []

    def reached(name, step=None):
        if wanted not in (name, f"{name}:{step}"):
            return
        seen.append(name)
        if len(seen) != count:
            return
        with open(marker, "w", encoding="utf-8") as f:
            f.write(wanted)
        deadline = time.monotonic() + seconds
        while os.path.exists(marker) and time.monotonic() < deadline:
            time.sleep(0.01)
    return reached


def main(argv):
    options = {"--stop": None, "--count": "1", "--marker": None}
    flags = set()
    while argv[0] in ("--bare", "--object-store") or argv[0] in options:
        if argv[0] in options:
            options[argv[0]], argv = argv[1], argv[2:]
        else:
            flags.add(argv.pop(0))
    sys.path.insert(0, ROOT)
    if "--bare" in flags:  # keras_bert without its __init__ (which imports TensorFlow).
        import types

        package = types.ModuleType("keras_bert")
        package.__path__ = [os.path.join(ROOT, "keras_bert")]
        sys.modules["keras_bert"] = package
    from keras_bert import steps, storage

    if options["--stop"]:
        steps.reached = _pause_at(options["--stop"], int(options["--count"]), options["--marker"])
    if "--object-store" in flags:
        storage.object_store = lambda path: True
    if argv[0] == "-c":
        sys.argv = argv[1:]
        sys.argv[0] = "-c"
        exec(compile(argv[1], "<writer>", "exec"), {"__name__": "__main__"})
    else:
        import runpy

        sys.argv = argv
        sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
        runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main(sys.argv[1:])
