"""The commit protocol of keras_bert.files (issue 34): real SIGKILLs at each step of a
folder replacement, two writers at once, a reader during replacement, long names.

The writers here are subprocesses (tests/writer_harness.py --bare) that load keras_bert.files
alone (no TensorFlow: a few milliseconds to start), so each kill is cheap; the
real writers (save_pretrained, export, pretraining data) are killed the same way in
tests/test_commit_writers.py.
"""

import errno
import re
import subprocess
import os
import subprocess
import textwrap
import threading
import time

import pytest

from keras_bert import files, staging
from keras_bert.files import atomic_file, read_committed, recover, staged_dir
from tests import writer_harness


# Writers run under tests/writer_harness.py with --bare: keras_bert.files without
# keras_bert/__init__.py (which imports TensorFlow).
_PRELUDE = "import os, sys\nfrom keras_bert import files\n"

# Replaces the folder argv[1] with one whose a.txt and b.txt both hold argv[2].
_REPLACE = _PRELUDE + textwrap.dedent("""
    if sys.argv[3] == "no-exchange":
        files._EXCHANGE = None  # The two-rename path of systems without renameat2.
    with files.staged_dir(sys.argv[1]) as tmp:
        for name in ("a.txt", "b.txt"):
            open(os.path.join(tmp, name), "w").write(sys.argv[2])
""")


def fill(folder, text):
    os.makedirs(folder, exist_ok=True)
    for name in ("a.txt", "b.txt"):
        with open(os.path.join(folder, name), "w") as f:
            f.write(text)


def contents(folder):
    """The (a.txt, b.txt) texts of a folder."""
    found = []
    for name in ("a.txt", "b.txt"):
        with open(os.path.join(folder, name)) as f:
            found.append(f.read())
    return tuple(found)


def kill_at(step, script, *args, tmp_path, object_store=False):
    """Runs `script` (bare keras_bert) until it reaches the step `step`, then SIGKILLs it."""
    writer_harness.kill_at(step, script, *args, tmp_path=tmp_path, bare=True,
                           object_store=object_store)


@pytest.mark.parametrize("step, mode, expected", [
    ("staged", "exchange", "old"),
    ("committed", "exchange", "new"),
    ("staged", "no-exchange", "old"),
    ("old-moved", "no-exchange", "old"),
    ("committed", "no-exchange", "new"),
])
def test_a_kill_at_any_step_leaves_old_or_new_whole_and_other_writers_keep_it(
        step, mode, expected, tmp_path):
    parent = tmp_path / "models"
    target = str(parent / "out")
    fill(target, "old")
    kill_at(step, _REPLACE, target, "new", mode, tmp_path=tmp_path)
    leftovers = [n for n in os.listdir(parent) if n != "out"]
    assert len(leftovers) == 1  # The killed writer's staging folder.
    # Writers of other targets in the same folder: a sibling folder whose name
    # starts with "out-", a .keras file named after it. They leave it alone.
    with staged_dir(str(parent / "out-x")) as tmp:
        fill(tmp, "sibling")
    with atomic_file(str(parent / "out.keras")) as tmp:
        with open(tmp, "w") as f:
            f.write("keras")
    assert leftovers[0] in os.listdir(parent)
    # The next reader (or writer) of "out" finds it whole: the old version, put
    # back if the kill parked it, or the new one.
    assert recover(target)
    assert contents(target) == (expected, expected)
    assert sorted(os.listdir(parent)) == ["out", "out-x", "out.keras"]
    with staged_dir(target) as tmp:
        fill(tmp, "newer")
    assert contents(target) == ("newer", "newer")


def test_a_kill_between_the_renames_is_undone_by_the_next_writer_of_the_target(tmp_path):
    target = str(tmp_path / "out")
    fill(target, "old")
    kill_at("old-moved", _REPLACE, target, "new", "no-exchange", tmp_path=tmp_path)
    assert not os.path.exists(target)  # Only the staging folder holds it now.
    with pytest.raises(RuntimeError):
        with staged_dir(target):
            raise RuntimeError("this writer fails too")
    assert contents(target) == ("old", "old")
    assert sorted(os.listdir(tmp_path)) == ["out", "reached-old-moved"]


