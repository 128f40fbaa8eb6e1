"""Issue 34 on the real writers: save_pretrained, .keras saves, exports and pretraining
data, SIGKILLed at each step of their commit, two exports at once, a reader while a
model directory is replaced, configs checked before anything is built.

The kills run real writer processes, forked from one process that imported
TensorFlow once for the module (tests/writer_harness.py Forker), and are marked
`slow`; the rest runs in this process.
"""

import json
import os
import shutil
import textwrap

import keras
import numpy as np
import pytest

from keras_bert import steps
from keras_bert.data.pretraining_data import create_pretraining_data, read_metadata
from keras_bert.export import export_model, resolve_export_dir
from keras_bert.export.export import save_serving_module
from keras_bert.export.predict import latest_version, load_export
from keras_bert.models import BertEncoder
from keras_bert.models import model_dir as model_dir_lib
from tests import writer_harness
from tests.models.conftest import tiny_config
from tests.test_no_data_loss import CONFIG, _corpus
from tests.training.finetune_fixtures import make_vocab

# Slow tier: real SIGKILLs of writer processes, each a TensorFlow start.
pytestmark = pytest.mark.slow


def start(script, *args, forker, step=None, marker=None, count=1):
    return writer_harness.start(textwrap.dedent(script), *args, stop=step, marker=marker,
                                count=count, forker=forker)


def kill_at(step, script, *args, tmp_path, forker, count=1):
    writer_harness.kill_at(step, textwrap.dedent(script), *args, tmp_path=tmp_path, count=count,
                           forker=forker)


def encoder(seed):
    keras.utils.set_random_seed(seed)
    return BertEncoder(**tiny_config(num_layers=1).to_dict())


def first_weights(path):
    # load_model_dir (from_pretrained's reader) puts back a model a kill left parked.
    return np.array(model_dir_lib.load_model_dir(path, BertEncoder).weights[0])


# === save_pretrained ===

_SAVE = """
    import sys, keras
    from keras_bert import files
    from keras_bert.models import BertEncoder
    from tests.models.conftest import tiny_config
    if sys.argv[2] == "no-exchange":
        files._EXCHANGE = None  # The two-rename path of systems without renameat2.
    keras.utils.set_random_seed(1)
    BertEncoder(**tiny_config(num_layers=1).to_dict()).save_pretrained(sys.argv[1])
"""


@pytest.mark.slow
@pytest.mark.parametrize("step, mode, expected", [
    ("staged", "exchange", "old"), ("committed", "exchange", "new"),
    ("old-moved", "no-exchange", "old")])
def test_save_pretrained_killed_at_each_step_leaves_a_whole_model(step, mode, expected,
                                                                  tmp_path, forker):
    models = tmp_path / "models"
    old = encoder(0)
    old.save_pretrained(str(models / "m"))
    new = encoder(1)  # What the killed writer saves (seed 1).
    kill_at(step, _SAVE, models / "m", mode, tmp_path=tmp_path, forker=forker)
    # Other targets' writers in the same folder keep the killed writer's staging.
    new.save_pretrained(str(models / "m-x"))
    new.save(str(models / "m.keras"))
    got = first_weights(str(models / "m"))  # The reader puts a parked model back.
    want = np.array((old if expected == "old" else new).weights[0])
    np.testing.assert_array_equal(got, want)
    old.save_pretrained(str(models / "m"))  # The next writer of m cleans up.
    assert sorted(os.listdir(models)) == ["m", "m-x", "m.keras"]


_SAVE_KERAS = """
    import sys, keras
    from keras_bert.models import BertEncoder
    from tests.models.conftest import tiny_config
    keras.utils.set_random_seed(1)
    BertEncoder(**tiny_config(num_layers=1).to_dict()).save(sys.argv[1])
"""


@pytest.mark.slow
def test_a_keras_save_killed_before_its_rename_keeps_the_old_file(tmp_path, forker):
    old = encoder(0)
    old.save(str(tmp_path / "m.keras"))
    kill_at("staged", _SAVE_KERAS, tmp_path / "m.keras", tmp_path=tmp_path, forker=forker)
    assert len([n for n in os.listdir(tmp_path) if n.startswith(".tmp-m.keras-")]) == 1
    loaded = keras.saving.load_model(str(tmp_path / "m.keras"))
    np.testing.assert_array_equal(np.array(loaded.weights[0]), np.array(old.weights[0]))
    old.save(str(tmp_path / "m.keras"))  # The next save of m.keras removes the leftover.
    assert sorted(os.listdir(tmp_path)) == ["m.keras", "reached-staged"]


