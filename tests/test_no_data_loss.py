"""Issue 23: no writer deletes what the user owns, or leaves a broken file behind.

Each case was reproduced on the old main: save_pretrained emptied the folder
it was given, removed a user's X.old, half-renamed a symlink; finetune
deleted the whole --checkpoint-dir; create_pretraining_data deleted an
input named pretraining-*; convert --overwrite replaced its own input; and
serving_config, extract_features and the tools' pipes misbehaved. Every
test checks that every file that was there before is still there, byte for
byte.
"""

import json
import os
import subprocess
import sys
import textwrap

import h5py
import keras
import numpy as np
import pytest

from keras_bert.checkpoints import convert_checkpoint
from keras_bert.data.pretraining_data import PretrainingDataConfig, create_pretraining_data
from keras_bert.export import export_model
from keras_bert.export.features import extract_features
from keras_bert.export.tf_serving import write_serving_config
from keras_bert.files import OutputError, atomic_file
from keras_bert.models import BertEncoder, model_dir as model_dir_lib
from keras_bert.training import finetune as finetune_lib
from tests.checkpoints.conftest import huggingface_config, random_weights, to_huggingface
from tests.checkpoints.conftest import tiny_config as checkpoint_config
from tests.checkpoints.conftest import write_huggingface
from tests.models.conftest import tiny_config
from tests.test_file_rule import snapshot, write
from tests.training.finetune_fixtures import WORDS, make_model_dir, make_vocab

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def encoder():
    keras.utils.set_random_seed(0)
    return BertEncoder(**tiny_config(num_layers=1).to_dict())


def weights_of(model):
    return [np.array(w) for w in model.weights]


# === 1, 2: save_pretrained ===


def test_save_pretrained_into_a_folder_of_models_refuses_and_keeps_everything(encoder, tmp_path):
    models = tmp_path / "models"
    encoder.save_pretrained(str(models / "base"))
    write(str(models / "notes.md"), "what I tried")
    write(str(models / "other" / "config.json"), "{}")
    before = snapshot(tmp_path)
    with pytest.raises(OutputError, match="choose a new or empty folder, or remove it yourself"):
        encoder.save_pretrained(str(models))
    assert snapshot(tmp_path) == before


def test_save_pretrained_into_the_working_directory_refuses(encoder, tmp_path, monkeypatch):
    write(str(tmp_path / "work" / "train.py"), "print('mine')")
    monkeypatch.chdir(tmp_path / "work")
    before = snapshot(tmp_path)
    with pytest.raises(OutputError, match=r"train\.py"):
        encoder.save_pretrained(".")
    assert snapshot(tmp_path) == before


def test_a_model_dir_with_a_user_file_is_not_replaced(encoder, tmp_path):
    encoder.save_pretrained(str(tmp_path / "m"))
    write(str(tmp_path / "m" / "results.csv"), "epoch,acc\n1,0.9\n")
    before = snapshot(tmp_path)
    with pytest.raises(OutputError, match=r"results\.csv, which keras_bert did not write"):
        encoder.save_pretrained(str(tmp_path / "m"))
    assert snapshot(tmp_path) == before


def test_a_model_dir_keras_bert_wrote_is_replaced(encoder, tmp_path):
    encoder.save_pretrained(str(tmp_path / "m"))
    old = weights_of(BertEncoder.from_pretrained(str(tmp_path / "m")))
    encoder.weights[0].assign(encoder.weights[0] + 1.0)
    encoder.save_pretrained(str(tmp_path / "m"))
    new = weights_of(BertEncoder.from_pretrained(str(tmp_path / "m")))
    np.testing.assert_allclose(new[0], old[0] + 1.0, atol=1e-6)
    assert sorted(os.listdir(tmp_path)) == ["m"]


def test_save_pretrained_leaves_the_users_x_old_alone(encoder, tmp_path):
    encoder.save_pretrained(str(tmp_path / "m"))
    write(str(tmp_path / "m.old" / "backup.txt"), "my own backup")
    encoder.save_pretrained(str(tmp_path / "m"))
    assert (tmp_path / "m.old" / "backup.txt").read_text() == "my own backup"
    assert sorted(os.listdir(tmp_path)) == ["m", "m.old"]


