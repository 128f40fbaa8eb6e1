"""Remote storage: paths on any file system TensorFlow has registered, and the
commit rule for object stores, where a rename is a copy.

A path with a scheme other than `file://` (`gs://`, `s3://` through a plugin,
`hdfs://`, the tests' `ram://`) is remote (`is_remote`) and goes through
`tf.io.gfile`; TensorFlow is imported only then. `check_filesystem` refuses
an unregistered scheme before any work, naming the extra that registers it.

The object-store protocol (`commit_dir`), for a folder `target`:

1. the new version's files are uploaded into a staging prefix beside the
   target (`keras_bert.staging`), then that prefix's commit marker
   (`MARKER`: names, sizes, sha256 and a generation that grows with time),
   LAST. Steps "remote:uploading", "staged".
2. the target's marker is removed: readers now wait or refuse. "remote:unmarked".
3. files the old marker listed and the new one does not are removed, the
   staged files copied over. "remote:copied".
4. the target's marker is written (a copy of the staged one). "committed".
5. the staging prefix is removed.

A reader trusts a remote folder only if its marker is there and every listed
file has its size (`committed_manifest`); `fetch_dir` also checks digests. A
folder without a valid marker is rolled forward from the newest complete
staged copy once its writer provably ended (`recover_dir`; a live writer's
commit is waited for, boundedly, never finished by another), else refused
(`IncompleteError`). Every name a marker holds passes
`keras_bert.names.inside_name`.

No locks: two writers of one target each commit a whole version; if their
copies interleaved, the digests no longer match the marker and readers
refuse the mix. `object_store` decides which paths follow this protocol
(tests patch it to run it on local paths).
"""

import builtins
import contextlib
import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import tempfile
import time

from keras_bert import staging, steps
from keras_bert.names import inside_name

#: The commit marker of a folder written by the object-store protocol.
MARKER = ".keras_bert_commit.json"
#: How long a reader or writer waits for a live writer's commit (`recover_dir`).
COMMIT_WAIT_SECONDS = 120
# The staging prefixes of this process' running commits (`commit_dir`).
_ACTIVE = set()
logger = logging.getLogger("keras_bert.storage")
# The extras that register a scheme's file system (`check_filesystem`).
_EXTRAS = {
    "gs": "pip install 'bert-keras3[gcs]' (tensorflow-io-gcs-filesystem, which "
          "tensorflow[gcs-filesystem] names)",
    "s3": "pip install tensorflow-io and `import tensorflow_io` before keras_bert",
    "hdfs": "install Hadoop's libhdfs and set HADOOP_HDFS_HOME (TensorFlow's HDFS support)",
}
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


class IncompleteError(OSError):
    """A remote artifact that has no valid commit marker: a write was cut short."""


def scheme(path):
    """The scheme of `path` ("gs", "ram", ...), or "" for a local path."""
    match = _SCHEME.match(os.fspath(path))
    return match.group(1).lower() if match else ""


def is_remote(path):
    """True if `path` names a file system other than the local one (`gs://...`)."""
    return scheme(path) not in ("", "file")


def object_store(path):
    """True if `path` is written by the object-store protocol: a remote path
    (tests patch this to run the protocol on local paths)."""
    return is_remote(path)


def check_filesystem(path, flag="The path"):
    """Raises ValueError if `path`'s scheme has no file system registered in
    TensorFlow, naming the scheme and the way out. Local paths pass without
    importing TensorFlow."""
    name = scheme(path)
    if not is_remote(path):
        return
    import tensorflow as tf

    if name in tf.io.gfile.get_registered_schemes():
        return
    way_out = _EXTRAS.get(name, "install the TensorFlow file system plugin that provides it, "
                                "or use a local path")
    raise ValueError(f"{flag} {os.fspath(path)}: no file system is registered for the scheme "
                     f"'{name}://' in this TensorFlow. Way out: {way_out}.")


def _gfile():
    import tensorflow as tf

    return tf.io.gfile


def join(path, *names):
    """`os.path.join` that keeps a scheme's "//" (a remote path is not normalized)."""
    return os.path.join(os.fspath(path), *names)


# TF's ram:// lists and finds by string prefix: "ram://d/out" exists, and lists
# ".checkpoints", when only "ram://d/out.checkpoints/x" does; and a file written
# or copied again is appended to. Its answers are checked (`_ram_exists`,
# `listdir`) and its files removed before they are written again
# (`open_file`, `copy_file`); real stores (gs://) need neither.


