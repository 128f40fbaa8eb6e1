"""A fine-tuning resume refuses data files that changed since its checkpoints (issue 23)."""

import os

import keras
import pytest

from keras_bert.training import finetune as finetune_lib
from tests.training.finetune_fixtures import make_model_dir, sentiment_rows, write_rows

# The resume test fine-tunes (a crashed run, then its resume) through finetune().
pytestmark = pytest.mark.slow


class _Stop(Exception):
    pass


class _StopAfterFirstStep(keras.callbacks.Callback):
    """A crash after the run wrote its state: what a resume starts from."""

    def on_train_batch_end(self, batch, logs=None):
        raise _Stop()


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return make_model_dir(str(tmp_path_factory.mktemp("resume") / "tiny"))


OPTIONS = finetune_lib.FinetuneOptions(epochs=1, batch_size=8, max_seq_length=16,
                                       jit_compile="off", log_every=1000)


def _start(model_dir, train_file, dev_file, output, checkpoint_dir, stop=True):
    train = finetune_lib.read_task_data("classification", train_file, True, OPTIONS)
    dev = finetune_lib.read_task_data("classification", dev_file, False, OPTIONS)
    return finetune_lib.finetune(
        "classification", model_dir, output, train, dev, OPTIONS, checkpoint_dir=checkpoint_dir,
        callbacks=[_StopAfterFirstStep()] if stop else None, progress="lines")


def _crashed_run(tmp_path, model_dir, rows):
    train_file = write_rows(tmp_path / "train.csv", rows)
    dev_file = write_rows(tmp_path / "dev.csv", sentiment_rows(16, seed=1))
    output, checkpoint_dir = str(tmp_path / "out"), str(tmp_path / "ckpt")
    with pytest.raises(_Stop):
        _start(model_dir, train_file, dev_file, output, checkpoint_dir)
    assert os.path.isfile(os.path.join(checkpoint_dir, finetune_lib.STATE_FILE))
    return train_file, dev_file, output, checkpoint_dir


def test_resume_refuses_changed_data_or_options_and_continues_on_the_same_files(tmp_path,
                                                                                model_dir):
    # One crashed run for every case: a refused resume leaves its checkpoints as they
    # were, so the last case (the same files) resumes from them.
    rows = sentiment_rows(40)
    train_file, dev_file, output, checkpoint_dir = _crashed_run(tmp_path, model_dir, rows)

    # The same rows and size, labels swapped: a resume would train on other data.
    swapped = [(text, {"pos": "neg", "neg": "pos"}[label]) for text, label in rows]
    write_rows(train_file, swapped)
    with pytest.raises(ValueError) as info:
        _start(model_dir, train_file, dev_file, output, checkpoint_dir)
    message = str(info.value)
    assert message.startswith(f"{checkpoint_dir} holds checkpoints of a run on other data: "
                              f"{os.path.abspath(train_file)} changed content (same size)")
    assert "--checkpoint-dir" in message and "restore the file" in message
    assert "\n" not in message

    edited = list(rows)
    edited[3] = ("the movie was good good", rows[3][1])  # Same row count, more bytes.
    write_rows(train_file, edited)
    size = os.path.getsize(train_file)
    with pytest.raises(ValueError, match=f"changed size \\(\\d+ -> {size} bytes\\)"):
        _start(model_dir, train_file, dev_file, output, checkpoint_dir)

    write_rows(train_file, rows)  # The file as the run read it.
    train = finetune_lib.read_task_data("classification", train_file, True, OPTIONS)
    dev = finetune_lib.read_task_data("classification", dev_file, False, OPTIONS)
    other = finetune_lib.FinetuneOptions(epochs=1, batch_size=8, max_seq_length=16,
                                         jit_compile="off", learning_rate=1e-3)
    with pytest.raises(ValueError, match="checkpoints of another fine-tuning run"):
        finetune_lib.finetune("classification", model_dir, output, train, dev, other,
                              checkpoint_dir=checkpoint_dir)

    result = _start(model_dir, train_file, dev_file, output, checkpoint_dir, stop=False)
    assert result.steps == 5 and result.best_epoch == 1


def test_large_files_are_fingerprinted_by_a_sample(tmp_path, monkeypatch):
    monkeypatch.setattr(finetune_lib, "_FULL_HASH_BYTES", 1000)
    monkeypatch.setattr(finetune_lib, "_BLOCK_BYTES", 10)
    monkeypatch.setattr(finetune_lib, "_SAMPLE_BLOCKS", 4)
    path = tmp_path / "big.txt"
    data = bytearray(b"abcdefghij" * 500)  # 5000 bytes: blocks at 0, 1663, 3326, 4990.
    path.write_bytes(bytes(data))
    first = finetune_lib.file_fingerprint(str(path))
    assert first["size"] == 5000 and first["path"] == str(path)
    data[1665] = ord("X")  # Inside a sampled block.
    path.write_bytes(bytes(data))
    assert finetune_lib.file_fingerprint(str(path))["sha256"] != first["sha256"]
    data[1665] = ord("f")
    data[4999] = ord("X")  # The last byte is always sampled.
    path.write_bytes(bytes(data))
    assert finetune_lib.file_fingerprint(str(path))["sha256"] != first["sha256"]