def test_save_pretrained_onto_a_symlink_replaces_its_target(encoder, tmp_path):
    encoder.save_pretrained(str(tmp_path / "real"))
    os.symlink(str(tmp_path / "real"), str(tmp_path / "link"))
    encoder.weights[0].assign(encoder.weights[0] * 0.0)
    encoder.save_pretrained(str(tmp_path / "link"))
    assert os.path.islink(tmp_path / "link")
    assert os.readlink(tmp_path / "link") == str(tmp_path / "real")
    loaded = BertEncoder.from_pretrained(str(tmp_path / "real"))
    assert float(np.abs(np.array(loaded.weights[0])).max()) == 0.0
    assert sorted(os.listdir(tmp_path)) == ["link", "real"]


def test_a_failed_save_keeps_the_previous_model(encoder, tmp_path, monkeypatch):
    encoder.save_pretrained(str(tmp_path / "m"))
    before = snapshot(tmp_path)

    def fail(model, path):
        with open(path, "wb") as f:
            f.write(b"half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(model_dir_lib, "save_model_weights", fail)
    with pytest.raises(OSError, match="No space"):
        encoder.save_pretrained(str(tmp_path / "m"))
    assert snapshot(tmp_path) == before
    BertEncoder.from_pretrained(str(tmp_path / "m"))


# === Deliver 3 and the optimizer: model.weights.h5 ===


def _flip_a_byte(weights_path):
    with h5py.File(weights_path, "a") as f:
        names = []
        f.visititems(lambda n, item: names.append(n) if isinstance(item, h5py.Dataset) else None)
        data = f[names[0]][()]
        data.view(np.uint8).reshape(-1)[0] ^= 0x10
        f[names[0]][...] = data


def test_flipped_bytes_in_the_weights_are_caught_on_load(encoder, tmp_path):
    encoder.save_pretrained(str(tmp_path / "m"))
    weights = str(tmp_path / "m" / "model.weights.h5")
    _flip_a_byte(weights)
    with pytest.raises(ValueError) as info:
        BertEncoder.from_pretrained(str(tmp_path / "m"))
    assert str(info.value) == (f"{weights} is corrupt (checksum mismatch): re-save or "
                               f"re-convert the model.")


def test_weights_without_a_checksum_still_load(encoder, tmp_path):
    encoder.save_pretrained(str(tmp_path / "m"))
    with h5py.File(str(tmp_path / "m" / "model.weights.h5"), "a") as f:
        assert len(f.attrs[model_dir_lib.CHECKSUM_ATTR]) == 64
        del f.attrs[model_dir_lib.CHECKSUM_ATTR]
    loaded = BertEncoder.from_pretrained(str(tmp_path / "m"))
    np.testing.assert_array_equal(weights_of(loaded)[0], weights_of(encoder)[0])


def test_save_pretrained_leaves_the_optimizer_state_out(encoder, tmp_path):
    encoder.compile(optimizer=keras.optimizers.Adam(1e-3))
    encoder.optimizer.build(encoder.trainable_variables)
    encoder.save_pretrained(str(tmp_path / "m"))
    with h5py.File(str(tmp_path / "m" / "model.weights.h5"), "r") as f:
        assert "optimizer" not in f
        sizes = []
        f.visititems(lambda n, item: sizes.append(item.size)
                     if isinstance(item, h5py.Dataset) else None)
    assert sum(sizes) == sum(int(np.prod(w.shape)) for w in encoder.weights)
    BertEncoder.from_pretrained(str(tmp_path / "m"))


# === 6: a .keras file saved through keras_bert's helper ===


def test_a_failed_keras_save_keeps_the_previous_file_loadable(encoder, tmp_path):
    path = str(tmp_path / "encoder.keras")
    with atomic_file(path) as tmp:
        encoder.save(tmp)
    before = snapshot(tmp_path)
    with pytest.raises(OSError, match="No space"):
        with atomic_file(path) as tmp:
            with open(tmp, "wb") as f:
                f.write(b"PK\x03\x04 half a zip")
            raise OSError(28, "No space left on device")
    assert snapshot(tmp_path) == before
    keras.saving.load_model(path)


# === 3: finetune's checkpoint folder ===


def test_finetune_refuses_a_checkpoint_dir_of_the_users_before_training(tmp_path):
    model = make_model_dir(str(tmp_path / "tiny"))
    write(str(tmp_path / "ckpt" / "experiment.ipynb"), "{}")
    write(str(tmp_path / "ckpt" / "checkpoint"), "not ours")
    before = snapshot(tmp_path)
    with pytest.raises(OutputError, match=r"ckpt is not a fine-tuning checkpoint folder"):
        finetune_lib.finetune("classification", model, str(tmp_path / "out"), None, None,
                              checkpoint_dir=str(tmp_path / "ckpt"))
    assert snapshot(tmp_path) == before


def test_finetune_refuses_outputs_that_are_files_or_its_inputs(tmp_path):
    model = make_model_dir(str(tmp_path / "tiny"))
    write(str(tmp_path / "out"), "a file")
    before = snapshot(tmp_path)
    with pytest.raises(OutputError, match="is a file"):
        finetune_lib.check_outputs(model, str(tmp_path / "out"), str(tmp_path / "c"))
    with pytest.raises(OutputError, match="is the input"):
        finetune_lib.check_outputs(model, model, str(tmp_path / "c"))
    with pytest.raises(OutputError, match="is the input"):
        finetune_lib.check_outputs(model, str(tmp_path / "new"), str(tmp_path / "c"),
                                   inputs=[str(tmp_path / "new")])
    with pytest.raises(OutputError, match="contains the input"):
        finetune_lib.check_outputs(model, str(tmp_path / "new"), str(tmp_path))
    assert snapshot(tmp_path) == before


def test_finetune_cleanup_removes_only_its_own_checkpoint_files(tmp_path):
    ckpt = tmp_path / "ckpt"
    for name in ("finetune_state.json", "checkpoint", "ckpt-12.index",
                 "ckpt-12.data-00000-of-00001", "data-worker-0/ckpt-12.index",
                 ".tmp/worker-1/ckpt-12.index", "user_notes.txt", "ckpt-final.h5"):
        write(str(ckpt / name), "x")
    finetune_lib.remove_checkpoints(str(ckpt))
    assert sorted(os.listdir(ckpt)) == ["ckpt-final.h5", "user_notes.txt"]


# === 4: create_pretraining_data ===


def _corpus(path, documents=6):
    words = [w for w in WORDS if w.isalpha()]
    with open(path, "w", encoding="utf-8") as f:
        for d in range(documents):
            for s in range(5):
                f.write(" ".join(words[(d * 7 + s * 3 + k) % len(words)] for k in range(8)) + "\n")
            f.write("\n")
    return str(path)


CONFIG = PretrainingDataConfig(max_seq_length=32, max_predictions_per_seq=5, dupe_factor=1)


@pytest.fixture
def vocab(tmp_path):
    make_vocab(str(tmp_path / "vocab.txt"))
    return str(tmp_path / "vocab.txt")


def test_pretraining_data_never_deletes_an_input_named_pretraining(vocab, tmp_path):
    os.makedirs(tmp_path / "data")
    corpus = _corpus(tmp_path / "data" / "pretraining-corpus.txt")
    before = snapshot(tmp_path)
    with pytest.raises(OutputError, match="contains the input"):
        create_pretraining_data([corpus], str(tmp_path / "data"), vocab, CONFIG)
    assert snapshot(tmp_path) == before


def test_pretraining_data_refuses_a_folder_of_something_else(vocab, tmp_path):
    corpus = _corpus(tmp_path / "corpus.txt")
    write(str(tmp_path / "out" / "pretraining-notes.txt"), "mine")
    before = snapshot(tmp_path)
    with pytest.raises(OutputError, match="holds no keras_bert pretraining data"):
        create_pretraining_data([corpus], str(tmp_path / "out"), vocab, CONFIG)
    assert snapshot(tmp_path) == before


@pytest.mark.slow  # Tens of seconds of the default tier's time (round 10).
def test_pretraining_data_rerun_replaces_only_its_listed_shards(vocab, tmp_path, monkeypatch):
    corpus = _corpus(tmp_path / "corpus.txt")
    out = tmp_path / "out"
    first = create_pretraining_data([corpus], str(out), vocab, CONFIG, num_shards=2)
    write(str(out / "README.md"), "how I made it")
    before = snapshot(tmp_path)
    # A failure while writing the new data leaves the old data as it was.
    from keras_bert.data import pretraining_data

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(pretraining_data, "write_shard", fail)
        with pytest.raises(OSError, match="No space"):
            create_pretraining_data([corpus], str(out), vocab, CONFIG, num_shards=3)
    assert snapshot(tmp_path) == before
    # A second run with one shard: the two old shards go, the user's file stays.
    second = create_pretraining_data([corpus], str(out), vocab, CONFIG, num_shards=1)
    assert [s["file"] for s in first["shards"]] == ["pretraining-00000-of-00002.tfrecord",
                                                     "pretraining-00001-of-00002.tfrecord"]
    assert sorted(os.listdir(out)) == ["README.md", "metadata.json",
                                       "pretraining-00000-of-00001.tfrecord", "vocab.txt"]
    assert second["num_shards"] == 1 and (out / "README.md").read_text() == "how I made it"
    # A shard name the metadata does not list would be written over: refused.
    write(str(out / "pretraining-00000-of-00002.tfrecord"), "someone else's")
    with pytest.raises(OutputError, match="does not list"):
        create_pretraining_data([corpus], str(out), vocab, CONFIG, num_shards=2)
    assert (out / "pretraining-00000-of-00002.tfrecord").read_text() == "someone else's"


# === 5: convert_checkpoint ===


@pytest.fixture
def hf_folder(tmp_path):
    config = checkpoint_config(hidden_act="gelu")
    return write_huggingface(str(tmp_path / "hf"),
                             to_huggingface(random_weights(config, heads=False), config),
                             huggingface_config(config))


def test_convert_refuses_to_write_over_its_input(hf_folder, tmp_path):
    before = snapshot(tmp_path)
    for output in (hf_folder, str(tmp_path)):
        with pytest.raises(OutputError, match="the input"):
            convert_checkpoint(hf_folder, output, overwrite=True)
    assert snapshot(tmp_path) == before


def test_convert_overwrite_refuses_a_folder_that_is_not_a_model(hf_folder, tmp_path):
    write(str(tmp_path / "out" / "keep.txt"), "fine-tuned work")
    before = snapshot(tmp_path)
    with pytest.raises(OutputError, match=r"keep\.txt"):
        convert_checkpoint(hf_folder, str(tmp_path / "out"), overwrite=True)
    assert snapshot(tmp_path) == before


# === export, extract_features ===


@pytest.fixture
def tiny_model(tmp_path):
    return make_model_dir(str(tmp_path / "models" / "tiny"), max_position_embeddings=32)


def _fake_export(version_dir):
    write(os.path.join(version_dir, "saved_model.pb"), "old export")
    write(os.path.join(version_dir, "keras_bert_export.json"), json.dumps(
        {"max_seq_length": 16, "sequence_length": None, "pad_to_multiple_of": 1}))


def test_export_refuses_a_version_folder_of_something_else_and_its_input(tiny_model, tmp_path):
    write(str(tmp_path / "exports" / "tiny" / "1" / "plan.txt"), "mine")
    before = snapshot(tmp_path)
    with pytest.raises(OutputError, match=r"plan\.txt"):
        export_model(tiny_model, str(tmp_path / "exports" / "tiny" / "1"), overwrite=True)
    with pytest.raises(OutputError, match="is the input"):
        export_model(tiny_model, tiny_model)
    assert snapshot(tmp_path) == before


def test_a_failed_export_keeps_the_previous_version(tiny_model, tmp_path, monkeypatch):
    version = str(tmp_path / "exports" / "tiny" / "1")
    _fake_export(version)
    before = snapshot(tmp_path)
    import tensorflow as tf

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tf.saved_model, "save", fail)
    with pytest.raises(OSError, match="No space"):
        export_model(tiny_model, version, overwrite=True, max_seq_length=16)
    assert snapshot(tmp_path) == before