_WRITE_FILE = _PRELUDE + textwrap.dedent("""
    with files.atomic_file(sys.argv[1]) as tmp:
        open(tmp, "w").write(sys.argv[2])
""")


def test_a_file_write_killed_before_its_rename_keeps_the_old_file(tmp_path):
    target = tmp_path / "model.keras"
    target.write_text("old")
    kill_at("staged", _WRITE_FILE, target, "new", tmp_path=tmp_path)
    (left,) = [n for n in os.listdir(tmp_path) if n.startswith(".tmp-")]
    assert target.read_text() == "old"
    with atomic_file(str(tmp_path / "model-x.keras")) as tmp:  # Another target's writer.
        open(tmp, "w").write("x")
    assert left in os.listdir(tmp_path)
    with atomic_file(str(target)) as tmp:  # The next writer of this file removes it.
        open(tmp, "w").write("newer")
    assert target.read_text() == "newer"
    assert sorted(os.listdir(tmp_path)) == ["model-x.keras", "model.keras", "reached-staged"]


def test_a_live_writers_staging_is_never_touched(tmp_path):
    target = str(tmp_path / "out")
    fill(target, "old")
    marker = str(tmp_path / "reached")
    writer = writer_harness.start(_REPLACE, target, "new", "exchange", stop="staged",
                                  marker=marker, bare=True)
    try:
        writer_harness.wait_paused(marker, writer)
        (live,) = [n for n in os.listdir(tmp_path) if n.startswith(".tmp-out-")]
        assert recover(target)
        with staged_dir(target) as tmp:  # Another writer of the same target.
            fill(tmp, "mine")
        assert live in os.listdir(tmp_path)
        assert contents(os.path.join(tmp_path, live, "new")) == ("new", "new")
    finally:
        writer.kill()
        writer.wait()


def test_a_reused_pid_is_a_dead_writer(tmp_path):
    # This test's parent runs, but not since the start time this name records.
    start = staging.process_start(os.getppid())
    name = (f"{staging.owner_prefix('.tmp-', 'out')}pid{os.getppid()}.{start + 1}-"
            f"{staging.host_name()}-abc")
    live = (f"{staging.owner_prefix('.tmp-', 'out')}pid{os.getppid()}.{start}-"
            f"{staging.host_name()}-def")
    os.makedirs(tmp_path / name)
    os.makedirs(tmp_path / live)
    assert staging.stale_entries(str(tmp_path), ".tmp-", "out") == [str(tmp_path / name)]


# Claims argv[2] versions, then holds them (runs) until its stdin closes.
_CLAIM = _PRELUDE + textwrap.dedent("""
    claimed = [os.path.basename(files.claim_numbered(sys.argv[1], ".tmp-export-", str.isdigit))
               for _ in range(int(sys.argv[2]))]
    print(" ".join(claimed), flush=True)
    sys.stdin.read()
""")


