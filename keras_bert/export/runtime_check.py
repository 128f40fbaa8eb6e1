"""Does an export answer the same in the runtime TF Serving links? The check before a rollout.

TF Serving 2.20.0 links TensorFlow 2.20 and tensorflow-text 2.20, older than the
2.21 that exports here. A cached virtual environment with those releases loads
the export as TF Serving's C++ loader does (`runtime_probe.py`) and runs every
string signature on `CHECK_TEXTS`; the outputs are compared with this runtime's.

Example:
>>> report = check_serving_runtime(["exports/sentiment/1"])
>>> report.ok, report.max_float_diff
(True, 1.19e-07)
"""

import base64
import contextlib
import dataclasses
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from keras_bert.export.op_set import isolated_python

#: The TensorFlow / tensorflow-text release that TF Serving 2.20.0 links.
RUNTIME = "2.20"
#: The releases `tools/check_serving_runtime.py --runtime all` checks, each in its
#: own cached venv (TF Serving 2.19 and 2.18 link tensorflow-text 2.12.1, whose
#: ops `op_set.missing_in_tf_text` checks).
RUNTIMES = ("2.20", "2.19", "2.18")
PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "runtime_probe.py")
MARKER = "keras_bert-runtime.json"

#: The texts every string signature runs on (one batch), as UTF-8 bytes.
CHECK_TEXTS = [
    b"",
    b"   \t\n  ",
    "Hello, World! This movie was GREAT.".encode(),
    "我爱北京天安门。東京は晴れです。서울은 맑아요".encode(),
    "Great 👍🏽 movie 🎉🎬 ❤️ 👨‍👩‍👧 family".encode(),
    # Combining accents (decomposed) next to precomposed ones.
    "Cafe\u0301 nai\u0308ve re\u0301sume\u0301 vs Café naïve résumé".encode(),
    # Control characters, zero-width space, BOM, line separator, an escape sequence.
    "a\x00b\x01c\x07d\x1b[31me\u200bf\ufeffg\u2028h\x7fi".encode(),
    # Invalid UTF-8: stray bytes, a bad continuation, a truncated sequence, a
    # UTF-16 surrogate encoded as UTF-8.
    b"bad \xff\xfe bytes \xc3\x28 and \xe2\x82 truncated \xed\xa0\x80 end",
    "مرحبا بالعالم नमस्ते दुनिया שלום".encode(),
    "3.14 $100 e-mail@example.com http://x.y/z?a=1&b=2 don't (yes) [no] {maybe}".encode(),
    "Z\u0351\u0358a\u0352\u0317l\u033bg\u0324o \u00a0\u3000\u2003 spaces".encode(),
    "ÀÉÎÕÜ ß İstanbul ΣΑΣ ǅ ﬁ".encode(),
    b"a" * 300,  # One word longer than WordPiece's 100 characters: [UNK].
    ("the quick brown fox jumps over the lazy dog. " * 500).encode(),  # 22,500 characters.
    "who jumped over the dog ?".encode(),
]
# Filled up to a request of 64 texts of many lengths, so that a classifier's sub-batched
# path (sorted by length, `sub_batches` tables start at 8-64 texts) runs as well.
CHECK_TEXTS += [" ".join(["the movie was good"] * (1 + i % 7) + [str(i)]).encode()
                for i in range(64 - len(CHECK_TEXTS))]


class RuntimeUnavailable(RuntimeError):
    """The old runtime could not be installed (no network, no wheel for this Python)."""


def default_venv(runtime=RUNTIME):
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "keras_bert", f"serving-runtime-tf{runtime}")


def _python_of(venv):
    return os.path.join(venv, "bin", "python")


