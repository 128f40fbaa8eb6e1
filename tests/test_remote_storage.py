"""keras_bert.storage: the object-store commit protocol (issue 38 item 4).

On TF's in-memory ram:// file system, in process: an exception at each step of
a commit leaves the old version or one that a reader rolls forward, never a
folder that loads as complete when it is not. On a local path with the
protocol forced (`storage.object_store` patched, in the writer by
tests/writer_harness.py): a real SIGKILL at each step, in a
subprocess that loads keras_bert.files alone (no TensorFlow: local paths never
import it), and of real writers (save_pretrained, export_model; slow tier).
And the clear error for a scheme no file system is registered for.
"""

import json
import os
import re
import secrets
import threading

import numpy as np
import pytest

from keras_bert import files, staging, steps, storage
from keras_bert.files import read_committed, recover, staged_dir
from keras_bert.names import DamagedFileError
from tests import writer_harness
from tests.test_commit_protocol import _PRELUDE, contents, kill_at

STEPS = ("staged", "remote:unmarked", "remote:copied", "committed")
# What a reader finds after a writer stopped at each step: the old version
# (the target's marker still there), or the new one rolled forward.
EXPECTED = {"staged": "old", "remote:unmarked": "new", "remote:copied": "new",
            "committed": "new"}


def write(target, text, names=("a.txt", "b.txt")):
    with staged_dir(target) as tmp:
        for name in names:
            with open(os.path.join(tmp, name), "w") as f:
                f.write(text)


def read(target):
    """The (a.txt, b.txt) texts of the committed version of `target`."""
    def both():
        return tuple(storage.read_bytes(storage.join(target, n)).decode() for n in
                     ("a.txt", "b.txt"))
    return read_committed(target, both)


class Stop(Exception):
    pass


@pytest.fixture
def ram():
    return f"ram://test-{secrets.token_hex(4)}"


def stop_at(monkeypatch, step):
    def reached(name, step_number=None):
        if name == step:
            raise Stop(step)
    monkeypatch.setattr(steps, "reached", reached)


def force_object_store(monkeypatch):
    """The object-store protocol on local paths, in this process."""
    monkeypatch.setattr(storage, "object_store", lambda path: True)


@pytest.mark.parametrize("step", STEPS)
def test_a_ram_write_stopped_at_any_step_reads_old_or_rolls_forward(step, ram, monkeypatch):
    target = f"{ram}/models/out"
    write(target, "old", names=("a.txt", "b.txt", "old-only.txt"))
    stop_at(monkeypatch, step)
    with pytest.raises(Stop):
        write(target, "new")
    monkeypatch.undo()
    if EXPECTED[step] == "new" and step != "committed":
        # No marker: the target is refused until it is rolled forward.
        with pytest.raises(storage.IncompleteError, match="incomplete.*Write it again"):
            read(target)
    assert recover(target)
    assert read(target) == (EXPECTED[step],) * 2
    names = storage.listdir(target)
    assert ("old-only.txt" in names) == (EXPECTED[step] == "old")
    # A finished or rolled-forward copy leaves no staging behind; nor does the
    # stopped writer, which ended its commit (it raised): its staging goes.
    assert storage.listdir(f"{ram}/models") == ["out"]
    write(target, "newer")
    assert read(target) == ("newer", "newer")


def test_a_ram_folder_without_a_staged_copy_never_loads_as_complete(ram, monkeypatch):
    target = f"{ram}/out"
    write(target, "old")
    stop_at(monkeypatch, "remote:copied")
    with pytest.raises(Stop):
        write(target, "new")
    for name in storage.listdir(ram):
        if name != "out":
            storage.remove(storage.join(ram, name))  # The staged copy is lost too.
    local = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"fetch-{secrets.token_hex(4)}")
    with pytest.raises(storage.IncompleteError, match="out is incomplete"):
        storage.fetch_dir(target, local, what="model directory")
    assert not recover(target)


def test_files_that_do_not_match_the_marker_are_refused(ram, tmp_path):
    target = f"{ram}/out"
    write(target, "abc")
    storage.write_bytes(f"{target}/a.txt", b"xyz")  # Same size, other bytes.
    with pytest.raises(storage.IncompleteError, match="does not match its commit marker"):
        storage.fetch_dir(target, str(tmp_path / "copy"))
    storage.write_bytes(f"{target}/a.txt", b"ab")  # Cut short: the size differs.
    assert storage.committed_manifest(target) is None


