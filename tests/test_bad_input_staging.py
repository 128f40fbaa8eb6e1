"""Leftovers of killed writers: the next writer of the same model directory, conversion
or export version removes the staging folders of its dead writers, and only those
(a live writer's, or a dead writer's of another target, stay)."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from keras_bert.checkpoints import convert_checkpoint
from keras_bert.export import export_model
from keras_bert.models import BertEncoder
from tests.checkpoints.conftest import (
    huggingface_config,
    random_weights,
    to_huggingface,
    write_huggingface,
)
from tests.checkpoints.conftest import tiny_config as checkpoint_config
from tests.models.conftest import tiny_config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A writer that makes its staging folder, writes into it and waits to be killed.
_WRITER = textwrap.dedent("""
    import importlib.util, sys, time
    spec = importlib.util.spec_from_file_location("staging", sys.argv[1])
    staging = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(staging)
    path = staging.make_staging_dir(sys.argv[2], sys.argv[3], sys.argv[4] or None)
    open(path + "/model.weights.h5", "wb").write(b"half written")
    print(path, flush=True)
    time.sleep(600)
""")


def start_writer(parent, prefix, label=""):
    """(process, staging folder) of a writer process that is still running."""
    process = subprocess.Popen(
        [sys.executable, "-c", _WRITER, os.path.join(ROOT, "keras_bert", "staging.py"),
         str(parent), prefix, label], stdout=subprocess.PIPE, text=True)
    return process, process.stdout.readline().strip()


@pytest.fixture
def writers():
    """Makes staging folders of one killed writer and one live writer."""
    live = []

    def make(parent, prefix, label="", killed_label=None):
        os.makedirs(parent, exist_ok=True)
        running, kept = start_writer(parent, prefix, label)
        live.append(running)
        killed, stale = start_writer(parent, prefix, label if killed_label is None
                                     else killed_label)
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        assert os.path.isdir(stale) and os.path.isdir(kept)
        return stale, kept

    yield make
    for process in live:
        process.kill()
        process.wait()


def test_save_pretrained_removes_dead_model_dir_staging(writers, tmp_path):
    stale, kept = writers(tmp_path / "models", ".tmp-", "encoder")
    other, other_kept = writers(tmp_path / "models", ".tmp-", "encoder-x")
    BertEncoder(**tiny_config(num_layers=1).to_dict()).save_pretrained(
        str(tmp_path / "models" / "encoder"))
    assert not os.path.exists(stale) and os.path.isdir(kept)
    # A dead writer's folder of another target ("encoder-x") is not this writer's to remove.
    assert os.path.isfile(os.path.join(other, "model.weights.h5"))
    assert sorted(os.listdir(tmp_path / "models")) == sorted(
        ["encoder"] + [os.path.basename(p) for p in (kept, other, other_kept)])


def test_conversion_removes_dead_conversion_staging(writers, tmp_path):
    stale, kept = writers(tmp_path / "models", ".convert-", "model")
    config = checkpoint_config(hidden_act="gelu")
    folder = write_huggingface(str(tmp_path / "hf"),
                               to_huggingface(random_weights(config, heads=False), config),
                               huggingface_config(config))
    convert_checkpoint(folder, str(tmp_path / "models" / "model"))
    assert not os.path.exists(stale) and os.path.isdir(kept)


def test_export_removes_dead_export_staging(writers, classifier_export, tmp_path):
    # A live export writes version 1; a killed one left its folder of version 2.
    stale, kept = writers(tmp_path / "exports" / "sentiment", ".tmp-export-", "1",
                          killed_label="2")
    path = export_model(classifier_export["model_dir"], str(tmp_path / "exports" / "sentiment"))
    assert os.path.basename(path) == "2"  # Version 1 is the live writer's.
    assert not os.path.exists(stale) and os.path.isdir(kept)