@contextlib.contextmanager
def _lock(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # Two checks at once: one installs, one waits.
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def ensure_runtime(venv=None, runtime=RUNTIME, python=None, log=print):
    """Creates (once) the virtual environment of the old runtime; returns its python.

    Args:
        venv: str, its directory (default `default_venv(runtime)`).
        runtime: str, the TensorFlow and tensorflow-text minor release ("2.20").
        python: the interpreter that creates the venv (default this one's base).
        log: callable taking a str (progress).

    Raises:
        RuntimeUnavailable: the packages could not be installed.
    """
    venv = os.path.abspath(venv or default_venv(runtime))
    marker = os.path.join(venv, MARKER)
    if os.path.exists(marker):
        return _python_of(venv)
    with _lock(venv.rstrip("/") + ".lock"):
        if os.path.exists(marker):
            return _python_of(venv)
        partial = os.path.join(venv, MARKER + ".partial")
        if os.path.lexists(venv) and not os.path.exists(partial) and (
                not os.path.isdir(venv) or os.listdir(venv)):
            # Never delete what this function did not make (another project's venv).
            raise FileExistsError(
                f"{venv} exists and is not a runtime venv keras_bert made (it has no "
                f"{MARKER}), so it is left alone. Pass --venv a new folder, or leave --venv "
                f"out (default {default_venv(runtime)}).")
        shutil.rmtree(venv, ignore_errors=True)  # A half-made one from an interrupted run.
        log(f"creating {venv} with tensorflow=={runtime}.* and tensorflow-text=={runtime}.* "
            f"(once; later runs reuse it)")
        start = time.time()
        base = python or getattr(sys, "_base_executable", None) or sys.executable
        steps = [
            [base, "-m", "venv", venv],
            [_python_of(venv), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             "--no-compile",
             f"tensorflow=={runtime}.*", f"tensorflow-text=={runtime}.*"],
            [_python_of(venv), "-I", "-c",
             "import json, tensorflow as tf; from importlib.metadata import version; "
             "print(json.dumps({'tensorflow': tf.__version__, "
             "'tensorflow_text': version('tensorflow-text')}))"],
        ]
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PIP_NO_INPUT="1")
        env.pop("PYTHONPATH", None)
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, env=env, timeout=3600)
            if step is steps[0] and done.returncode == 0:
                open(partial, "w").close()  # Ours from now on, even if interrupted.
            if done.returncode != 0:
                shutil.rmtree(venv, ignore_errors=True)
                raise RuntimeUnavailable(
                    f"Could not install TensorFlow {runtime} and tensorflow-text {runtime} "
                    f"into {venv}: `{' '.join(step[:6])} ...` failed (rc={done.returncode}):\n"
                    f"{(done.stdout + done.stderr)[-2000:]}")
        versions = json.loads(done.stdout.strip().splitlines()[-1])
        if not versions["tensorflow"].startswith(runtime + "."):
            raise RuntimeUnavailable(f"{venv} got TensorFlow {versions['tensorflow']}, "
                                     f"not {runtime}.")
        versions["seconds_to_create"] = round(time.time() - start, 1)
        with open(marker, "w", encoding="utf-8") as f:
            json.dump(versions, f)
        os.remove(partial)
        log(f"created {venv} in {versions['seconds_to_create']:.0f} s: TensorFlow "
            f"{versions['tensorflow']}, tensorflow-text {versions['tensorflow_text']}")
    return _python_of(venv)


def run_probe(python, export_dirs, texts=CHECK_TEXTS, timeout=1800, function=True):
    """Runs runtime_probe.py with `python` on `export_dirs`; returns its report (a dict).
    With `function=False` the signatures run through a Session only, not also
    through `tf.saved_model.load` (this runtime's reference: see `compare_reports`)."""
    with tempfile.TemporaryDirectory(prefix="keras_bert-probe-") as tmp:
        request, output = os.path.join(tmp, "request.json"), os.path.join(tmp, "output.json")
        with open(request, "w", encoding="utf-8") as f:
            json.dump({"export_dirs": [os.path.abspath(p) for p in export_dirs],
                       "texts": [base64.b64encode(t).decode("ascii") for t in texts],
                       "function": function}, f)
        isolated_python(python, [PROBE, request, output], f"{python} {PROBE}", timeout, cwd=tmp)
        with open(output, encoding="utf-8") as f:
            report = json.load(f)
    # Keyed by the paths as given.
    report["exports"] = {path: report["exports"][os.path.abspath(path)] for path in export_dirs}
    return report


def _decode(encoded):
    if encoded["dtype"] == "object":
        array = np.array([base64.b64decode(v) for v in encoded["data"]], dtype=object)
    else:
        array = np.array(encoded["data"], dtype=encoded["dtype"])
    return array.reshape(encoded["shape"])


@dataclasses.dataclass
class Comparison:
    """One output of one signature, loaded one way, in both runtimes."""

    export_dir: str
    signature: str
    path: str  # "session", "session_empty" or "function"
    output: str
    ok: bool
    detail: str  # "exact", "max |diff| 1.2e-07", or what differs
    max_diff: float = 0.0
    shape: tuple = ()  # of this runtime's output


@dataclasses.dataclass
class RuntimeReport:
    """What `check_serving_runtime` found."""

    reference: dict  # versions of this runtime
    candidate: dict  # versions of the old runtime
    comparisons: list
    errors: list  # str: exports or signatures that failed or are missing

    @property
    def ok(self):
        return not self.errors and all(c.ok for c in self.comparisons) and bool(self.comparisons)

    @property
    def max_float_diff(self):
        return max((c.max_diff for c in self.comparisons), default=0.0)


def compare_outputs(reference, candidate, atol=1e-5, rtol=1e-5):
    """(ok, detail, max |diff|) of two numpy arrays: exact for strings, ints and
    bools; floats within atol + rtol * |reference|."""
    if reference.shape != candidate.shape or reference.dtype != candidate.dtype:
        return (False, f"{candidate.dtype}{list(candidate.shape)} instead of "
                f"{reference.dtype}{list(reference.shape)}", float("inf"))
    if reference.dtype.kind != "f":
        same = np.array_equal(reference, candidate)
        if same:
            return True, "exact", 0.0
        index = tuple(int(i) for i in np.argwhere(reference != candidate)[0])
        return (False, f"differs at {list(index)}: {candidate[index]!r} instead of "
                f"{reference[index]!r}", float("inf"))
    if reference.size == 0:
        return True, "exact", 0.0
    diff = np.abs(reference.astype(np.float64) - candidate.astype(np.float64))
    diff = np.where(np.isnan(reference) & np.isnan(candidate), 0.0, diff)
    worst = float(np.nanmax(np.where(np.isnan(diff), np.inf, diff)))
    ok = bool(np.all(diff <= atol + rtol * np.abs(reference.astype(np.float64))))
    return ok, f"max |diff| {worst:.1e}", worst