def test_extract_features_never_writes_over_its_input_or_a_folder(tiny_model, tmp_path):
    write(str(tmp_path / "lines.npy"), "the good movie\n")
    os.makedirs(tmp_path / "out.npy")
    before = snapshot(tmp_path)
    with pytest.raises(OutputError, match="is the input"):
        extract_features(tiny_model, str(tmp_path / "lines.npy"), str(tmp_path / "lines.npy"),
                         verbose=False)
    with pytest.raises(OutputError, match="is a folder"):
        extract_features(tiny_model, str(tmp_path / "lines.npy"), str(tmp_path / "out.npy"),
                         verbose=False)
    assert snapshot(tmp_path) == before


def test_a_failed_extraction_keeps_the_previous_output(tiny_model, tmp_path, monkeypatch):
    write(str(tmp_path / "lines.txt"), "the good movie\na bad film\n")
    np.save(str(tmp_path / "features.npy"), np.ones((2, 3), "float32"))
    before = snapshot(tmp_path)
    from keras_bert.export import features

    def fail(dataset, compute, tmp, *args):
        np.save(tmp, np.zeros((1, 1), "float32"))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(features, "_write_features", fail)
    with pytest.raises(OSError, match="No space"):
        extract_features(tiny_model, str(tmp_path / "lines.txt"), str(tmp_path / "features.npy"),
                         verbose=False)
    assert snapshot(tmp_path) == before


