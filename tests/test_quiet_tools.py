"""Tools print no TensorFlow start-up lines at default verbosity.

TensorFlow writes notices to file descriptor 2 before its logging is set up
(absl's "All log messages before absl::InitializeLog()", oneDNN, cudart_stub,
cpu_feature_guard) and again on its first device probe; tools/_cli.py hides
them by hooking the first `import tensorflow` of a process that imported it.
Every tool imports `_cli` before anything that could load TensorFlow (checked
here on the source, cheaply), and real runs of the tools that leaked show no
such line (slow tier: each starts TensorFlow).
"""

import ast
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

TOOLS = os.path.join(ROOT, "tools")
# What TensorFlow's start-up notices contain; none of it is ours.
NOTICES = ("absl::InitializeLog", "I0000 ", "W0000 ", "E0000 ", "oneDNN", "cuda_",
           "cudart_stub", "cpu_feature_guard", "rebuild TensorFlow", "cuInit")


def _entry_points():
    return sorted(name for name in os.listdir(TOOLS)
                  if name.endswith(".py") and not name.startswith("_"))


def _imports_before_cli(path):
    """Top-level modules imported before `import _cli` (all of them if it never is)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    before = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module]
        else:
            continue
        if "_cli" in names:
            return before
        before += names
    return before + ["(no import _cli)"]


@pytest.mark.parametrize("tool", _entry_points())
def test_every_tool_imports_cli_before_anything_that_loads_tensorflow(tool):
    before = _imports_before_cli(os.path.join(TOOLS, tool))
    heavy = [name for name in before if name.split(".")[0] not in sys.stdlib_module_names]
    assert not heavy, f"tools/{tool} imports {heavy} before _cli: its TensorFlow is not quiet"


def _leaked(text):
    return [line for line in text.splitlines() if any(n in line for n in NOTICES)]


def _run(*command, cwd=ROOT):
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = ROOT
    done = subprocess.run([sys.executable, *command], capture_output=True, text=True,
                          timeout=600, cwd=cwd, env=env)
    return done


@pytest.mark.slow
def test_tools_that_leaked_are_quiet(classifier_export, tmp_path):
    export = os.path.dirname(classifier_export["export_dir"])
    # tool: (arguments, exit status, what it says). check_serving_runtime's real check
    # builds a TensorFlow 2.20 venv (minutes); a missing export stops it after its imports.
    runs = {
        "serving_config.py": (("--model", export, "--output", str(tmp_path / "serving")), 0,
                              "models.config"),
        "predict.py": (("--model", export, "a good movie"), 0, "a good movie\t"),
        "check_serving_runtime.py": (("--model", str(tmp_path / "missing")), 1,
                                     "error: No SavedModel in"),
    }
    for tool, (args, status, said) in runs.items():
        done = _run(os.path.join(TOOLS, tool), *args)
        assert done.returncode == status, (tool, done.stderr[-2000:])
        assert said in done.stdout + done.stderr, (tool, done.stdout, done.stderr)
        assert not _leaked(done.stdout + done.stderr), (tool, done.stderr)