_CONVERT = """
    import sys
    from keras_bert.checkpoints import convert_checkpoint
    convert_checkpoint(sys.argv[1], sys.argv[2], overwrite=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("step, expected", [("staged", "old"), ("committed", "new")])
def test_a_conversion_killed_at_its_commit_leaves_a_whole_model(step, expected, tmp_path,
                                                                 forker):
    from keras_bert.checkpoints import convert_checkpoint
    from tests.checkpoints.conftest import (
        huggingface_config,
        random_weights,
        to_huggingface,
        write_huggingface,
    )
    from tests.checkpoints.conftest import tiny_config as checkpoint_config

    config = checkpoint_config(hidden_act="gelu")
    folders = {seed: write_huggingface(
        str(tmp_path / f"hf{seed}"),
        to_huggingface(random_weights(config, seed=seed, heads=False), config),
        huggingface_config(config)) for seed in (0, 1)}
    out = str(tmp_path / "models" / "converted")
    convert_checkpoint(folders[0], out)
    old = first_weights(out)
    convert_checkpoint(folders[1], str(tmp_path / "reference"))
    new = first_weights(str(tmp_path / "reference"))
    assert not np.array_equal(old, new)
    # The converter's own commit is the second time each step is reached: its
    # model directory is first saved into its staging folder, with the same steps.
    kill_at(step, _CONVERT, folders[1], out, tmp_path=tmp_path, forker=forker, count=2)
    got = first_weights(out)
    np.testing.assert_array_equal(got, old if expected == "old" else new)


# === exports ===

_EXPORT = """
    import sys
    from keras_bert.export import export_model
    print(export_model(sys.argv[1], sys.argv[2], max_seq_length=16, warmup=False), flush=True)
"""


@pytest.mark.slow
def test_two_exports_at_once_get_two_versions(classifier_export, tmp_path, forker):
    base = tmp_path / "exports" / "sentiment"
    marker = tmp_path / "resolved"
    # The second export has chosen version 1 and waits; the first one commits 1 meanwhile.
    second = start(_EXPORT, classifier_export["model_dir"], base, forker=forker, step="resolved",
                   marker=marker)
    writer_harness.wait_paused(marker, second)
    first = start(_EXPORT, classifier_export["model_dir"], base, forker=forker)
    first_path = first.communicate()[0].strip().splitlines()[-1]
    with open(base / "1" / "saved_model.pb", "rb") as f:
        committed = f.read()
    os.remove(marker)  # Let the second go on.
    second_path = second.communicate()[0].strip().splitlines()[-1]
    assert first.returncode == 0 and second.returncode == 0
    assert (os.path.basename(first_path), os.path.basename(second_path)) == ("1", "2")
    with open(base / "1" / "saved_model.pb", "rb") as f:
        assert f.read() == committed  # Version 1 is the first export's, untouched.
    assert sorted(os.listdir(base)) == ["1", "2"]
    assert latest_version(str(base)) == str(base / "2")


@pytest.fixture(scope="module")
def first_version(classifier_export, tmp_path_factory):
    """exports/sentiment with its version 1, exported once for the module; tests copy it."""
    base = tmp_path_factory.mktemp("first_version") / "sentiment"
    export_model(classifier_export["model_dir"], str(base), max_seq_length=16, warmup=False)
    return base


@pytest.mark.slow
@pytest.mark.parametrize("step", ["claimed", "staged", "committed"])
def test_an_export_killed_at_each_step_leaves_whole_versions(step, classifier_export,
                                                             first_version, tmp_path, forker):
    base = tmp_path / "exports" / "sentiment"
    shutil.copytree(first_version, base, symlinks=True)  # Version 1, as export_model wrote it.
    kill_at(step, _EXPORT, classifier_export["model_dir"], base, tmp_path=tmp_path,
            forker=forker)
    versions = sorted(n for n in os.listdir(base) if n.isdigit())
    assert versions == (["1", "2"] if step == "committed" else ["1"])
    for version in versions:
        load_export(str(base / version))
    # The next export takes the next version, and removes only that version's leftovers.
    path = export_model(classifier_export["model_dir"], str(base), max_seq_length=16,
                        warmup=False)
    assert os.path.basename(path) == str(len(versions) + 1)
    leftovers = [n for n in os.listdir(base) if not n.isdigit()]
    assert len(leftovers) == (0 if step != "committed" else 1)  # Version 2's is not its own.


def test_an_export_whose_version_was_taken_meanwhile_saves_the_next(classifier_export,
                                                                    first_version, tmp_path):
    from keras_bert.export import build_serving_module

    base = str(tmp_path / "exports" / "sentiment")
    chosen = resolve_export_dir(base)
    assert os.path.basename(chosen) == "1"
    # Another export commits version 1 meanwhile (the module's, copied in).
    shutil.copytree(first_version, base, symlinks=True, dirs_exist_ok=True)
    module = build_serving_module(classifier_export["model"], max_seq_length=16)
    assert os.path.basename(save_serving_module(module, chosen, warmup=False)) == "2"
    assert sorted(os.listdir(base)) == ["1", "2"]


# === pretraining data ===

_DATA = """
    import sys
    from keras_bert.data.pretraining_data import create_pretraining_data
    from tests.test_no_data_loss import CONFIG
    create_pretraining_data([sys.argv[1]], sys.argv[2], sys.argv[3], CONFIG, num_shards=3)