# === serving_config ===


def test_serving_config_refuses_two_exports_with_one_name(tmp_path):
    _fake_export(str(tmp_path / "a" / "sentiment" / "1"))
    _fake_export(str(tmp_path / "b" / "sentiment" / "3"))
    before = snapshot(tmp_path)
    with pytest.raises(ValueError, match="both be served as model 'sentiment'"):
        write_serving_config([str(tmp_path / "a" / "sentiment"),
                              str(tmp_path / "b" / "sentiment")], str(tmp_path / "out"))
    assert snapshot(tmp_path) == before


def test_serving_config_escapes_quotes_in_names(tmp_path):
    from google.protobuf import text_format
    from tensorflow_serving.config import model_server_config_pb2

    name = 'my "best" model\\v2'
    _fake_export(str(tmp_path / "exports" / name / "1"))
    config_path, _ = write_serving_config([str(tmp_path / "exports" / name)],
                                          str(tmp_path / "exports"))
    with open(config_path, encoding="utf-8") as f:
        config = text_format.Parse(f.read(), model_server_config_pb2.ModelServerConfig())
    assert config.model_config_list.config[0].name == name
    assert config.model_config_list.config[0].base_path == f"/models/{name}"


@pytest.mark.parametrize("argument", [
    {"batch_timeout_micros": 0}, {"batch_timeout_micros": -5}, {"num_batch_threads": 0},
    {"max_enqueued_batches": -1}, {"allowed_batch_sizes": (0, 4)},
    {"allowed_batch_sizes": (-2, 4)}])
