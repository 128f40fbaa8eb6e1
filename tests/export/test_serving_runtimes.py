"""tools/check_serving_runtime.py over several TF Serving runtimes (2.20, 2.19, 2.18)."""

from keras_bert.export.runtime_check import RUNTIMES, compare_reports, default_venv
from tests.conftest import run_tool
from tests.export.test_serving_runtime import _report


def test_runtimes_each_get_their_cached_venv(tmp_path):
    assert RUNTIMES == ("2.20", "2.19", "2.18")
    venvs = {default_venv(runtime) for runtime in RUNTIMES}
    assert len(venvs) == 3 and all(v.endswith(f"serving-runtime-tf{r}")
                                   for v, r in zip(map(default_venv, RUNTIMES), RUNTIMES))
    # One --venv cannot hold several runtimes: refused before anything runs.
    status, _, err = run_tool("check_serving_runtime", "--model", tmp_path, "--runtime", "all",
                              "--venv", tmp_path / "venv")
    assert status == 1 and "--venv names one runtime's venv" in err
    assert not (tmp_path / "venv").exists()


def test_a_failure_names_the_runtime_that_ran():
    reference = _report([[0.25, 0.75]], [b"pos"])
    candidate = dict(_report([[0.25, 0.75]], [b"pos"]), tensorflow="2.18.1")
    candidate["exports"] = {}
    report = compare_reports(reference, candidate)
    assert not report.ok
    assert report.errors == ["e/1: failed in TensorFlow 2.18.1: not run"]
