"""What keras_bert writes and deletes: one rule for every writer.

1. A writer deletes only what it can prove it wrote: the entries a `Kind`
   lists, the shard names its own metadata lists, and its own staging
   entries (`keras_bert.staging`).
2. It writes into a folder only if the folder is missing, empty, or an
   artifact of the same `Kind`, recognized by its files; anything else is
   refused (`OutputError`), naming the folder and the way out.
3. Inputs are never deleted or written over: an output that is, or
   contains, an input is refused, and so is an existing output inside an
   input folder.
4. One commit protocol. A new version is written into a staging entry
   beside its target, named for this writer and this target, and committed
   in one atomic step: a file is `os.replace`d (`atomic_file`); a folder is
   swapped with renameat2 RENAME_EXCHANGE (`staged_dir`), or where the
   system cannot, by two renames with the old version parked in the staging
   folder. `recover` touches only the target's staging entries whose writer
   is provably gone, putting back a parked old version. Short steps that
   must not interleave hold a lock on the parent folder (`locked`); readers
   load one committed snapshot (`read_committed`). Each step is named
   (`keras_bert.steps`) so that tests can SIGKILL a writer there.
5. Symbolic links are followed: the real target is replaced, never the link.
6. Remote paths (`gs://`, `ram://`, ...) have no atomic rename: folders are
   committed by the object-store protocol of `keras_bert.storage` (marker
   written last), files by one upload; no locks there. An unregistered
   scheme is refused before any work (`check_writable`).

Example:
>>> kind = Kind("notes folder", required=("notes.json",), allowed=("notes.json",))
>>> path = prepare_output_dir("out/notes", kind)  # refuses a folder of something else
>>> with staged_dir(path) as tmp:                 # the old out/notes survives any error
...     write_text_atomic(os.path.join(tmp, "notes.json"), "{}")
"""

import contextlib
import ctypes
import dataclasses
import errno
import fcntl
import fnmatch
import logging
import os
import re
import shutil
import tempfile
import time

from keras_bert import steps, storage
from keras_bert.staging import (
    claimed_labels,
    make_staging_dir,
    make_staging_file,
    remove_stale,
    stale_entries,
)

logger = logging.getLogger("keras_bert.files")
# The way out that every refusal names.
WAY_OUT = "choose a new or empty folder, or remove it yourself"


class OutputError(ValueError):
    """An output keras_bert refuses to write: it would delete or overwrite
    something keras_bert did not write (or an input)."""


@dataclasses.dataclass(frozen=True)
class Kind:
    """A kind of folder keras_bert writes, recognized by its files.

    Args:
        name: str, for messages ("keras_bert model directory").
        required: tuple of names that must all be present.
        allowed: tuple of names or glob patterns that may be present (the
            required ones included), or None for anything: replacing a folder
            with any other entry would delete it, so it is not recognized.
        check: optional callable(path) -> bool, a further test.
    """

    name: str
    required: tuple = ()
    allowed: tuple = None
    check: object = None

    def strangers(self, path):
        """The entries of `path` this kind does not account for (sorted)."""
        if self.allowed is None:
            return []
        return sorted(name for name in storage.listdir(path) if name != storage.MARKER
                      and not any(fnmatch.fnmatchcase(name, p) for p in self.allowed))

    def recognizes(self, path):
        """True if the folder `path` is an artifact of this kind."""
        if not all(storage.exists(storage.join(path, name)) for name in self.required):
            return False
        if self.strangers(path):
            return False
        return self.check is None or bool(self.check(path))


def real_path(path):
    """`path` absolute with every symbolic link resolved; a remote path as given,
    less a trailing "/"."""
    if storage.is_remote(path):
        return os.fspath(path).rstrip("/")
    return os.path.realpath(os.path.abspath(os.fspath(path)))