def test_serving_config_refuses_zero_or_negative_batching_numbers(tmp_path, argument):
    _fake_export(str(tmp_path / "exports" / "sentiment" / "1"))
    before = snapshot(tmp_path)
    name = next(iter(argument))
    with pytest.raises(ValueError, match=f"{name} must be"):
        write_serving_config([str(tmp_path / "exports" / "sentiment")],
                             str(tmp_path / "exports"), **argument)
    assert snapshot(tmp_path) == before


def test_serving_config_replaces_only_its_own_files(tmp_path):
    _fake_export(str(tmp_path / "exports" / "sentiment" / "1"))
    base = [str(tmp_path / "exports" / "sentiment")]
    write(str(tmp_path / "exports" / "models.config"), "# my hand-written config\n")
    before = snapshot(tmp_path)
    with pytest.raises(OutputError, match="not written by tools/serving_config.py"):
        write_serving_config(base, str(tmp_path / "exports"))
    assert snapshot(tmp_path) == before
    os.remove(tmp_path / "exports" / "models.config")
    write_serving_config(base, str(tmp_path / "exports"), num_batch_threads=2)
    write_serving_config(base, str(tmp_path / "exports"), num_batch_threads=3)
    text = (tmp_path / "exports" / "batching_parameters.txt").read_text()
    assert "num_batch_threads { value: 3 }" in text
    assert sorted(os.listdir(tmp_path / "exports")) == ["batching_parameters.txt",
                                                        "models.config", "sentiment"]


# === pretraining runs, tools ===


def test_pretraining_refuses_an_output_of_something_else(tmp_path):
    from keras_bert.training.pretrain import check_run_dir

    write(str(tmp_path / "out" / "paper.pdf"), "mine")
    write(str(tmp_path / "file"), "a file")
    before = snapshot(tmp_path)
    with pytest.raises(OutputError, match="is not a pretraining run"):
        check_run_dir(str(tmp_path / "out"))
    with pytest.raises(OutputError, match="is a file"):
        check_run_dir(str(tmp_path / "file"))
    with pytest.raises(OutputError, match="is the input"):
        check_run_dir(str(tmp_path / "out"), [str(tmp_path / "out")])
    check_run_dir(str(tmp_path / "new"))
    assert snapshot(tmp_path) == before


