"""saved_model_cli sees string signatures, and runs the export with TF1 sessions (as TF Serving)."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests.export.conftest import preprocessor

# Runs saved_model_cli in subprocesses on a built export.
pytestmark = pytest.mark.slow

# `saved_model_cli run` loads the SavedModel in a TF1 Session, the way TF
# Serving's C++ loader does. The stock command cannot register the
# tensorflow-text op (it imports only tensorflow), so `run` goes through the
# same main() after `import tensorflow_text`, as exports/README.md shows.
CLI_RUN = ("import tensorflow_text; "
           "from tensorflow.python.tools.saved_model_cli import main; main()")


@pytest.fixture(scope="module")
def cli_output(classifier_export):
    export_dir = classifier_export["export_dir"]
    cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    script = (
        f"'{cli}' show --dir '{export_dir}' --all && echo '=====RUN=====' && "
        f"'{sys.executable}' -c '{CLI_RUN}' run --dir '{export_dir}' --tag_set serve "
        f"--signature_def serving_default --input_exprs 'text=[\"a b\", \"c\"]'"
    )
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    process = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                             timeout=300, env=env)
    assert process.returncode == 0, process.stdout[-3000:] + process.stderr[-5000:]
    show, run = process.stdout.split("=====RUN=====")
    return show, run


def signature_block(show, name):
    match = re.search(rf"signature_def\['{name}'\]:\n(.*?)(?:\n\n|\Z)", show, re.S)
    assert match, f"no signature {name!r} in:\n{show}"
    return match.group(1)


def test_show_lists_string_signatures(cli_output):
    show, _ = cli_output
    for name, inputs in (("serving_default", ["text"]), ("classify", ["text"]),
                         ("embed", ["text"]), ("preprocess", ["text"])):
        block = signature_block(show, name)
        for key in inputs:
            assert re.search(rf"inputs\['{key}'\] tensor_info:\n\s+dtype: DT_STRING\n"
                             rf"\s+shape: \(-1\)", block), block
        assert "Method name is: tensorflow/serving/predict" in block
    block = signature_block(show, "serving_default")
    assert re.search(r"outputs\['probabilities'\] tensor_info:\n\s+dtype: DT_FLOAT\n"
                     r"\s+shape: \(-1, 3\)", block), block
    assert re.search(r"outputs\['label'\] tensor_info:\n\s+dtype: DT_STRING", block)
    block = signature_block(show, "encode")
    assert re.search(r"inputs\['token_ids'\] tensor_info:\n\s+dtype: DT_INT32\n"
                     r"\s+shape: \(-1, -1\)", block), block


def test_run_prints_the_probabilities(cli_output, classifier_export):
    _, run = cli_output
    match = re.search(r"Result for output key probabilities:\n(\[\[.*?\]\])", run, re.S)
    assert match, run
    printed = np.array([[float(x) for x in row.split()]
                        for row in re.findall(r"\[([^\[\]]+)\]", match.group(1))])
    inputs = preprocessor(classifier_export["vocab_file"])(tf.constant(["a b", "c"]))
    expected = tf.nn.softmax(classifier_export["model"](inputs)).numpy()
    np.testing.assert_allclose(printed, expected, atol=1e-5)  # numpy prints 8 digits.
