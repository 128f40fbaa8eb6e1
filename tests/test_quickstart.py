"""After the quickstart: its "Try:" line runs as printed, and README examples leave its outputs alone."""

import os
import re
import shlex
import subprocess
import sys

import pytest

from tests.conftest import tool_module
from tests.test_readme import all_examples

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What tools/quickstart.py writes: the README's examples build on them, never over them.
QUICKSTART_OUTPUTS = ("models/minilm", "models/sentiment", "exports/sentiment/1")


def test_try_line_names_the_interpreter_that_has_tensorflow(monkeypatch):
    quickstart = tool_module("quickstart")
    monkeypatch.chdir(ROOT)
    venv_python = os.path.join(ROOT, ".venv", "bin", "python")
    line = quickstart.command_line(venv_python, os.path.join(ROOT, "tools", "predict.py"),
                                   "--model", os.path.join(ROOT, "exports", "sentiment", "1"),
                                   "your text")
    # Not a bare `python`, which after `bash tools/quickstart.sh` has no TensorFlow.
    assert line == ".venv/bin/python tools/predict.py --model exports/sentiment/1 'your text'"
    outside = quickstart.command_line("/opt/py/bin/python", "/elsewhere/x.py")
    assert outside == "/opt/py/bin/python /elsewhere/x.py"


@pytest.mark.slow
def test_try_line_runs_as_printed(tmp_path, monkeypatch):
    from keras_bert.export import export_model
    from tests.training.finetune_fixtures import make_model_dir

    from keras_bert.tasks import BertClassifier

    encoder_dir = make_model_dir(str(tmp_path / "tiny"))
    BertClassifier.from_pretrained(encoder_dir, num_classes=2, label_names=["neg", "pos"]
                                   ).save_pretrained(str(tmp_path / "sentiment"))
    export_dir = export_model(str(tmp_path / "sentiment"), str(tmp_path / "exports" / "s"))
    monkeypatch.chdir(ROOT)
    line = tool_module("quickstart").command_line(
        sys.executable, os.path.join(ROOT, "tools", "predict.py"), "--model", export_dir,
        "your text")
    done = subprocess.run(line, shell=True, cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3"),
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"\b(neg|pos)\b", done.stdout), done.stdout


@pytest.mark.parametrize("output", QUICKSTART_OUTPUTS)
def test_readme_examples_never_write_over_the_quickstart_outputs(output):
    writes = []
    for example in all_examples():
        text = example.text
        if example.kind == "python":
            targets = re.findall(r"save_pretrained\(\s*['\"]([^'\"]+)['\"]", text)
            targets += re.findall(r"\.save\(\s*['\"]([^'\"]+)['\"]", text)
        else:  # Skipped examples too: a reader runs them after the quickstart.
            words = shlex.split(text)
            targets = [words[i + 1] for i, w in enumerate(words[:-1]) if w == "--output"]
        writes += [(example.where, t) for t in targets if t.rstrip("/") == output]
    assert not writes, f"README examples write over the quickstart's {output}: {writes}"