def _ram(path):
    return scheme(path) == "ram"


def _ram_exists(path):
    """A ram:// file, or a folder that holds something or that its parent lists."""
    gfile = _gfile()
    path = os.fspath(path).rstrip("/")
    if not gfile.exists(path):
        return False
    if not gfile.isdir(path) or listdir(path):
        return True
    parent, name = os.path.split(path)
    return not name or parent.endswith(":/") or name in gfile.listdir(parent)


def abspath(path):
    """`os.path.abspath` for a local path; a remote one as given (less a trailing "/")."""
    path = os.fspath(path)
    return path.rstrip("/") if is_remote(path) else os.path.abspath(path)


def normpath(path):
    """`os.path.normpath` for a local path (which would turn "gs://b" into "gs:/b");
    a remote one as given, less a trailing "/"."""
    path = os.fspath(path)
    return path.rstrip("/") if is_remote(path) else os.path.normpath(path)


def _ram_child(folder, name):
    """Whether ram:// lists `name` in `folder` for a real entry, not the tail of
    a sibling's name ("out" lists ".keras" for "out.keras")."""
    gfile = _gfile()
    try:
        if not gfile.stat(join(folder, name)).is_directory:
            return True
    except Exception:  # NotFoundError: nothing starts with that name.
        return False
    return not gfile.exists(os.fspath(folder).rstrip("/") + name)


def exists(path):
    if _ram(path):
        return _ram_exists(path)
    return _gfile().exists(path) if is_remote(path) else os.path.exists(path)


def isdir(path):
    if _ram(path):
        return _ram_exists(path) and _gfile().isdir(path)
    return _gfile().isdir(path) if is_remote(path) else os.path.isdir(path)


def isfile(path):
    """True if `path` exists and is not a folder."""
    return exists(path) and not isdir(path)


def lexists(path):
    """`exists`, where a local path also counts when it is a dangling symlink."""
    return exists(path) if is_remote(path) else os.path.lexists(path)


def listdir(path):
    """The names in folder `path` (no trailing "/"), sorted."""
    if is_remote(path):
        gfile = _gfile()
        names = sorted(name.rstrip("/") for name in gfile.listdir(path))
        if _ram(path):
            names = [n for n in names if _ram_child(path, n)]
        return names
    return sorted(os.listdir(path))


def makedirs(path):
    if is_remote(path):
        _gfile().makedirs(path)
    else:
        os.makedirs(path, exist_ok=True)


def size(path):
    return _gfile().stat(path).length if is_remote(path) else os.path.getsize(path)


def open_file(path, mode="r", encoding="utf-8"):
    """`open` for a local path, `tf.io.gfile.GFile` for a remote one (text
    modes read and write UTF-8 either way)."""
    path = os.fspath(path)
    if not is_remote(path):
        return builtins.open(path, mode, encoding=None if "b" in mode else encoding)
    if _ram(path) and "w" in mode and _gfile().exists(path) and not _gfile().isdir(path):
        _gfile().remove(path)  # ram:// appends to a file written again: start anew.
    return _gfile().GFile(path, mode)


def read_bytes(path):
    with open_file(path, "rb") as f:
        return f.read()


def write_bytes(path, data):
    """Writes `data` to `path` in place (one object on an object store)."""
    with open_file(path, "wb") as f:
        f.write(data)


def copy_file(source, target):
    """Copies the file `source` to `target` (either may be remote), overwriting."""
    if is_remote(source) or is_remote(target):
        if _ram(target) and _gfile().exists(target) and not _gfile().isdir(target):
            _gfile().remove(target)  # ram:// appends to a file copied over.
        _gfile().copy(source, target, overwrite=True)
    else:
        shutil.copyfile(source, target)


def remove(path):
    """Removes the file or folder `path` if it is there."""
    if is_remote(path):
        gfile = _gfile()
        if not exists(path):
            return
        if not isdir(path):
            gfile.remove(path)
        elif _ram(path):  # Its rmtree fails on a sibling that shares the name's start.
            for name in listdir(path):
                remove(join(path, name))
            with contextlib.suppress(Exception):
                gfile.remove(path)
        else:
            gfile.rmtree(path)
    elif os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


def _walk_files(folder):
    """The files under the local `folder`, as paths relative to it ("/"-joined), sorted."""
    return sorted(os.path.relpath(os.path.join(root, name), folder).replace(os.sep, "/")
                  for root, _, names in os.walk(folder) for name in names)