def test_an_interrupted_upload_leaves_no_staged_copy(ram, monkeypatch):
    target = f"{ram}/out"
    write(target, "old")
    real = storage.write_bytes
    calls = []

    def failing(path, data):
        calls.append(path)
        if len(calls) == 2:
            raise OSError("disk full")
        real(path, data)
    monkeypatch.setattr(storage, "write_bytes", failing)
    with pytest.raises(OSError, match="disk full"):
        write(target, "new")
    monkeypatch.undo()
    assert storage.listdir(ram) == ["out"] and read(target) == ("old", "old")


_FORCED = _PRELUDE + """
with files.staged_dir(sys.argv[1]) as tmp:
    for name in ("a.txt", "b.txt"):
        open(os.path.join(tmp, name), "w").write(sys.argv[2])
"""


@pytest.mark.parametrize("step", STEPS)
def test_a_sigkill_at_any_step_of_the_forced_protocol_loses_nothing(step, tmp_path,
                                                                    monkeypatch):
    force_object_store(monkeypatch)
    target = str(tmp_path / "models" / "out")
    write(target, "old")
    kill_at(step, _FORCED, target, "new", tmp_path=tmp_path, object_store=True)
    if step in ("remote:unmarked", "remote:copied"):
        with pytest.raises(storage.IncompleteError):
            read(target)
    assert recover(target)
    assert read(target) == (EXPECTED[step],) * 2
    # The killed writer's staging (its PID is gone) is removed by the recovery.
    assert os.listdir(tmp_path / "models") == ["out"]


def test_an_unregistered_scheme_is_refused_naming_the_way_out(monkeypatch):
    with pytest.raises(ValueError, match=r"nosuchfs://.*no file system is registered.*"
                                         r"plugin"):
        files.check_writable("nosuchfs://bucket/out")
    import tensorflow as tf

    # A TensorFlow without the GCS file system (TF 2.20+ without the extra).
    monkeypatch.setattr(tf.io.gfile, "get_registered_schemes", lambda: ["", "file", "ram"])
    with pytest.raises(ValueError, match=r"gs://.*bert-keras3\[gcs\]"):
        files.prepare_output_dir("gs://bucket/model", files.Kind("folder"))


def test_a_tool_and_its_api_refuse_an_unregistered_scheme_before_any_work(tmp_path):
    from keras_bert.data import create_pretraining_data

    corpus, vocab = tmp_path / "corpus.txt", tmp_path / "vocab.txt"
    corpus.write_text("a b\nc d\n")
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\n")
    with pytest.raises(ValueError, match="nosuchfs://.*no file system is registered"):
        create_pretraining_data([str(corpus)], "nosuchfs://bucket/data", str(vocab))
    with pytest.raises(ValueError, match="nosuchfs://.*no file system is registered"):
        create_pretraining_data(["nosuchfs://bucket/corpus.txt"], str(tmp_path / "d"),
                                str(vocab))
    assert not (tmp_path / "d").exists()


def test_a_tool_refuses_an_unregistered_scheme_before_any_work(tmp_path):
    from tests.conftest import run_tool

    corpus, vocab = tmp_path / "corpus.txt", tmp_path / "vocab.txt"
    corpus.write_text("a b\nc d\n")
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\n")
    status, _, stderr = run_tool("create_pretraining_data", corpus, "--output",
                                 "nosuchfs://bucket/data", "--vocab-file", vocab)
    assert status != 0
    assert "nosuchfs://bucket/data: no file system is registered" in stderr


@pytest.mark.parametrize("step", ["data:committed", "data:swap"])
def test_pretraining_data_on_ram_cut_short_after_its_commit_is_rolled_forward(
        step, ram, monkeypatch):
    from keras_bert.data import PretrainingDataConfig, create_pretraining_data, read_metadata

    words = "alpha beta gamma delta epsilon zeta eta theta".split()
    vocab = f"{ram}/vocab.txt"
    storage.write_bytes(vocab, "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words])
                        .encode())
    corpus = f"{ram}/corpus.txt"
    storage.write_bytes(corpus, "\n\n".join(" ".join(words[i:] + words[:i]) + "\n" +
                                            " ".join(words[::-1]) for i in range(8)).encode())
    data = f"{ram}/data"
    config = PretrainingDataConfig(max_seq_length=16, max_predictions_per_seq=3,
                                   document_pool_size=4)
    old = create_pretraining_data([corpus], data, vocab, config, num_shards=1)
    stop_at(monkeypatch, step)
    with pytest.raises(Stop):
        create_pretraining_data([corpus], data, vocab, config, num_shards=2)
    monkeypatch.undo()
    # The commit made is finished (by the writer, else by the next reader):
    # the two new shards, the old one gone.
    metadata = read_metadata(data)
    assert metadata["num_shards"] == 2 and old["num_shards"] == 1
    assert sorted(n for n in storage.listdir(data) if n.startswith("pretraining-")) == \
        sorted(s["file"] for s in metadata["shards"])
    assert not [n for n in storage.listdir(data) if n.startswith(".tmp-")]