def _within(path, root):
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def check_not_input(output, inputs, flag="the output"):
    """Raises OutputError if writing `output` (named `flag` in the message) could
    clobber one of `inputs` (None entries skipped): an output that is or
    contains an input, or an existing output inside an input folder."""
    out = real_path(output)
    for item in inputs:
        if item is None:
            continue
        source = real_path(item)
        if _within(source, out):
            what = "is" if source == out else "contains"
            raise OutputError(
                f"{flag} {output} {what} the input {item}: keras_bert never writes over its "
                f"inputs. Choose another output path.")
        if _within(out, source) and storage.lexists(out):
            raise OutputError(
                f"{flag} {output} is inside the input {item}: writing it would change the "
                f"input. Choose an output outside {item}.")


def check_writable(path, flag="The output"):
    """Raises OutputError unless `path` can be created or replaced: its nearest
    existing parent must be a folder this process may write in (a remote path:
    a registered file system). Nothing is written."""
    path = os.fspath(path)
    if storage.is_remote(path):
        storage.check_filesystem(path, flag=flag)
        return
    parent = os.path.dirname(real_path(path))
    while not os.path.lexists(parent) and os.path.dirname(parent) != parent:
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise OutputError(f"{flag} {path} cannot be created: {parent} is a file, not a "
                          f"folder. Choose another path.")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{flag} {path} cannot be written: no write permission in {parent}. "
                          f"Choose another path.")


def _sample(names, count=5):
    return ", ".join(names[:count]) + (f" and {len(names) - count} more" if len(names) > count
                                       else "")


def prepare_output_dir(path, kind, overwrite=True, inputs=(), overwrite_flag="--overwrite"):
    """Checks that the folder `path` may be (re)written; returns its real path.

    Nothing is written. Call it before any long work, so that a refused
    output fails at once.

    Args:
        path: str, the output folder.
        kind: `Kind`, what the folder will hold.
        overwrite: bool, whether an existing artifact of the same kind may
            be replaced (a refusal names `overwrite_flag`).
        inputs: paths the writer reads (see `check_not_input`).
        overwrite_flag: str, the argument that allows replacing.

    Returns:
        str, the absolute path with symbolic links resolved.

    Raises:
        OutputError: `path` is a file, a folder of something else, or
            overlaps an input; FileExistsError: an artifact of the same
            kind is there and `overwrite` is False.
    """
    real = real_path(path)
    check_writable(path)
    check_not_input(path, inputs, flag="The output")
    if storage.exists(real) and not storage.isdir(real):
        raise OutputError(f"The output {path} is a file, not a folder for a {kind.name}: "
                          f"{WAY_OUT}.")
    if storage.isdir(real) and storage.listdir(real):
        if not kind.recognizes(real):
            strangers = kind.strangers(real)
            if strangers and all(storage.exists(storage.join(real, n)) for n in kind.required):
                detail = f"it also holds {_sample(strangers)}, which keras_bert did not write"
            else:
                detail = f"it holds {_sample(storage.listdir(real))}"
            raise OutputError(f"{path} is not a {kind.name} ({detail}); keras_bert only "
                              f"replaces what it wrote: {WAY_OUT}.")
        if not overwrite:
            raise FileExistsError(f"{path} already exists (a {kind.name}). Choose a new "
                                  f"folder, or pass {overwrite_flag} to replace it.")
    return real


#: How long `locked` waits for another process' lock on a folder before it gives up.
LOCK_WAIT_SECONDS = 300


@contextlib.contextmanager
def locked(folder):
    """Holds an exclusive flock on `folder` itself (no lock file is left) for
    the short steps that must not interleave. Remote paths and file systems
    without flock run unlocked. Another process' lock is waited for up to
    `LOCK_WAIT_SECONDS`, then TimeoutError names its holder.
    """
    try:
        handle = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        yield
        return
    try:
        _lock(handle, folder)
        yield
    finally:
        os.close(handle)  # Closing releases the lock.


def _lock(handle, folder):
    deadline = None
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        except OSError:
            return  # No flock on this file system: unlocked.
        if deadline is None:
            deadline = time.monotonic() + LOCK_WAIT_SECONDS
            logger.warning("Waiting up to %s s for the lock on %s, held by %s.",
                           LOCK_WAIT_SECONDS, folder, _lock_holder(handle))
        elif time.monotonic() > deadline:
            raise TimeoutError(
                f"The lock on {folder} is still held by {_lock_holder(handle)} after "
                f"{LOCK_WAIT_SECONDS} s (keras_bert holds it only for a commit's short steps). "
                f"If that process hangs, stop it, then run this again.")
        time.sleep(0.05)