_PRINTER = textwrap.dedent("""
    import logging, sys
    sys.path.insert(0, sys.argv[1])
    import _cli

    logger = logging.getLogger("keras_bert")
    logger.addHandler(_cli.StdoutLogHandler())
    logger.setLevel(logging.INFO)
    logger.propagate = False

    def main(argv):
        for i in range(200000):
            if argv[0] == "print":
                print("line", i)
            else:
                logger.info("line %d", i)

    sys.exit(_cli.run(main, sys.argv[2:]))
""")


@pytest.mark.parametrize("how", ["print", "logging"])
def test_a_tool_ends_quietly_when_its_reader_closes_the_pipe(how):
    process = subprocess.Popen(
        [sys.executable, "-c", _PRINTER, os.path.join(ROOT, "tools"), how],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout.readline() == b"line 0\n"  # What `| head -1` reads.
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=60) == 0, stderr
    assert stderr == ""


def test_a_failed_encoder_save_keeps_the_previous_keras_file(encoder, tmp_path, monkeypatch):
    path = str(tmp_path / "encoder.keras")
    encoder.save(path)
    before = snapshot(tmp_path)
    from keras.src.saving import saving_api

    def fail(model, filepath, **kwargs):
        with open(filepath, "wb") as f:
            f.write(b"PK\x03\x04 half a zip")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(saving_api, "save_model", fail)
    with pytest.raises(OSError, match="No space"):
        encoder.save(path)
    assert snapshot(tmp_path) == before
    monkeypatch.undo()
    loaded = keras.saving.load_model(path)
    np.testing.assert_array_equal(weights_of(loaded)[0], weights_of(encoder)[0])
    with pytest.raises(FileExistsError, match="overwrite=True"):
        encoder.save(path, overwrite=False)


def test_save_pretrained_into_a_folder_holding_only_the_vocab_it_copies(tmp_path):
    os.makedirs(tmp_path / "m")
    make_vocab(str(tmp_path / "m" / "vocab.txt"))
    vocab = str(tmp_path / "m" / "vocab.txt")
    with open(vocab, encoding="utf-8") as f:
        size = sum(1 for _ in f)
    model = BertEncoder(**tiny_config(num_layers=1, vocab_size=size).to_dict())
    before = (tmp_path / "m" / "vocab.txt").read_bytes()
    model.save_pretrained(str(tmp_path / "m"), vocab_file=vocab)
    assert (tmp_path / "m" / "vocab.txt").read_bytes() == before
    assert sorted(os.listdir(tmp_path / "m")) == ["config.json", "model.weights.h5", "vocab.txt"]
    # Another vocabulary there is the user's: refused.
    other = BertEncoder(**tiny_config(num_layers=1, vocab_size=size).to_dict())
    os.makedirs(tmp_path / "n")
    (tmp_path / "n" / "vocab.txt").write_bytes(before)
    with pytest.raises(OutputError, match="vocab.txt"):
        other.save_pretrained(str(tmp_path / "n"), vocab_file=vocab)
    assert os.listdir(tmp_path / "n") == ["vocab.txt"]


def test_export_to_a_file_as_exports_name_is_refused_at_once(tiny_model, tmp_path):
    write(str(tmp_path / "exports" / "tiny"), "a file")
    before = snapshot(tmp_path)
    with pytest.raises(OutputError, match="is a file"):
        export_model(tiny_model, str(tmp_path / "exports" / "tiny"))
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("name", ["build_vocab", "prepare_corpus"])
def test_text_tools_refuse_to_write_over_their_input(name, tmp_path):
    from tests.conftest import tool_module

    corpus = _corpus(tmp_path / "corpus.txt")
    before = snapshot(tmp_path)
    module = tool_module(name)
    with pytest.raises(OutputError, match="is the input"):
        module.main([corpus, "--output", corpus])
    assert snapshot(tmp_path) == before


def test_outputs_under_a_file_fail_before_training(tmp_path):
    model = make_model_dir(str(tmp_path / "tiny"))
    write(str(tmp_path / "notes.txt"), "mine")
    before = snapshot(tmp_path)
    with pytest.raises(OutputError, match="is a file"):
        finetune_lib.finetune("classification", model, str(tmp_path / "notes.txt" / "out"),
                              None, None)
    with pytest.raises(OutputError, match="is a file"):
        write_serving_config([str(tmp_path)], str(tmp_path / "notes.txt"))
    assert snapshot(tmp_path) == before