def test_a_model_directory_and_a_keras_file_on_ram_round_trip_and_a_cut_commit_rolls_forward(
        ram, monkeypatch):
    import keras
    import numpy as np

    from keras_bert.models import BertEncoder
    from tests.conftest import tiny_config

    encoder = BertEncoder(**tiny_config().to_dict())
    encoder.save(f"{ram}/encoder.keras")
    loaded = keras.models.load_model(f"{ram}/encoder.keras")
    np.testing.assert_array_equal(loaded.get_weights()[0], encoder.get_weights()[0])
    target = f"{ram}/encoder"
    encoder.save_pretrained(target)
    first = encoder.get_weights()[0]
    encoder.set_weights([w + 1 for w in encoder.get_weights()])
    stop_at(monkeypatch, "remote:copied")
    with pytest.raises(Stop):
        encoder.save_pretrained(target)
    monkeypatch.undo()
    assert storage.committed_manifest(target) is None  # Cut short: no marker yet.
    # from_pretrained finishes the commit from the staged copy: the new weights.
    again = BertEncoder.from_pretrained(target)
    np.testing.assert_allclose(again.get_weights()[0], first + 1)
    assert storage.committed_manifest(target)


# === A real writer SIGKILLed on the object-store protocol ===

# save_pretrained of a tiny encoder seeded with argv[3] to argv[2]; its first
# weight goes to argv[4] first, so the test knows what "new" is.
_SAVE_PRETRAINED = """
import sys
import keras
import numpy as np
from keras_bert.models import BertEncoder
from tests.conftest import tiny_config
keras.utils.set_random_seed(int(sys.argv[2]))
encoder = BertEncoder(**tiny_config().to_dict())
np.save(sys.argv[3], encoder.get_weights()[0])
encoder.save_pretrained(sys.argv[1])
"""


def _seeded_encoder(seed):
    import keras

    from keras_bert.models import BertEncoder
    from tests.conftest import tiny_config

    keras.utils.set_random_seed(seed)
    return BertEncoder(**tiny_config().to_dict())


# A writer process per step, forked from one that imported TensorFlow once for the
# module (tests/writer_harness.py Forker): one step in the default tier.
_SLOW = pytest.mark.slow


@pytest.mark.parametrize("step, expected", [
    # Part of the new version staged, no staged marker.
    pytest.param("remote:uploading", "old", marks=_SLOW),
    # The new version staged whole, the target untouched.
    pytest.param("staged", "old", marks=_SLOW),
    # The target's marker removed: rolled forward.
    pytest.param("remote:unmarked", "new", marks=_SLOW),
    # New files copied, no marker yet: rolled forward.
    ("remote:copied", "new"),
    # ... and the staged copy lost too: refused.
    pytest.param("remote:copied", "refused", marks=_SLOW),
    # Marker written, staging not yet removed.
    pytest.param("committed", "new", marks=_SLOW),
])
def test_a_sigkilled_save_pretrained_loads_old_or_new_whole_and_a_rewrite_works(
        step, expected, tmp_path, monkeypatch, forker):
    from keras_bert.models import BertEncoder

    force_object_store(monkeypatch)
    monkeypatch.setenv("KERAS_BERT_CACHE_DIR", str(tmp_path / "cache"))
    models = tmp_path / "models"
    target = str(models / "encoder")
    old = _seeded_encoder(0)
    old.save_pretrained(target)
    new_file = tmp_path / "new.npy"
    writer_harness.kill_at(step, _SAVE_PRETRAINED, target, 1, new_file, tmp_path=tmp_path,
                           object_store=True, forker=forker)
    new = np.load(new_file)
    assert not np.array_equal(new, old.get_weights()[0])
    # The target is trusted only while its marker is there: not between
    # "remote:unmarked" and "committed".
    marked = step in ("remote:uploading", "staged", "committed")
    assert (storage.committed_manifest(target) is not None) == marked
    if not marked:
        with pytest.raises(storage.IncompleteError):
            read_committed(target, lambda: None)
    if expected == "refused":
        for name in os.listdir(models):
            if name != "encoder":
                storage.remove(str(models / name))
        with pytest.raises(storage.IncompleteError, match="encoder is incomplete.*Write it "
                                                          "again"):
            BertEncoder.from_pretrained(target)
    else:
        loaded = BertEncoder.from_pretrained(target).get_weights()[0]
        np.testing.assert_array_equal(loaded, old.get_weights()[0] if expected == "old" else new)
        assert storage.committed_manifest(target) is not None
    newer = _seeded_encoder(2)
    newer.save_pretrained(target)  # The next writer: the killed one's staging goes.
    np.testing.assert_array_equal(BertEncoder.from_pretrained(target).get_weights()[0],
                                  newer.get_weights()[0])
    assert os.listdir(models) == ["encoder"]