def test_two_processes_claiming_versions_at_once_get_different_ones(tmp_path):
    base = str(tmp_path / "exports" / "name")
    os.makedirs(os.path.join(base, "3"))
    writers = [subprocess.Popen(writer_harness.command(_CLAIM, base, "15", bare=True),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
               for _ in range(2)]
    # A dead writer's claims are free again: both are kept running until both are done.
    claimed = [int(n) for w in writers for n in w.stdout.readline().split()]
    for w in writers:
        w.communicate("")
    assert all(w.returncode == 0 for w in writers)
    assert sorted(claimed) == list(range(4, 34))  # 30 claims, none twice.
    # Their writers are gone: the next claim takes 4 again (no folder was made).
    assert files.claim_numbered(base, ".tmp-export-", str.isdigit) == os.path.join(
        os.path.realpath(base), "4")


_REPLACE_LOOP = _PRELUDE + textwrap.dedent("""
    import time
    for generation in range(int(sys.argv[2])):
        with files.staged_dir(sys.argv[1]) as tmp:
            for name in ("a.txt", "b.txt"):
                open(os.path.join(tmp, name), "w").write(str(generation))
        time.sleep(0.002)  # A writer that also does other work: readers get between swaps.
""")


@pytest.mark.slow  # Timing: it needs a reader that runs between a writer's swaps.
def test_a_reader_during_replacements_sees_one_whole_version(tmp_path):
    target = str(tmp_path / "out")
    fill(target, "start")
    writer = subprocess.Popen(writer_harness.command(_REPLACE_LOOP, target, "300", bare=True))
    seen, busy = [], 0

    def read():
        first = open(os.path.join(target, "a.txt")).read()
        time.sleep(0.001)  # Widens the window between the two files.
        return first, open(os.path.join(target, "b.txt")).read()

    while writer.poll() is None:
        try:  # Either one whole version or EBUSY, never a mix.
            seen.append(read_committed(target, read, attempts=50))
        except OSError as error:
            assert error.errno == errno.EBUSY and "another process writes it" in str(error)
            busy += 1
    writer.wait()
    assert writer.returncode == 0 and len(seen) > 10, (len(seen), busy)
    assert all(a == b for a, b in seen), [pair for pair in seen if pair[0] != pair[1]][:3]
    assert len({a for a, _ in seen}) > 1  # The reader did run during replacements.
    assert read_committed(target, read) == ("299", "299")  # The last version, once it is done.


def test_a_reader_sees_the_folders_own_errors(tmp_path):
    fill(str(tmp_path / "out"), "x")
    os.remove(tmp_path / "out" / "b.txt")
    with pytest.raises(FileNotFoundError, match="b.txt"):
        read_committed(str(tmp_path / "out"),
                       lambda: contents(str(tmp_path / "out")))


def test_names_of_230_and_more_characters_get_a_staging_name_that_fits(tmp_path):
    name = "m" * 240
    with staged_dir(str(tmp_path / name)) as tmp:
        fill(tmp, "long")
        (entry,) = [n for n in os.listdir(tmp_path) if n != name]
        assert len(entry.encode()) <= 255
    assert contents(str(tmp_path / name)) == ("long", "long")
    with atomic_file(str(tmp_path / ("k" * 240 + ".keras"))) as tmp:
        assert len(os.path.basename(tmp).encode()) <= 255 and tmp.endswith(".keras")
    # Two long names that start alike have staging names of their own.
    assert (staging.owner_prefix(".tmp-", "a" * 250 + "1")
            != staging.owner_prefix(".tmp-", "a" * 250 + "2"))


def test_a_version_committed_meanwhile_is_kept_without_replace(tmp_path):
    target = str(tmp_path / "1")
    with pytest.raises(FileExistsError, match="another process"):
        with staged_dir(target, replace=False) as tmp:
            fill(tmp, "mine")
            fill(target, "theirs")  # Committed by another writer while this one wrote.
    assert contents(target) == ("theirs", "theirs")
    assert os.listdir(tmp_path) == ["1"]


def test_the_lock_serializes_commits(tmp_path):
    order = []

    def second():
        with files.locked(str(tmp_path)):
            order.append("second")

    with files.locked(str(tmp_path)):
        thread = threading.Thread(target=second)
        thread.start()
        time.sleep(0.2)
        order.append("first")
    thread.join(5)
    assert order == ["first", "second"]


_HOLD_LOCK = _PRELUDE + textwrap.dedent("""
    with files.locked(sys.argv[1]):
        print("locked", flush=True)
        sys.stdin.read()
""")


def test_a_lock_held_too_long_is_a_timeout_naming_its_holder(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(files, "LOCK_WAIT_SECONDS", 0.3)
    holder = subprocess.Popen(writer_harness.command(_HOLD_LOCK, tmp_path, bare=True),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "locked\n"
    with caplog.at_level("WARNING", "keras_bert.files"):
        with pytest.raises(TimeoutError, match=rf"lock on {re.escape(str(tmp_path))} is still "
                                               rf"held by process {holder.pid} \(.*writer_harness"
                                               rf".*If that process hangs, stop it"):
            with files.locked(str(tmp_path)):
                pass
    assert f"Waiting up to 0.3 s for the lock on {tmp_path}, held by process {holder.pid}" \
        in caplog.text
    holder.communicate("")
    with files.locked(str(tmp_path)):  # Free again once its holder let go.
        pass