def _digest(data):
    return hashlib.sha256(data).hexdigest()


def file_sha256(path, block_bytes=1 << 20):
    """sha256 (hex) of the content of the file `path` (local or remote), read in blocks."""
    digest = hashlib.sha256()
    with open_file(path, "rb") as f:
        for block in iter(lambda: f.read(block_bytes), b""):
            digest.update(block)
    return digest.hexdigest()


def _read_marker(folder):
    """The parsed marker of `folder`, or None if it is missing or cut short;
    DamagedFileError if it names a file outside `folder` (`inside_name`)."""
    path = join(folder, MARKER)
    try:
        manifest = json.loads(read_bytes(path).decode("utf-8"))
    except Exception as error:  # Missing (tf.errors.NotFoundError and kin) or cut short.
        if _io_error(error) or isinstance(error, ValueError):
            return None
        raise
    if not isinstance(manifest, dict) or not isinstance(manifest.get("generation"), str):
        return None
    inside_name(manifest["generation"], source=path, what="the generation")  # Names a copy.
    entries, replaces = manifest.get("files"), manifest.setdefault("replaces", [])
    if not isinstance(entries, dict) or not isinstance(replaces, list):
        return None
    for name, entry in entries.items():
        inside_name(name, source=path, what="a committed file")
        if not (isinstance(entry, dict) and isinstance(entry.get("size"), int)
                and isinstance(entry.get("sha256"), str)):
            return None
    for name in replaces:
        inside_name(name, source=path, what="a replaced file")
    return manifest


def committed_manifest(folder):
    """The marker of `folder` if it is valid: every file it lists is there with
    its size. None otherwise (missing, cut short, or mixed by two writers)."""
    manifest = _read_marker(folder)
    if manifest is None:
        return None
    for name, entry in manifest["files"].items():
        path = join(folder, name)
        try:
            if size(path) != entry["size"]:
                return None
        except Exception:  # Missing: OSError locally, NotFoundError through gfile.
            return None
    return manifest


def _staging_entries(target, prefix):
    """[(path, manifest or None)] of the staging prefixes of `target` beside it."""
    parent, name = os.path.split(target.rstrip("/"))
    start = staging.owner_prefix(prefix, name)
    try:
        names = listdir(parent)
    except Exception:
        return []
    return [(join(parent, n), committed_manifest(join(parent, n)))
            for n in names if n.startswith(start)]


def writer_gone(path):
    """Whether the writer of the staging prefix `path` provably ended (this
    process out of its `commit_dir`, or a gone process of this host)."""
    match = staging.writer_of(os.path.basename(path))
    ours = match and (match.group("pid"), match.group("host")) == (str(os.getpid()),
                                                                   staging.host_name())
    return path not in _ACTIVE and bool(ours or staging.writer_gone(os.path.basename(path)))


def _describe_writer(path):
    match = staging.writer_of(os.path.basename(path)) or {"pid": "?", "host": "?"}
    return f"process {match['pid']} on host {match['host']} (its staged copy {path})"


def _io_error(error):
    """Whether `error` is a file system's (OSError, or TensorFlow's NotFoundError and kin)."""
    return isinstance(error, OSError) or type(error).__module__.startswith("tensorflow")


def _roll_forward(staged, target, manifest):
    """Steps 3 to 5 of the protocol: `target` becomes the staged version. A
    commit that another process finished meanwhile is a success."""
    try:
        for name in sorted(manifest["replaces"]):
            if name not in manifest["files"]:
                remove(join(target, name))
        for name in sorted(manifest["files"]):
            destination = join(target, name)
            makedirs(os.path.dirname(destination))
            copy_file(join(staged, name), destination)
        steps.reached("remote:copied")
        write_bytes(join(target, MARKER), read_bytes(join(staged, MARKER)))
    except Exception as error:
        done = _io_error(error) and (committed_manifest(target) or {}).get("generation")
        if done != manifest["generation"]:
            raise
    steps.reached("committed")
    remove(staged)