_EXPORT = """
import sys
from keras_bert.export import export_model
export_model(sys.argv[1], sys.argv[2], overwrite=True, warmup=False)
"""


@pytest.mark.slow  # Three exports, one in a TensorFlow process: about 40 s.
def test_a_sigkilled_export_is_refused_until_rolled_forward_and_a_rewrite_works(
        tmp_path, monkeypatch, forker):
    from keras_bert.export import export_model
    from keras_bert.export.layout import STAGING_PREFIX
    from keras_bert.export.predict import load_export, run_signature
    from tests.training.finetune_fixtures import make_model_dir

    force_object_store(monkeypatch)
    monkeypatch.setenv("KERAS_BERT_CACHE_DIR", str(tmp_path / "cache"))
    model_dir = make_model_dir(str(tmp_path / "model"))
    version = str(tmp_path / "exports" / "encoder" / "1")
    assert export_model(model_dir, version, warmup=False) == version
    texts = ["the movie was good", "a bad film"]
    want = run_signature(load_export(version), {"text": texts}, signature="embed")
    writer_harness.kill_at("remote:copied", _EXPORT, model_dir, version, tmp_path=tmp_path,
                           object_store=True, forker=forker)
    with pytest.raises(ValueError, match="Cannot load the SavedModel.*1 is incomplete"):
        load_export(version)
    assert recover(version, STAGING_PREFIX)  # Rolled forward from the killed one's copy.
    got = run_signature(load_export(version), {"text": texts}, signature="embed")
    for name in want:
        np.testing.assert_allclose(got[name], want[name], atol=1e-6)
    export_model(model_dir, version, overwrite=True, warmup=False)
    assert os.listdir(tmp_path / "exports" / "encoder") == ["1"]
    assert storage.committed_manifest(version) is not None


# === Names in commit markers (issue 46 item 1) ===

HOSTILE = ["/abs/folder", "../escaped.txt", "../../../escaped.txt", "gs://b/x", "C:/x",
           "a\x00b"]
# A writer that provably ended: no process has this PID (above Linux's pid_max).
_DEAD = f"pid{2 ** 22 + 1}.1-{staging.host_name()}-deadbeef"


def _marker(files_, replaces=(), generation="99999999999999999999-ffffffff"):
    return json.dumps({"generation": generation, "replaces": list(replaces),
                       "files": {name: {"size": len(data), "sha256": storage._digest(data)}
                                 for name, data in files_.items()}}).encode()


def _stage(target, marker, files_=None, owner=_DEAD):
    """A complete staged copy of `target` beside it, as someone with write access puts it."""
    parent, name = os.path.split(target)
    staged = storage.join(parent, staging.owner_prefix(".tmp-", name) + owner)
    storage.makedirs(staged)
    for file_name, data in (files_ or {}).items():
        storage.write_bytes(storage.join(staged, file_name), data)
    storage.write_bytes(storage.join(staged, storage.MARKER), marker)
    return staged


