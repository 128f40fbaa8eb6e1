"""`import keras_bert` gives the core classes and every subpackage on first use."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_subpackages_load_on_first_attribute_access():
    code = (
        "import sys, keras_bert\n"
        "assert 'keras_bert.checkpoints' not in sys.modules\n"  # Not imported by keras_bert.
        "print(keras_bert.checkpoints.convert_checkpoint.__name__, keras_bert.training"
        ".create_optimizer.__name__, keras_bert.progress.Progress.__name__)\n"
        "assert 'training' in dir(keras_bert)\n"
        "try:\n"
        "    keras_bert.nothing\n"
        "except AttributeError as e:\n"
        "    print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == [
        "convert_checkpoint create_optimizer Progress",
        "module 'keras_bert' has no attribute 'nothing'",
    ]
