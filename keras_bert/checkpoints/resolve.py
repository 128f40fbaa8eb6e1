"""Any checkpoint -> a keras_bert model directory, converted once into a cache.

`keras_bert/__init__.py` registers `resolve_source` with `keras_bert.sources`,
so every `from_pretrained(source)` takes, besides a model directory, any
checkpoint `convert.read_checkpoint` reads (fine-tuned heads and their label
names carried over), a Hugging Face Hub id or a name of `hub.KNOWN_NAMES`.

The conversion is written once, by `convert_checkpoint`, to
KERAS_BERT_CACHE/converted/NAME-KEY (default ~/.cache/keras_bert). KEY hashes
the source's real path and the content (sha256) of every file in the source's
folder and its subfolders, hidden ones (".git", ".cache") aside: changed
weights or configs are converted anew, whatever their size and mtime.

Each file is hashed once per version: a sidecar in KERAS_BERT_CACHE/hashes/
keeps its sha256 with its (size, mtime_ns, ctime_ns, inode, device). The
kernel sets ctime on every write, rename and `utime` (what `cp -p` uses to put
the old mtime back), so a file whose stat still matches holds the content that
was hashed. A repeated load costs one stat per file.

Each entry is validated before use against KERAS_BERT_CACHE/manifests/
NAME-KEY.json (written after the conversion is in place: its files' sizes and
sha256s); a missing, changed or unreadable file, or no manifest, means the
entry is converted again.
"""

import contextlib
import hashlib
import json
import logging
import os
import re
import shutil

from keras_bert import sources, storage
from keras_bert.checkpoints.convert import convert_checkpoint
from keras_bert.checkpoints.hub import KNOWN_NAMES, locate_checkpoint
from keras_bert.checkpoints.source import CheckpointError
from keras_bert.files import OutputError, write_text_atomic

CACHE_ENV = "KERAS_BERT_CACHE"
# Bumped when the converter writes model directories differently, so older
# cached conversions are not reused.
CACHE_VERSION = 4
_BLOCK_BYTES = 1 << 20
logger = logging.getLogger(__name__)


class CacheError(CheckpointError):
    """The conversion cache cannot be used (not the source's nor the output's fault)."""


def cache_root():
    """KERAS_BERT_CACHE, else $XDG_CACHE_HOME/keras_bert (~/.cache/keras_bert)."""
    if os.environ.get(CACHE_ENV):
        return os.path.abspath(os.path.expanduser(os.environ[CACHE_ENV]))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "keras_bert")


def _stat_key(path):
    stat = os.stat(path)
    return [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino, stat.st_dev]


def file_sha256(path):
    """sha256 (hex) of a file's content, streamed; kept in a sidecar (see the module
    docstring) trusted only while the file's stat is the one it was hashed at."""
    real = os.path.realpath(path)
    sidecar = os.path.join(cache_root(), "hashes",
                           hashlib.sha256(real.encode("utf-8")).hexdigest()[:40] + ".json")
    stat = _stat_key(real)
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        with open(sidecar, encoding="utf-8") as f:
            saved = json.load(f)
        if saved["path"] == real and saved["stat"] == stat:
            return saved["sha256"]
    value = storage.file_sha256(real, _BLOCK_BYTES)
    if _stat_key(real) == stat:  # Not written to while it was read.
        with contextlib.suppress(OSError):
            write_text_atomic(sidecar, json.dumps(
                {"path": real, "stat": stat, "sha256": value}))
    return value


def source_files(path):
    """The files a conversion of `path` may read: (relative name, real path), sorted.

    Every file in the checkpoint's folder and its subfolders, names starting
    with "." aside; links are followed (the Hub cache links its files to blobs).
    """
    path = os.path.realpath(path)
    folder = path if os.path.isdir(path) else os.path.dirname(path)
    found = []
    for root, dirs, files in os.walk(folder, followlinks=True):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in files:
            entry = os.path.join(root, name)
            if not name.startswith(".") and os.path.isfile(entry):
                found.append((os.path.relpath(entry, folder).replace(os.sep, "/"), entry))
    return sorted(found)


def cache_key(path):
    """sha256 (hex) of a checkpoint's real path and the content of every file in `source_files`."""
    digest = hashlib.sha256(f"v{CACHE_VERSION}|{os.path.realpath(path)}|".encode("utf-8"))
    for name, entry in source_files(path):
        digest.update(f"{name}|{os.path.getsize(entry)}|{file_sha256(entry)}|".encode("utf-8"))
    return digest.hexdigest()


