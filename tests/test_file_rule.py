"""keras_bert.files: the one rule for what keras_bert writes and deletes."""

import os
import subprocess
import sys

import pytest

from keras_bert.files import (
    Kind,
    OutputError,
    atomic_file,
    check_not_input,
    prepare_output_dir,
    remove_own,
    staged_dir,
)
from keras_bert.staging import host_name, owner_prefix, remove_stale

NOTES = Kind("notes folder", required=("notes.json",), allowed=("notes.json", "extra.txt"))


def snapshot(root):
    """{relative path: bytes (files) or None (folders)} of everything under `root`."""
    found = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs:
            found[os.path.relpath(os.path.join(folder, name), root)] = None
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                found[os.path.relpath(path, root)] = f.read()
    return found


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def test_a_foreign_folder_is_refused_naming_it_and_the_way_out(tmp_path):
    write(str(tmp_path / "out" / "thesis.tex"), "years of work")
    before = snapshot(tmp_path)
    with pytest.raises(OutputError) as info:
        prepare_output_dir(str(tmp_path / "out"), NOTES)
    message = str(info.value)
    assert str(tmp_path / "out") in message and "thesis.tex" in message
    assert "choose a new or empty folder, or remove it yourself" in message
    assert "\n" not in message
    assert snapshot(tmp_path) == before


def test_an_own_kind_folder_with_a_user_file_is_refused_naming_the_file(tmp_path):
    write(str(tmp_path / "out" / "notes.json"), "{}")
    write(str(tmp_path / "out" / "mine.txt"), "keep me")
    with pytest.raises(OutputError, match=r"mine\.txt, which keras_bert did not write"):
        prepare_output_dir(str(tmp_path / "out"), NOTES)
    assert (tmp_path / "out" / "mine.txt").read_text() == "keep me"


def test_a_file_as_output_folder_is_refused(tmp_path):
    write(str(tmp_path / "out"), "a file")
    with pytest.raises(OutputError, match="is a file"):
        prepare_output_dir(str(tmp_path / "out"), NOTES)
    assert (tmp_path / "out").read_text() == "a file"


def test_missing_empty_and_own_folders_are_accepted(tmp_path):
    assert prepare_output_dir(str(tmp_path / "new"), NOTES) == str(tmp_path / "new")
    (tmp_path / "empty").mkdir()
    assert prepare_output_dir(str(tmp_path / "empty"), NOTES) == str(tmp_path / "empty")
    write(str(tmp_path / "own" / "notes.json"), "{}")
    write(str(tmp_path / "own" / "extra.txt"), "ours too")
    assert prepare_output_dir(str(tmp_path / "own"), NOTES) == str(tmp_path / "own")
    with pytest.raises(FileExistsError, match="--replace-it"):
        prepare_output_dir(str(tmp_path / "own"), NOTES, overwrite=False,
                           overwrite_flag="--replace-it")


def test_outputs_never_clobber_inputs(tmp_path):
    write(str(tmp_path / "data" / "corpus.txt"), "text")
    data, corpus = str(tmp_path / "data"), str(tmp_path / "data" / "corpus.txt")
    with pytest.raises(OutputError, match="is the input"):
        check_not_input(corpus, [corpus])
    with pytest.raises(OutputError, match="contains the input"):
        check_not_input(data, [corpus])
    with pytest.raises(OutputError, match="contains the input"):
        check_not_input(str(tmp_path), [data])
    write(str(tmp_path / "data" / "sub" / "x"), "x")
    with pytest.raises(OutputError, match="inside the input"):
        check_not_input(str(tmp_path / "data" / "sub"), [data])
    # A new path inside an input folder overwrites nothing; a sibling is apart.
    check_not_input(str(tmp_path / "data" / "new"), [data])
    check_not_input(str(tmp_path / "data2"), [data, None])
    assert (tmp_path / "data" / "corpus.txt").read_text() == "text"


def test_staged_dir_replaces_only_on_success_and_leaves_no_staging(tmp_path):
    target = str(tmp_path / "out")
    write(os.path.join(target, "notes.json"), "old")
    write(str(tmp_path / "out.old" / "user.txt"), "the user's own out.old")
    with pytest.raises(RuntimeError, match="disk full"):
        with staged_dir(target) as tmp:
            write(os.path.join(tmp, "notes.json"), "half")
            raise RuntimeError("disk full")
    assert (tmp_path / "out" / "notes.json").read_text() == "old"
    with staged_dir(target) as tmp:
        write(os.path.join(tmp, "notes.json"), "new")
    assert (tmp_path / "out" / "notes.json").read_text() == "new"
    assert sorted(os.listdir(tmp_path)) == ["out", "out.old"]
    assert (tmp_path / "out.old" / "user.txt").read_text() == "the user's own out.old"
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(target).st_mode & 0o777 == 0o777 & ~umask  # Not mkdtemp's 0700.


