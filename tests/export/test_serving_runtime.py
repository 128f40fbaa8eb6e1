"""The old-runtime check's tool and comparison. Its run in TF Serving's TensorFlow (2.20) on every
export kind is one slow test with the windowed exports: tests/export/test_windowed_export.py."""

import base64
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

from keras_bert.export.runtime_check import compare_reports

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "check_serving_runtime.py")


def _tool():
    spec = importlib.util.spec_from_file_location("check_serving_runtime", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_help_is_quiet():
    code = ("import runpy, sys\nsys.argv = ['check_serving_runtime.py', '--help']\n"
            f"try:\n    runpy.run_path({TOOL!r}, run_name='__main__')\n"
            "except SystemExit as e:\n    assert e.code == 0\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "--model EXPORT_DIR" in done.stdout and "--venv" in done.stdout


def _report(probabilities, labels, error=None):
    """A probe report of one export with one signature, as runtime_probe.py writes it."""
    def encode(array):
        array = np.asarray(array)
        data = ([base64.b64encode(v).decode() for v in array.ravel()] if array.dtype == object
                else array.ravel().tolist())
        return {"dtype": str(array.dtype), "shape": list(array.shape), "data": data}

    outputs = {"probabilities": encode(np.asarray(probabilities, np.float32)),
               "label": encode(np.asarray(labels, dtype=object))}
    signature = {"inputs": ["text"], "session": outputs, "session_empty": outputs,
                 "function": outputs}
    export = {"error": error} if error else {"signatures": {"classify": signature}}
    return {"tensorflow": "2.x", "tensorflow_text": "2.x", "exports": {"e/1": export}}


def test_comparison_catches_what_would_break_a_rollout():
    reference = _report([[0.25, 0.75]], [b"pos"])
    assert compare_reports(reference, _report([[0.25 + 5e-6, 0.75]], [b"pos"])).ok
    drifted = compare_reports(reference, _report([[0.2502, 0.7498]], [b"pos"]))
    assert not drifted.ok and drifted.max_float_diff == pytest.approx(2e-4, rel=1e-3)
    relabeled = compare_reports(reference, _report([[0.25, 0.75]], [b"neg"]))
    assert not relabeled.ok
    detail = {(c.path, c.output): c.detail for c in relabeled.comparisons}
    assert detail["session", "label"] == "differs at [0]: b'neg' instead of b'pos'"
    assert detail["session", "probabilities"] == "max |diff| 0.0e+00"
    reshaped = compare_reports(reference, _report([[0.25, 0.75, 0.0]], [b"pos"]))
    detail = {(c.path, c.output): c.detail for c in reshaped.comparisons}
    assert detail["function", "probabilities"] == "float32[1, 3] instead of float32[1, 2]"
    # An export the old runtime cannot load (e.g. a newer op) fails the check.
    missing = compare_reports(reference, _report([[0.25, 0.75]], [b"pos"], error=(
        "NotFoundError: Op type not registered 'RoundRobinTrim'")))
    assert not missing.ok and "RoundRobinTrim" in missing.errors[0]


def test_a_folder_it_did_not_make_is_never_deleted(tmp_path):
    # --venv pointed at a project's own venv: refused, left as it was (it once was deleted).
    from keras_bert.export.runtime_check import ensure_runtime

    venv = tmp_path / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    with pytest.raises(FileExistsError, match="is not a runtime venv keras_bert made .* left "
                                              "alone. Pass --venv a new folder"):
        ensure_runtime(str(venv), python="/nonexistent/python", log=lambda m: None)
    assert sorted(p.name for p in venv.iterdir()) == ["bin", "pyvenv.cfg"]


def test_a_session_only_reference_holds_the_old_load_path_to_its_session_answers():
    # This runtime runs its Session path only (check_serving_runtime); the old runtime's
    # tf.saved_model.load answers are compared with those, so a drift there still fails.
    reference = _report([[0.25, 0.75]], [b"pos"])
    del reference["exports"]["e/1"]["signatures"]["classify"]["function"]
    assert compare_reports(reference, _report([[0.25, 0.75]], [b"pos"])).ok
    candidate = _report([[0.25, 0.75]], [b"pos"])
    candidate["exports"]["e/1"]["signatures"]["classify"]["function"] = _report(
        [[0.3, 0.7]], [b"pos"])["exports"]["e/1"]["signatures"]["classify"]["session"]
    report = compare_reports(reference, candidate)
    assert not report.ok
    assert [(c.path, c.output) for c in report.comparisons if not c.ok] == [
        ("function", "probabilities")]