def recover_dir(target, prefix, writer=False):
    """Makes `target` whole from its staging prefixes, as far as they allow.

    A target without a valid marker is rolled forward from the newest
    complete staged copy if its writer provably ended; else this waits for
    that commit up to `COMMIT_WAIT_SECONDS`, then raises IncompleteError
    (with `writer`: returns None, the caller commits its own version). Only
    ended writers' staging is removed.

    Returns:
        the target's manifest (dict), or None if it has no committed version.
    """
    deadline = None
    while True:
        current = committed_manifest(target)
        entries = _staging_entries(target, prefix)
        complete = sorted((m["generation"], path, m) for path, m in entries if m is not None)
        if current is not None or not complete:
            break
        _, path, manifest = complete[-1]
        if writer_gone(path):
            _roll_forward(path, target, manifest)
            current = manifest
            break
        if deadline is None:
            deadline = time.monotonic() + COMMIT_WAIT_SECONDS
            logger.warning("Waiting up to %d s for %s to finish committing %s.",
                           COMMIT_WAIT_SECONDS, _describe_writer(path), target)
        elif time.monotonic() > deadline:
            if writer:
                break
            raise IncompleteError(
                f"{target} is being committed by {_describe_writer(path)}, which may still "
                f"run: keras_bert never finishes a live writer's commit. Read it again once "
                f"that writer is done; if it is gone for good (its machine stopped), write "
                f"{target} again.")
        time.sleep(0.1)
    for path, _ in entries:
        if exists(path) and writer_gone(path):
            remove(path)
    return current


def _upload(local, staged, files, replaces):
    """Step 1: the files, then the staged marker (listing also the files of the
    version it `replaces`). Returns the manifest."""
    entries = {}
    for name in files:
        data = read_bytes(os.path.join(local, name))
        destination = join(staged, name)
        makedirs(os.path.dirname(destination))
        write_bytes(destination, data)
        entries[name] = {"size": len(data), "sha256": _digest(data)}
        if len(entries) == 1:
            steps.reached("remote:uploading")  # Part of the version staged, its marker not yet.
    manifest = {"generation": f"{time.time_ns():020d}-{secrets.token_hex(4)}", "files": entries,
                "replaces": sorted(replaces)}
    write_bytes(join(staged, MARKER), (json.dumps(manifest, indent=1) + "\n").encode("utf-8"))
    return manifest


def commit_dir(local, target, prefix=".tmp-", replace=True):
    """Puts the complete local folder `local` at `target` by the object-store
    protocol (module docstring), as a writer of kind `prefix`. `replace`
    False refuses (FileExistsError) a target committed meanwhile (a check,
    not a lock)."""
    target = os.fspath(target).rstrip("/")
    parent, name = os.path.split(target)
    makedirs(parent)
    staged = join(parent, staging.staging_prefix(prefix, name) + secrets.token_hex(4))
    old = _read_marker(target)
    _ACTIVE.add(staged)
    try:
        try:
            manifest = _upload(local, staged, _walk_files(local), (old or {}).get("files", {}))
        except BaseException:
            remove(staged)  # An incomplete staged copy is never rolled forward.
            raise
        steps.reached("staged")
        if not replace and (old is not None or _read_marker(target) is not None):
            remove(staged)
            raise FileExistsError(f"{target} was written by another process meanwhile; "
                                  f"keras_bert keeps it. Write to a new name.")
        makedirs(target)
        remove(join(target, MARKER))
        steps.reached("remote:unmarked")
        _roll_forward(staged, target, manifest)
    finally:
        _ACTIVE.discard(staged)


def fetch_dir(target, local, what="folder"):
    """Copies the committed version of `target` into the local folder `local`;
    IncompleteError if there is none or a file's sha256 differs from the marker's."""
    manifest = committed_manifest(target)
    if manifest is None:
        raise incomplete(target, what)
    for name, entry in sorted(manifest["files"].items()):
        data = read_bytes(join(target, name))
        if _digest(data) != entry["sha256"]:
            raise IncompleteError(
                f"The {what} {target} does not match its commit marker ({name} differs: two "
                f"writers at once?). Write it again, one writer at a time.")
        destination = os.path.join(local, *name.split("/"))
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        with builtins.open(destination, "wb") as f:
            f.write(data)
    return manifest