"""


def data_fixture(tmp_path):
    make_vocab(str(tmp_path / "vocab.txt"))
    old_corpus = _corpus(tmp_path / "old.txt", documents=4)
    new_corpus = _corpus(tmp_path / "new.txt", documents=9)
    out = str(tmp_path / "data")
    old = create_pretraining_data([old_corpus], out, str(tmp_path / "vocab.txt"), CONFIG,
                                  num_shards=2)
    return old, new_corpus, out


@pytest.mark.slow
@pytest.mark.parametrize("step, expected", [
    ("data:staged", "old"), ("data:committed", "new"), ("data:swap", "new")])
def test_pretraining_data_killed_mid_commit_is_old_or_new_whole(step, expected, tmp_path,
                                                               forker):
    old, new_corpus, out = data_fixture(tmp_path)
    kill_at(step, _DATA, new_corpus, out, tmp_path / "vocab.txt", tmp_path=tmp_path,
            forker=forker)
    metadata = read_metadata(out)  # Checks the records; finishes a cut-short commit.
    assert metadata["num_shards"] == (2 if expected == "old" else 3)
    if expected == "old":
        assert metadata == old
    shards = sorted(n for n in os.listdir(out) if n.startswith("pretraining-"))
    assert shards == sorted(s["file"] for s in metadata["shards"])
    assert sorted(os.listdir(out)) == sorted(shards + ["metadata.json", "vocab.txt"])


def test_a_mix_of_two_data_sets_shards_is_refused(tmp_path):
    old, new_corpus, out = data_fixture(tmp_path)
    other = str(tmp_path / "other")
    create_pretraining_data([new_corpus], other, str(tmp_path / "vocab.txt"), CONFIG,
                            num_shards=2)
    # What a shard-by-shard swap cut short used to leave: new shard 0, old metadata.
    shutil.copyfile(os.path.join(other, "pretraining-00000-of-00002.tfrecord"),
                    os.path.join(out, "pretraining-00000-of-00002.tfrecord"))
    with pytest.raises(ValueError, match=r"pretraining-00000-of-00002\.tfrecord has \d+ bytes"):
        read_metadata(out)


def test_a_reader_waits_for_a_data_commit_in_progress(tmp_path, monkeypatch):
    import threading

    _, new_corpus, out = data_fixture(tmp_path)
    seen, readers = {}, []

    def pause(step, number=None):
        if step == "data:swap":  # New shard 0 is in, the old shards 1.. still there.
            # The commit holds the folder's lock: a reader (here in another thread)
            # waits for it instead of reading half a swap.
            reader = threading.Thread(target=lambda: seen.update(read_metadata(out)))
            reader.start()
            reader.join(0.5)
            assert reader.is_alive() and not seen
            readers.append(reader)

    monkeypatch.setattr(steps, "reached", pause)
    new = create_pretraining_data([new_corpus], out, str(tmp_path / "vocab.txt"), CONFIG,
                                  num_shards=3)
    readers[0].join(60)
    assert seen == new and new["num_shards"] == 3


# === model directories: readers, checks before building, long names ===


def test_a_reader_during_replacement_loads_one_whole_version(tmp_path, monkeypatch):
    path = str(tmp_path / "m")
    first, second = encoder(0), encoder(1)
    model_dir_lib.save_model_dir(first, path, task_info={"max_seq_length": 16})
    calls = []
    check = model_dir_lib.check_checksum

    def replaced_meanwhile(weights_path):
        if not calls:  # Another process replaces the directory during this load.
            model_dir_lib.save_model_dir(second, path, task_info={"max_seq_length": 12})
        calls.append(weights_path)
        return check(weights_path)

    monkeypatch.setattr(model_dir_lib, "check_checksum", replaced_meanwhile)
    loaded = BertEncoder.from_pretrained(path)
    assert len(calls) == 2  # Read again: the first read was of two versions.
    np.testing.assert_array_equal(np.array(loaded.weights[0]), np.array(second.weights[0]))
    assert loaded.task_info["max_seq_length"] == 12


def test_an_inflated_config_is_refused_before_the_model_is_built(tmp_path, monkeypatch):
    path = tmp_path / "m"
    encoder(0).save_pretrained(str(path))
    config = json.loads((path / "config.json").read_text())
    for stamped in (True, False):
        config["intermediate_size"] = 4_000_000
        (path / "config.json").write_text(json.dumps(config))
        if not stamped:  # Weights saved before the stamp: the size check catches it.
            import h5py

            with h5py.File(path / "model.weights.h5", "a") as f:
                del f.attrs[model_dir_lib.CONFIG_ATTR]

        def never(**kwargs):
            raise AssertionError("the model was built before the check")

        with pytest.raises(ValueError, match="intermediate_size=4000000"):
            model_dir_lib.load_model_dir(str(path), never)


def test_a_model_dir_of_240_characters_is_saved_and_replaced(tmp_path):
    path = str(tmp_path / ("m" * 240))
    encoder(0).save_pretrained(path)
    encoder(1).save_pretrained(path)
    np.testing.assert_array_equal(first_weights(path), np.array(encoder(1).weights[0]))
    assert os.listdir(tmp_path) == ["m" * 240]