def _lock_holder(handle):
    """Who holds the flock on the open folder `handle`, from /proc/locks."""
    inode = str(os.fstat(handle).st_ino)
    with contextlib.suppress(OSError):
        with open("/proc/locks", encoding="utf-8") as f:
            for fields in map(str.split, f):
                if "FLOCK" in fields and "->" not in fields and \
                        fields[5].rsplit(":", 1)[-1] == inode:
                    with open(f"/proc/{fields[4]}/cmdline", "rb") as command:
                        words = command.read().replace(b"\0", b" ").split()
                    words = b" ".join(words).decode(errors="replace")
                    return f"process {fields[4]} ({words[:100]})"
    return "another process"


_RENAME_EXCHANGE = 2


def _exchange_function():
    """renameat2 from the C library, or None (not Linux, old glibc)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        function = libc.renameat2
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                         ctypes.c_uint]
    return function


_EXCHANGE = _exchange_function()


def exchange(a, b):
    """Swaps the folders `a` and `b` in one atomic step (Linux renameat2
    RENAME_EXCHANGE); returns False where the system cannot (then nothing changed)."""
    if _EXCHANGE is None:
        return False
    at_cwd = -100
    if _EXCHANGE(at_cwd, os.fsencode(a), at_cwd, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False  # This file system (or kernel) cannot exchange.
    raise OSError(code, os.strerror(code), b)


def _replace_dir(new, target, staging):
    """Puts the complete folder `new` at `target`: swapped atomically where the
    system can (the old version goes with the staging folder); elsewhere the
    old `target` is first renamed to `staging/old`, which `recover` puts back
    after a SIGKILL between the two renames.
    """
    if not os.path.lexists(target):
        os.rename(new, target)
        return
    if exchange(new, target):
        return
    old = os.path.join(staging, "old")
    os.rename(target, old)
    steps.reached("old-moved")
    try:
        os.rename(new, target)
    except BaseException:
        os.rename(old, target)
        raise


def recover(target, prefix=".tmp-"):
    """Puts back the old `target` parked by a writer killed between its two
    renames, and removes `target`'s staging folders whose writer is gone. On
    an object store a target cut short is rolled forward (`storage.recover_dir`).

    Returns:
        bool, whether `target` exists (on an object store: is committed).
    """
    target = real_path(target)
    if storage.object_store(target):
        return storage.recover_dir(target, prefix) is not None
    parent, name = os.path.split(target)
    if not os.path.isdir(parent):
        return False
    with locked(parent):
        for staging in stale_entries(parent, prefix, name):
            old = os.path.join(staging, "old")
            if not os.path.lexists(target) and os.path.isdir(old):
                os.rename(old, target)
        remove_stale(parent, prefix, name)
    return os.path.lexists(target)


# Staging folders made ahead for a target (`claim_numbered`), by (target, prefix):
# `staged_dir` writes into the claimed one.
_CLAIMS = {}


def claim_numbered(parent, prefix, is_number):
    """Claims the next free number in `parent` (1 + the largest name that
    `is_number` accepts, taken or claimed by a running writer); returns the
    target path. The claim is a staging folder made under the lock of
    `parent`, so two processes never get one number; `staged_dir(target,
    prefix)` writes into it.
    """
    parent = real_path(parent)
    if storage.is_remote(parent):
        return _next_remote_number(parent, prefix, is_number)
    os.makedirs(parent, exist_ok=True)
    with locked(parent):
        taken = [int(name) for name in os.listdir(parent)
                 if is_number(name) and os.path.isdir(os.path.join(parent, name))]
        taken += [int(label) for label in claimed_labels(parent, prefix) if is_number(label)]
        target = os.path.join(parent, str(max(taken, default=0) + 1))
        _CLAIMS[(target, prefix)] = make_staging_dir(parent, prefix, os.path.basename(target))
    steps.reached("claimed")
    return target


def _next_remote_number(parent, prefix, is_number):
    """`claim_numbered` on an object store: 1 + the largest number committed or
    staged. Nothing is claimed (no lock): of two writers picking one number,
    the second commit refuses or replaces it (`staged_dir`'s `replace`)."""
    storage.makedirs(parent)
    names = storage.listdir(parent)
    staged = re.compile(re.escape(prefix) + r"(?P<label>.*)-[0-9a-f]{8}-pid")
    labels = [match.group("label") for match in map(staged.match, names) if match]
    taken = [int(n) for n in names + labels if is_number(n)]
    return storage.join(parent, str(max(taken, default=0) + 1))


@contextlib.contextmanager
def _staged_remote(target, prefix, replace):
    """`staged_dir` on an object store: a local folder, committed by
    `keras_bert.storage.commit_dir` (marker last)."""
    storage.check_filesystem(target, flag="The output")
    storage.recover_dir(target, prefix, writer=True)
    local = tempfile.mkdtemp(prefix="keras_bert-upload-")
    try:
        new = os.path.join(local, "new")
        os.mkdir(new)
        yield new
        storage.commit_dir(new, target, prefix=prefix, replace=replace)
    finally:
        shutil.rmtree(local, ignore_errors=True)


@contextlib.contextmanager
def staged_dir(target, prefix=".tmp-", replace=True):
    """Yields an empty folder to write; on success it replaces `target` atomically.

    `target`'s abandoned staging folders are recovered first (`recover`). On
    an exception nothing of `target` changes and the staging folder goes.

    Args:
        target: str, the folder to create or replace (links resolved).
        prefix: str, the staging folder's prefix (the kind of writer).
        replace: bool; False refuses (FileExistsError) a `target` that another
            process committed while this one wrote (it is kept).

    Yields:
        str, the folder to write into; for a remote target a local folder,
        committed by the object-store protocol (`keras_bert.storage`).
    """
    target = real_path(target)
    if storage.object_store(target):
        with _staged_remote(target, prefix, replace) as new:
            yield new
        return
    parent, name = os.path.split(target)
    os.makedirs(parent, exist_ok=True)
    staging = _CLAIMS.pop((target, prefix), None)
    if staging is None or not os.path.isdir(staging):
        recover(target, prefix)
        staging = make_staging_dir(parent, prefix, name)
    try:
        new = os.path.join(staging, "new")
        os.mkdir(new)
        yield new
        steps.reached("staged")
        with locked(parent):
            if not replace and os.path.lexists(target):
                raise FileExistsError(f"{target} was written by another process meanwhile; "
                                      f"keras_bert keeps it. Write to a new name.")
            _replace_dir(new, target, staging)
        steps.reached("committed")
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _umask():
    umask = os.umask(0)
    os.umask(umask)
    return umask


def _identity(path):
    status = os.stat(path)
    return status.st_dev, status.st_ino, status.st_ctime_ns


def read_committed(path, read, what="folder", attempts=4):
    """`read()` of the committed folder `path`, retried if a writer replaced it meanwhile.

    The read came from one version if `path` is the same folder (device,
    inode, change time; on an object store, the marker's generation) after
    it as before; else it reads again, up to `attempts` times. A remote
    folder without a valid marker is refused (`storage.IncompleteError`).
    """
    remote = storage.object_store(path)
    for attempt in range(attempts):
        if remote:  # The version is the marker's generation.
            before = _generation(path, what)
            result = read()
            if _generation(path, what) == before:
                return result
            continue
        before = _identity(path) if os.path.isdir(path) else None
        try:
            result = read()
        except (OSError, ValueError):
            if before is None or not os.path.isdir(path) or _identity(path) == before:
                raise  # Not a replacement: the error is the folder's own.
            continue
        if before is None or _identity(path) == before:
            return result
    raise OSError(errno.EBUSY, f"The {what} {path} was replaced {attempts} times while it was "
                  f"read (another process writes it): load it again once that writer is done.")


def _generation(path, what):
    manifest = storage.committed_manifest(path)
    if manifest is None:
        raise storage.incomplete(path, what)
    return manifest["generation"]


def _extension(name):
    """The extension a temporary file for `name` keeps (".keras", ".weights.h5")."""
    return next((e for e in (".weights.h5", ".tar.gz") if name.endswith(e)),
                os.path.splitext(name)[1])


@contextlib.contextmanager
def _atomic_remote(target):
    """`atomic_file` for a remote file: a local temporary, then one upload (an
    object appears whole, so no marker is needed)."""
    storage.check_filesystem(target, flag="The output")
    name = os.path.basename(target)
    extension = _extension(name)
    local = tempfile.mkdtemp(prefix="keras_bert-upload-")
    try:
        tmp = os.path.join(local, "new" + extension)
        open(tmp, "wb").close()
        yield tmp
        storage.makedirs(os.path.dirname(target))
        steps.reached("staged")
        storage.copy_file(tmp, target)
    finally:
        shutil.rmtree(local, ignore_errors=True)


@contextlib.contextmanager
def atomic_file(target):
    """Yields a temporary path beside `target`; on success it replaces `target`.

    The temporary file keeps `target`'s extension (Keras wants ".keras") and
    is `os.replace`d over `target` (a link's target) only when the block ends
    without error: a failed write leaves the previous file. For a remote
    target it is a local file, uploaded at the end.

    >>> with atomic_file("model.keras") as tmp:  # doctest: +SKIP
    ...     model.save(tmp)
    """
    real = real_path(target)
    if storage.is_remote(real):
        with _atomic_remote(real) as tmp:
            yield tmp
        return
    if os.path.isdir(real):
        raise OutputError(f"The output {target} is a folder; give a file name.")
    parent = os.path.dirname(real)
    os.makedirs(parent, exist_ok=True)
    name = os.path.basename(real)
    extension = _extension(name)
    # Dead writers' temporary files of this target (and only of it) go first.
    tmp = make_staging_file(parent, ".tmp-", name, suffix=extension)
    try:
        yield tmp
        os.chmod(tmp, os.stat(real).st_mode & 0o7777 if os.path.exists(real)
                 else 0o666 & ~_umask())
        steps.reached("staged")
        os.replace(tmp, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def save_atomically(save, filepath, overwrite=True, **kwargs):
    """`save(filepath, ...)` through `atomic_file`: a failed save keeps the old file.

    For `keras.Model.save` overrides (Keras writes a `.keras` file in place).
    Other targets (a file object, a legacy `.h5`) go straight to `save`;
    `overwrite=False` refuses an existing file (FileExistsError) instead of
    Keras' interactive prompt.

    >>> class MyModel(keras.Model):                       # doctest: +SKIP
    ...     def save(self, filepath, overwrite=True, **kwargs):
    ...         return save_atomically(super().save, filepath, overwrite, **kwargs)
    """
    if not isinstance(filepath, (str, os.PathLike)) or not os.fspath(filepath).endswith(".keras"):
        return save(filepath, overwrite=overwrite, **kwargs)
    if not overwrite and storage.exists(os.fspath(filepath)):
        raise FileExistsError(f"{os.fspath(filepath)} exists: pass overwrite=True to replace it.")
    with atomic_file(filepath) as tmp:
        return save(tmp, overwrite=True, **kwargs)


def write_text_atomic(path, text):
    """Writes `text` (UTF-8) to `path` through `atomic_file`."""
    with atomic_file(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
    return path


def write_bytes_atomic(path, data):
    """Writes `data` (bytes) to `path`: through `atomic_file` on a local path, by
    the store's own write on a remote one (no rename to stage with)."""
    if storage.is_remote(path):
        storage.write_bytes(path, data)
        return path
    with atomic_file(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)
    return path


def remove_own(directory, names):
    """Removes the entries `names` (the caller's own) of `directory`, and the
    folder if nothing else is left in it. Returns whether `directory` is gone.
    """
    for name in names:  # A link is removed, never followed.
        storage.remove(storage.join(directory, name))
    if storage.is_remote(directory):
        if storage.isdir(directory) and not storage.listdir(directory):
            storage.remove(directory)
        return not storage.exists(directory)
    with contextlib.suppress(OSError):
        os.rmdir(directory)  # Only if empty: a file of the user's keeps it.
    return not os.path.lexists(directory)