def test_staged_dir_follows_a_link_and_keeps_it(tmp_path):
    real = str(tmp_path / "real")
    write(os.path.join(real, "notes.json"), "old")
    os.symlink(real, str(tmp_path / "link"))
    with staged_dir(str(tmp_path / "link")) as tmp:
        write(os.path.join(tmp, "notes.json"), "new")
    assert os.path.islink(tmp_path / "link")
    assert os.readlink(tmp_path / "link") == real
    assert (tmp_path / "real" / "notes.json").read_text() == "new"
    assert sorted(os.listdir(tmp_path)) == ["link", "real"]


def test_atomic_file_keeps_the_old_file_on_failure_and_the_extension(tmp_path):
    target = str(tmp_path / "model.keras")
    write(target, "good model")
    with pytest.raises(OSError, match="No space"):
        with atomic_file(target) as tmp:
            assert tmp.endswith(".keras") and os.path.dirname(tmp) == str(tmp_path)
            assert os.path.basename(tmp) != "model.keras"
            write(tmp, "half a mod")
            raise OSError(28, "No space left on device")
    assert (tmp_path / "model.keras").read_text() == "good model"
    assert os.listdir(tmp_path) == ["model.keras"]
    with atomic_file(target) as tmp:
        write(tmp, "better model")
    assert (tmp_path / "model.keras").read_text() == "better model"
    assert os.listdir(tmp_path) == ["model.keras"]


def test_atomic_file_replaces_a_links_target(tmp_path):
    write(str(tmp_path / "real.npy"), "old")
    os.symlink(str(tmp_path / "real.npy"), str(tmp_path / "link.npy"))
    with atomic_file(str(tmp_path / "link.npy")) as tmp:
        write(tmp, "new")
    assert os.path.islink(tmp_path / "link.npy")
    assert (tmp_path / "real.npy").read_text() == "new"
    with pytest.raises(OutputError, match="is a folder"):
        with atomic_file(str(tmp_path)):
            pass


def test_remove_own_keeps_the_users_files_and_their_folder(tmp_path):
    write(str(tmp_path / "ckpt" / "state.json"), "ours")
    write(str(tmp_path / "ckpt" / "sub" / "x"), "ours")
    write(str(tmp_path / "ckpt" / "README"), "the user's")
    assert not remove_own(str(tmp_path / "ckpt"), ["state.json", "sub", "absent"])
    assert os.listdir(tmp_path / "ckpt") == ["README"]
    assert remove_own(str(tmp_path / "ckpt"), ["README"])
    assert not (tmp_path / "ckpt").exists()


def dead_pid():
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    return dead.pid


def test_remove_stale_removes_dead_writers_temp_files_only_when_asked(tmp_path):
    pid = dead_pid()
    owner = owner_prefix(".tmp-", "model.keras", ".keras")
    stale = tmp_path / f"{owner}pid{pid}-{host_name()}-abc123.keras"
    live = tmp_path / f"{owner}pid{os.getppid()}-{host_name()}-def456.keras"
    # A dead writer's file of another target ("model-x.keras") is not this target's.
    other = tmp_path / (f"{owner_prefix('.tmp-', 'model-x.keras', '.keras')}pid{pid}-"
                        f"{host_name()}-a1.keras")
    for path in (stale, live, other):
        path.write_text("x")
    assert remove_stale(str(tmp_path), ".tmp-", "model.keras", ".keras") == []
    assert remove_stale(str(tmp_path), ".tmp-", "model.keras", ".keras", files=True) == [
        str(stale)]
    assert sorted(os.listdir(tmp_path)) == sorted([live.name, other.name])


def test_an_old_version_left_between_the_two_renames_is_put_back(tmp_path):
    # A writer killed after renaming out/ into its staging folder, before the new one in.
    staging = tmp_path / f"{owner_prefix('.tmp-', 'out')}pid{dead_pid()}-{host_name()}-x1y2z3"
    write(str(staging / "old" / "notes.json"), "the only copy")
    write(str(staging / "new" / "notes.json"), "half")
    with pytest.raises(RuntimeError):
        with staged_dir(str(tmp_path / "out")):
            raise RuntimeError("this writer fails too")
    assert (tmp_path / "out" / "notes.json").read_text() == "the only copy"
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_an_output_under_a_file_is_refused_before_any_work(tmp_path):
    from keras_bert.files import check_writable

    write(str(tmp_path / "notes.txt"), "mine")
    with pytest.raises(OutputError, match=r"notes\.txt is a file, not a folder"):
        check_writable(str(tmp_path / "notes.txt" / "model"))
    with pytest.raises(OutputError, match=r"notes\.txt is a file, not a folder"):
        prepare_output_dir(str(tmp_path / "notes.txt" / "deeper" / "model"), NOTES)
    check_writable(str(tmp_path / "new" / "deeper" / "model"))
    check_writable("gs://bucket/model")
    assert (tmp_path / "notes.txt").read_text() == "mine"