@pytest.mark.parametrize("name", HOSTILE)
def test_a_staged_marker_that_replaces_outside_its_folder_is_refused_and_removes_nothing(
        name, ram, tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("mine")
    target = f"{ram}/models/out"
    write(target, "old")
    storage.remove(storage.join(target, storage.MARKER))  # The target's marker is gone.
    if name == "/abs/folder":
        name = str(victim)
    new = {"a.txt": b"new", "b.txt": b"new"}
    staged = _stage(target, _marker(new, replaces=[name]), new)
    for attempt in (lambda: recover(target), lambda: storage.local_copy(target)):
        with pytest.raises(DamagedFileError) as error:
            attempt()
        assert repr(name) in str(error.value) and "replaced file" in str(error.value)
        assert storage.MARKER in str(error.value) and os.path.basename(staged) in str(error.value)
    assert (victim / "keep.txt").read_text() == "mine"
    assert storage.listdir(target) == ["a.txt", "b.txt"] and storage.exists(staged)


@pytest.mark.parametrize("name", HOSTILE)
def test_a_committed_marker_naming_a_file_outside_its_folder_is_refused(name, ram, tmp_path,
                                                                        monkeypatch):
    monkeypatch.setenv("KERAS_BERT_CACHE_DIR", str(tmp_path / "a" / "b" / "cache"))
    target = f"{ram}/m"
    write(target, "old")
    files_ = {"a.txt": b"old", "b.txt": b"old", name: b"planted"}
    storage.write_bytes(storage.join(target, storage.MARKER),
                        _marker(files_, generation="00000000000000000001-00000000"))
    download = tmp_path / "a" / "b" / "download"
    for attempt in (lambda: storage.fetch_dir(target, str(download)),
                    lambda: storage.local_copy(target), lambda: read(target)):
        with pytest.raises(DamagedFileError, match="committed file " + re.escape(repr(name))):
            attempt()
    assert not download.exists()
    written = [os.path.join(root, n) for root, _, names in os.walk(tmp_path) for n in names]
    assert written == []  # Nothing planted anywhere (escaped.txt, a cache copy).


def test_the_local_object_store_protocol_never_removes_a_sibling_that_a_marker_names(
        tmp_path, monkeypatch):
    force_object_store(monkeypatch)
    sibling = tmp_path / "models" / "sibling"
    sibling.mkdir(parents=True)
    (sibling / "weights.h5").write_text("other model")
    target = str(tmp_path / "models" / "out")
    write(target, "old")
    os.remove(os.path.join(target, storage.MARKER))
    new = {"a.txt": b"new", "b.txt": b"new"}
    _stage(target, _marker(new, replaces=["../sibling"]), new)
    with pytest.raises(DamagedFileError, match=r"'\.\./sibling' climbs out"):
        write(target, "newer")  # A writer's recovery meets it first.
    assert (sibling / "weights.h5").read_text() == "other model"
    assert sorted(os.listdir(target)) == ["a.txt", "b.txt"]


# === A live writer's commit is its own (issue 46 item 2) ===


def _hold(step, target, text, tmp_path):
    """A writer of `target` (object-store protocol, local disk) held at `step`."""
    marker = str(tmp_path / f"held-{step.replace(':', '-')}")
    writer = writer_harness.start(_FORCED, target, text, stop=step, marker=marker, bare=True,
                                  object_store=True)
    writer_harness.wait_paused(marker, writer)
    return writer, marker


def _in_thread(function):
    """Runs `function` in a thread; returns (thread, results): its result or its error."""
    results = []

    def run():
        try:
            results.append(function())
        except Exception as error:  # Reported by the test's assertion.
            results.append(error)
    thread = threading.Thread(target=run)
    thread.start()
    thread.join(0.5)
    return thread, results


@pytest.mark.parametrize("step", ["remote:unmarked", "remote:copied"])
def test_a_reader_waits_for_a_live_writers_commit_and_never_finishes_it(step, tmp_path,
                                                                        monkeypatch):
    force_object_store(monkeypatch)
    monkeypatch.setenv("KERAS_BERT_CACHE_DIR", str(tmp_path / "cache"))
    models = tmp_path / "models"
    target = str(models / "out")
    write(target, "old")
    writer, marker = _hold(step, target, "new", tmp_path)
    (staged,) = [n for n in os.listdir(models) if n != "out"]
    # A reader that gives up first is refused, naming the writer; nothing is touched.
    monkeypatch.setattr(storage, "COMMIT_WAIT_SECONDS", 0.3)
    with pytest.raises(storage.IncompleteError,
                       match=rf"process {writer.pid} on host .*may still run.*once that writer"):
        storage.local_copy(target)
    assert staged in os.listdir(models)
    # A reader that waits gets the writer's version once the writer goes on.
    monkeypatch.setattr(storage, "COMMIT_WAIT_SECONDS", 60)
    reader, copies = _in_thread(lambda: storage.local_copy(target))
    assert reader.is_alive() and staged in os.listdir(models)
    os.remove(marker)
    assert writer.wait(60) == 0, writer_harness.errors(writer)
    reader.join(60)
    assert contents(copies[0]) == ("new", "new")
    assert os.listdir(models) == ["out"]


def test_a_second_writer_leaves_a_live_writers_staging_and_both_succeed(tmp_path, monkeypatch):
    force_object_store(monkeypatch)
    models = tmp_path / "models"
    target = str(models / "out")
    write(target, "old")
    writer, marker = _hold("remote:unmarked", target, "first", tmp_path)
    (staged,) = [n for n in os.listdir(models) if n != "out"]
    second, errors = _in_thread(lambda: write(target, "second"))
    assert second.is_alive() and staged in os.listdir(models)  # Waiting, not rolling forward.
    os.remove(marker)
    assert writer.wait(60) == 0, writer_harness.errors(writer)
    second.join(60)
    assert errors == [None] and read(target) == ("second", "second")
    assert os.listdir(models) == ["out"]


def test_a_writer_whose_commit_another_process_finished_ends_with_success(ram, monkeypatch):
    target = f"{ram}/out"
    write(target, "old")

    def finish_it(name, step=None):  # What an older reader did: marker written, staging gone.
        if name == "remote:copied":
            (staged,) = [storage.join(ram, n) for n in storage.listdir(ram) if n != "out"]
            storage.write_bytes(storage.join(target, storage.MARKER),
                                storage.read_bytes(storage.join(staged, storage.MARKER)))
            storage.remove(staged)
    monkeypatch.setattr(steps, "reached", finish_it)
    write(target, "new")
    assert read(target) == ("new", "new") and storage.listdir(ram) == ["out"]


# === A remote folder's local copy is checked on use (issue 46 item 6) ===


def test_a_local_copy_that_was_changed_or_cut_is_fetched_again(ram, tmp_path, monkeypatch,
                                                               caplog):
    monkeypatch.setenv("KERAS_BERT_CACHE_DIR", str(tmp_path / "cache"))
    target = f"{ram}/out"
    write(target, "abc")
    local = storage.local_copy(target)
    inode = os.stat(os.path.join(local, "a.txt")).st_ino
    assert storage.local_copy(target) == local and not caplog.text  # Intact: used as it is.
    assert os.stat(os.path.join(local, "a.txt")).st_ino == inode
    damages = {"a.txt was changed": lambda: open(os.path.join(local, "a.txt"), "w").write("xyz"),
               "b.txt is missing": lambda: os.remove(os.path.join(local, "b.txt")),
               "a.txt has 1 bytes, not 3": lambda: open(os.path.join(local, "a.txt"),
                                                        "w").write("x")}
    for problem, damage in damages.items():
        caplog.clear()
        damage()
        with caplog.at_level("WARNING", "keras_bert.storage"):
            assert storage.local_copy(target) == local
        assert contents(local) == ("abc", "abc")
        assert f"of {target} no longer matches it ({problem}): fetching it again" in caplog.text
    assert sorted(os.listdir(tmp_path / "cache" / "remote")) == [os.path.basename(local)]


def test_a_remote_model_loads_after_its_local_copy_lost_a_file_and_errors_name_the_remote(
        ram, tmp_path, monkeypatch):
    from keras_bert.models import BertEncoder

    monkeypatch.setenv("KERAS_BERT_CACHE_DIR", str(tmp_path / "cache"))
    encoder = _seeded_encoder(0)
    target = f"{ram}/encoder"
    encoder.save_pretrained(target)
    BertEncoder.from_pretrained(target)
    (copy,) = os.listdir(tmp_path / "cache" / "remote")
    os.remove(tmp_path / "cache" / "remote" / copy / "config.json")
    np.testing.assert_array_equal(BertEncoder.from_pretrained(target).get_weights()[0],
                                  encoder.get_weights()[0])
    # A damaged model on the store: the error names the store's folder, not only the copy.
    with staged_dir(f"{ram}/broken") as tmp:
        for name in ("config.json", "model.weights.h5"):
            with open(os.path.join(tmp, name), "w") as f:
                f.write("{")
    with pytest.raises((OSError, ValueError), match=rf"{ram}/broken/config.json.*local copy of "
                                                    rf"{ram}/broken"):
        BertEncoder.from_pretrained(f"{ram}/broken")