def cache_root():
    """Where `local_copy` downloads remote folders: `$KERAS_BERT_CACHE_DIR/remote`,
    else ~/.cache/keras_bert/remote ($XDG_CACHE_HOME honoured)."""
    base = os.environ.get("KERAS_BERT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "keras_bert")
    return os.path.join(base, "remote")


def local_copy(target, what="folder", prefixes=(".tmp-", ".convert-")):
    """A local folder holding the committed version of the remote `target`.

    Downloaded once per version (`fetch_dir`) into `cache_root()`, named for
    the target and its marker's generation (the same path in every process),
    and renamed into place when complete. Each use checks the copy
    (`_copy_problem`) and fetches it again if a file is missing or changed.

    Raises:
        IncompleteError: `target` has no committed version.
        FileNotFoundError: `target` does not exist.
    """
    target = os.fspath(target).rstrip("/")
    check_filesystem(target)
    if not exists(target):
        raise FileNotFoundError(f"The {what} {target} does not exist.")
    manifest = committed_manifest(target)
    for prefix in prefixes:
        manifest = manifest or recover_dir(target, prefix)
    if manifest is None:
        raise incomplete(target, what)
    name = f"{_digest(target.encode('utf-8'))[:16]}-{manifest['generation']}"
    local = os.path.join(cache_root(), name)
    if os.path.isdir(local):
        problem = _copy_problem(local, manifest)
        if problem is None:
            return local
        logger.warning("The local copy %s of %s no longer matches it (%s): fetching it again.",
                       local, target, problem)
    os.makedirs(cache_root(), exist_ok=True)
    partial = tempfile.mkdtemp(prefix=f".{name}-", dir=cache_root())
    try:
        fetched = fetch_dir(target, partial, what)
        if fetched["generation"] != manifest["generation"]:
            raise OSError(f"The {what} {target} was replaced while it was read: load it again "
                          f"once that writer is done.")
        times = {n: os.stat(os.path.join(partial, *n.split("/"))).st_mtime_ns
                 for n in fetched["files"]}
        with builtins.open(os.path.join(partial, MARKER), "w", encoding="utf-8") as f:
            json.dump({**fetched, "source": target, "mtime_ns": times}, f, indent=1)
        os.chmod(partial, 0o755)
        if os.path.isdir(local):  # A damaged copy: set aside, then replaced.
            os.rename(local, partial + "-old")
        os.rename(partial, local)
    except OSError:
        shutil.rmtree(partial, ignore_errors=True)
        if not os.path.isdir(local):  # Another process may have put the same copy there.
            raise
    finally:
        shutil.rmtree(partial + "-old", ignore_errors=True)
    return local


def _copy_problem(local, manifest):
    """Why the local copy `local` no longer matches the marker `manifest`, or
    None: its record differs, a file is missing or resized, or a file whose
    modification time changed has another sha256."""
    try:
        with builtins.open(os.path.join(local, MARKER), encoding="utf-8") as f:
            record = json.load(f)
        times = dict(record["mtime_ns"])
    except (OSError, ValueError, KeyError, TypeError):
        return f"its record {MARKER} is missing or damaged"
    if record.get("files") != manifest["files"]:
        return f"its record {MARKER} lists other files"
    for name, entry in sorted(manifest["files"].items()):
        path = os.path.join(local, *name.split("/"))
        try:
            status = os.stat(path)
        except OSError:
            return f"{name} is missing"
        if status.st_size != entry["size"]:
            return f"{name} has {status.st_size} bytes, not {entry['size']}"
        if status.st_mtime_ns != times.get(name):
            with builtins.open(path, "rb") as f:
                if _digest(f.read()) != entry["sha256"]:
                    return f"{name} was changed"
    return None


@contextlib.contextmanager
def naming_source(folder):
    """Errors of the block that name `folder`, a local copy of a remote folder
    (`local_copy`), name that remote folder too (the user never chose the cache)."""
    try:
        yield
    except (OSError, ValueError) as error:
        try:
            with builtins.open(os.path.join(folder, MARKER), encoding="utf-8") as f:
                source = json.load(f)["source"]
        except (OSError, ValueError, KeyError, TypeError):
            source = None
        inside = os.path.dirname(os.path.abspath(folder)) == os.path.abspath(cache_root())
        if inside and isinstance(source, str) and len(error.args) == 1 \
                and isinstance(error.args[0], str):
            error.args = (error.args[0].replace(folder, source)
                          + f" (read from {folder}, the local copy of {source})",)
        raise


def incomplete(target, what="folder"):
    """The IncompleteError for a folder without a committed version."""
    return IncompleteError(
        f"The {what} {target} is incomplete: it has no commit marker ({MARKER}), so a write "
        f"was interrupted and no complete staged copy is left to finish it. Write it again "
        f"(rerun the step that made it).")
