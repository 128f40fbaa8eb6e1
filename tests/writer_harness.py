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

Writers that import TensorFlow (5-10 s a start, several times that under load)
can come from a `Forker` instead: a process that imports TensorFlow and keras_bert
once, runs no TensorFlow op, and forks one writer process per `start`. Each writer
is still a process of its own that is really SIGKILLed; only the import is shared.
"""

import json
import os
import shutil
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


def start(program, *args, env=None, forker=None, **options):
    """Starts `program` under the harness (`command`'s options); returns the Popen:
    its stdout a pipe, its stderr a temporary file (`errors` reads it). With a
    `forker` (a `Forker`), a process forked from it, with the same methods."""
    env = {**os.environ, "PYTHONPATH": ROOT, **(env or {})}
    if forker is not None:
        return forker.start(command(program, *args, **options)[2:], env)
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


class Forker:
    """A process that has imported TensorFlow and keras_bert and forks writers on request.

    Its parent runs no TensorFlow op (a forked child of a process whose runtime has
    started would inherit its thread pools' locks, not its threads). Requests and
    replies are JSON lines on its stdin and stdout: ["start", argv, env, cwd, stdout,
    stderr] -> pid; ["wait", pid] -> exit status; ["poll", pid] -> exit status or None.
    """

    def __init__(self):
        self.folder = tempfile.mkdtemp(prefix="writer-forker-")
        self.count = 0
        self.process = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--serve"],
            env={**os.environ, "PYTHONPATH": ROOT}, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True)

    def ask(self, *request):
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        reply = self.process.stdout.readline()
        assert reply, "the writer forker ended"
        return json.loads(reply)

    def start(self, argv, env):
        self.count += 1
        out, log = (os.path.join(self.folder, f"{self.count}.{n}") for n in ("out", "err"))
        for path in (out, log):
            open(path, "w").close()  # There before the writer is: `errors` reads it.
        pid = self.ask("start", argv, env, os.getcwd(), out, log)
        return Forked(self, pid, out, log)

    def close(self):
        self.process.stdin.close()
        self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


class Forked:
    """A writer forked by a `Forker`: the part of Popen's interface the tests use."""

    def __init__(self, forker, pid, out, log):
        self.forker, self.pid, self.out = forker, pid, out
        self.returncode = None
        self.log = open(log, encoding="utf-8", errors="replace")

    def poll(self):
        if self.returncode is None:
            self.returncode = self.forker.ask("poll", self.pid)
        return self.returncode

    def wait(self, timeout=None):
        """The exit status; as Popen's, raises subprocess.TimeoutExpired after `timeout` s."""
        if timeout is not None:
            deadline = time.monotonic() + timeout
            while self.poll() is None:
                if time.monotonic() > deadline:
                    raise subprocess.TimeoutExpired(f"forked writer {self.pid}", timeout)
                time.sleep(0.05)
        if self.returncode is None:
            self.returncode = self.forker.ask("wait", self.pid)
        return self.returncode

    def send_signal(self, sig):
        if self.returncode is None:
            os.kill(self.pid, sig)

    def kill(self):
        self.send_signal(signal.SIGKILL)

    def communicate(self):
        self.wait()
        with open(self.out, encoding="utf-8") as f:
            return f.read(), None


def _serve():
    """The `Forker`'s process: imports, then forks a writer per request."""
    import importlib

    for name in ("keras_bert", "keras_bert.checkpoints", "keras_bert.data", "keras_bert.export"):
        importlib.import_module(name)  # TensorFlow and keras_bert, once.

    for line in sys.stdin:
        request = json.loads(line)
        if request[0] == "start":
            pid = os.fork()
            if pid == 0:
                _run_forked(*request[1:])
            reply = pid
        else:
            pid, status = os.waitpid(request[1], os.WNOHANG if request[0] == "poll" else 0)
            reply = os.waitstatus_to_exitcode(status) if pid else None
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


def _run_forked(argv, env, cwd, out, log):
    """A forked writer: its environment, folder and output files, then `main(argv)`."""
    code = 1
    try:
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
        for fd, path in ((1, out), (2, log)):
            os.dup2(os.open(path, os.O_WRONLY), fd)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        main(argv)
        code = 0
    except SystemExit as exit_:  # As Python ends on it: an int, None (0) or a message (1).
        if exit_.code is None or isinstance(exit_.code, int):
            code = exit_.code or 0
        else:
            print(exit_.code, file=sys.stderr)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


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
    if sys.argv[1:] == ["--serve"]:
        sys.path.insert(0, ROOT)
        _serve()
    else:
        main(sys.argv[1:])