def manifest_path(target):
    """Where the manifest of the cache entry `target` is (outside the entry: a
    model directory holds only its own files)."""
    return os.path.join(cache_root(), "manifests", os.path.basename(target) + ".json")


def _manifest(target):
    """{relative name: [size, sha256]} of the files of a cache entry."""
    return {name: [os.path.getsize(entry), file_sha256(entry)]
            for name, entry in source_files(target)}


def _entry_problem(target):
    """Why the cache entry `target` cannot be used as it is, or None when it can."""
    try:
        with open(manifest_path(target), encoding="utf-8") as f:
            expected = json.load(f)
    except FileNotFoundError:
        return "it has no manifest (its writer was stopped before it)"
    except (OSError, ValueError) as e:
        return f"its manifest is damaged ({e})"
    try:
        found = _manifest(target)
    except OSError as e:
        return f"a file cannot be read ({e})"
    for name in sorted(set(expected) | set(found)):
        if expected.get(name) != found.get(name):
            what = "is missing" if name not in found else (
                "was not written by the conversion" if name not in expected else "changed")
            return f"{name} {what}"
    return None


def _cache_error(error):
    return CacheError(
        f"The conversion cache {cache_root()} cannot be used: {error}. Point {CACHE_ENV} at a "
        f"writable folder (the cache of converted checkpoints), or convert once with "
        f"tools/convert_checkpoint.py SOURCE MODEL_DIR and load MODEL_DIR.")


def converted_dir(source, local):
    """Where the conversion of `source` (found at `local`) is cached."""
    name = KNOWN_NAMES.get(source, source)
    if os.path.exists(source) or os.path.exists(source + ".index"):
        name = os.path.basename(os.path.normpath(local))
    slug = re.sub(r"[^\w.-]+", "--", name).strip("-.") or "checkpoint"
    return os.path.join(cache_root(), "converted", f"{slug}-{cache_key(local)[:16]}")


def resolve_source(source):
    """The model directory of `source`, converting it into the cache if needed.

    Args:
        source: a keras_bert model directory, a Hugging Face or Google
            checkpoint folder, a Hub id, or a name of `KNOWN_NAMES`.

    Returns:
        str, the path of a keras_bert model directory.

    Raises:
        FileNotFoundError: the source was not found (the message says where
            it was looked for).
        CheckpointError: the checkpoint is not BERT, or is damaged.
    """
    source = os.fspath(source)
    if sources.is_model_dir(source):
        return source
    local = locate_checkpoint(source)
    target = converted_dir(source, local)
    if sources.is_model_dir(target):
        problem = _entry_problem(target)
        if problem is None:
            return target
        logger.warning("The cached conversion %s is converted again: %s.", target, problem)
    elif os.path.lexists(target) and os.path.isfile(manifest_path(target)):
        # A damaged entry that our manifest proves keras_bert wrote.
        logger.warning("The cached conversion %s is damaged; converting again.", target)
        shutil.rmtree(target, ignore_errors=True)
    logger.info("Converting %s into %s (once; later loads read the cache)", local, target)
    try:
        # Before the conversion's work: an unwritable cache fails at once.
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            os.remove(manifest_path(target))  # The entry it described is replaced.
        convert_checkpoint(local, target, log=logger.info, overwrite=True)
        write_text_atomic(manifest_path(target), json.dumps(_manifest(target), indent=1))
    except OutputError as e:
        raise _cache_error(e) from e
    except OSError as e:
        # A write into the cache that failed (no permission, read-only, full
        # disk); an error reading the source is the source's.
        if not str(getattr(e, "filename", None) or "").startswith(cache_root()):
            raise
        raise _cache_error(f"{e.strerror or type(e).__name__}: {e.filename}") from e
    except CheckpointError as e:
        if sources.is_model_dir(target) and _entry_problem(target) is None:
            return target  # Another process converted it meanwhile.
        if os.path.isdir(local) and "Cannot tell the format" in str(e):
            raise CheckpointError(
                f"{local} is not a keras_bert model directory (config.json + "
                f"model.weights.h5), nor a Hugging Face (config.json), Google "
                f"(bert_config.json), keras-hub preset (config.json naming "
                f"keras_hub>BertBackbone), TF Hub SavedModel (saved_model.pb) or "
                f"Model Garden TF2 checkpoint folder. {e}") from e
        raise
    return target