def compare_reports(reference, candidate, atol=1e-5, rtol=1e-5):
    """A `RuntimeReport` of two probe reports (this runtime's, the old one's).

    The old runtime's `tf.saved_model.load` outputs ("function") are compared
    with this runtime's of the same path where the reference has them, else with
    its Session outputs: the same graph on the same batch (`check_serving_runtime`
    runs this runtime's Session path only; its `tf.saved_model.load` path is
    the one every export test runs)."""
    versions = lambda r: {k: r.get(k) for k in ("tensorflow", "tensorflow_text")}  # noqa: E731
    report = RuntimeReport(versions(reference), versions(candidate), [], [])
    old = f"TensorFlow {candidate.get('tensorflow') or RUNTIME}"
    for export_dir, ref in reference["exports"].items():
        cand = candidate["exports"].get(export_dir, {"error": "not run"})
        for name, result in (("this runtime", ref), (old, cand)):
            if "error" in result:
                report.errors.append(f"{export_dir}: failed in {name}: {result['error']}")
        if "error" in ref or "error" in cand:
            continue
        if not ref["signatures"]:
            report.errors.append(f"{export_dir}: no signature takes only strings")
        for signature, paths in sorted(ref["signatures"].items()):
            other = cand["signatures"].get(signature)
            if other is None:
                report.errors.append(f"{export_dir}: signature {signature!r} missing in {old}")
                continue
            for path in ("session", "session_empty", "function"):
                for output, encoded in sorted(paths.get(path, paths["session"]).items()):
                    if output not in other[path]:
                        report.errors.append(f"{export_dir}: {signature} output {output!r} "
                                             f"missing in {old}")
                        continue
                    expected = _decode(encoded)
                    ok, detail, worst = compare_outputs(
                        expected, _decode(other[path][output]), atol, rtol)
                    report.comparisons.append(Comparison(export_dir, signature, path, output,
                                                         ok, detail, worst, expected.shape))
    return report


def check_serving_runtime(export_dirs, venv=None, runtime=RUNTIME, texts=CHECK_TEXTS,
                          atol=1e-5, rtol=1e-5, log=print, reference=None):
    """Runs every string signature of `export_dirs` here and in the old runtime; compares.

    Args:
        export_dirs: list of SavedModel version directories.
        venv, runtime, log: see `ensure_runtime`.
        texts: list of bytes, the batch every signature runs on.
        atol, rtol: float tolerance (strings, ints and bools must be equal).
        reference: this runtime's probe report of the same exports and
            texts (`run_probe(sys.executable, ...)`); default: run it here.

    Returns:
        `RuntimeReport`.
    """
    python = ensure_runtime(venv, runtime, log=log)
    if reference is None:
        log(f"running {len(export_dirs)} export(s) in this runtime ({sys.executable})")
        reference = run_probe(sys.executable, export_dirs, texts, function=False)
    log(f"running them in TensorFlow {runtime} ({python})")
    candidate = run_probe(python, export_dirs, texts)
    return compare_reports(reference, candidate, atol, rtol)


def format_report(report, atol=1e-5):
    """Lines for a terminal: one per export and signature, then the verdict."""
    ref, old = (f"TensorFlow {v['tensorflow']} + tensorflow-text {v['tensorflow_text']}"
                for v in (report.reference, report.candidate))
    lines = [f"reference (this runtime): {ref}", f"TF Serving's runtime:     {old}"]
    groups = {}
    for c in report.comparisons:
        groups.setdefault((c.export_dir, c.signature), []).append(c)
    for (export_dir, signature), items in groups.items():
        bad = [c for c in items if not c.ok]
        worst = max(c.max_diff for c in items)
        rows = max(c.shape[0] for c in items if c.path == "session" and c.shape)
        status = "OK" if not bad else "MISMATCH"
        lines.append(f"  {status:8s} {export_dir} {signature}: {rows} rows, {len(items)} outputs "
                     f"(Session, empty batch, tf.saved_model.load), float max |diff| {worst:.1e}")
        lines.extend(f"           {c.path} {c.output}: {c.detail}" for c in bad)
    lines.extend(f"  ERROR    {e}" for e in report.errors)
    exports = len({c.export_dir for c in report.comparisons})
    if report.ok:
        lines.append(f"VERDICT: OK. {exports} export(s), {len(groups)} signature(s) answer "
                     f"the same in {old} (strings and ints exact, floats max |diff| "
                     f"{report.max_float_diff:.1e} <= {atol:g}).")
    else:
        count = sum(not c.ok for c in report.comparisons) + len(report.errors)
        lines.append(f"VERDICT: MISMATCH. {count} problem(s) above: do not roll these "
                     f"exports out to a TF Serving that links {old} before they are explained.")
    return lines
