"""Staging names: where an artifact is written before the step that commits it,
and how a later writer tells a dead writer's leftovers from a live writer's work.

A staging entry is named for its writer AND its target:

    {prefix}{label}-{tag}-pid{PID}.{START}-{HOST}-{random}[{suffix}]

- `prefix` is the kind of writer (".tmp-", ".tmp-export-", ".convert-", ...);
- `label` is the target's name, shortened with a hash past 255 bytes;
- `tag` is a hash of (prefix, full target name), so that "NAME" and
  "NAME-x" never match each other's entries;
- PID, START (the process' start time, /proc/PID/stat) and HOST say who
  writes it: an entry is abandoned only if that process, on this host, is
  gone (a reused PID has another start time). Entries of live processes,
  of other hosts, or of another form are never touched.
"""

import hashlib
import os
import re
import shutil
import socket
import tempfile

# A name's limit on common file systems (bytes), and what a staging name adds to
# prefix + label + suffix: "-{tag 8}-pid{PID 7}.{START 20}-{HOST 32}-{random 8}".
_NAME_MAX = 255
_OWNER_BYTES = 84


def host_name():
    """This machine's name as staging names carry it (letters and digits only)."""
    return re.sub(r"[^A-Za-z0-9]", "", socket.gethostname())[:32]


def process_start(pid):
    """The start time of process `pid` (clock ticks since boot), or None if unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # Field 2 (comm) may hold spaces and parentheses: split after its last ")".
    fields = stat[stat.rfind(b")") + 2:].split()
    return int(fields[19]) if len(fields) > 19 else None


def _alive(pid, start):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # Another user's process.
        pass
    if start is None:
        return True
    found = process_start(pid)
    return found is None or found == start  # Another start time: the PID was reused.


def _tag(prefix, label):
    return hashlib.sha256(f"{prefix}\0{label}".encode("utf-8", "surrogateescape")).hexdigest()[:8]


def _bytes(text):
    return len(text.encode("utf-8", "surrogateescape"))


def _short_label(prefix, label, suffix):
    """`label`, cut to fit the staging name in 255 bytes (the cut keeps a hash of
    the whole name, so two long names that start alike stay apart)."""
    room = _NAME_MAX - _OWNER_BYTES - _bytes(prefix) - _bytes(suffix)
    if _bytes(label) <= room:
        return label
    cut = label[:room - 13]
    while _bytes(cut) > room - 13:
        cut = cut[:-1]
    return f"{cut}~{hashlib.sha256(label.encode('utf-8', 'surrogateescape')).hexdigest()[:12]}"


def owner_prefix(prefix, label="", suffix=""):
    """The start of the staging names of `prefix` for the target `label`, up to "pid"."""
    return f"{prefix}{_short_label(prefix, label, suffix)}-{_tag(prefix, label)}-"


def staging_prefix(prefix, label="", suffix=""):
    """The name a new staging entry of this process starts with (then random, suffix)."""
    start = process_start(os.getpid())
    owner = f"pid{os.getpid()}" + (f".{start}" if start is not None else "")
    return f"{owner_prefix(prefix, label, suffix)}{owner}-{host_name()}-"


# Who writes a staging entry: the end of its name (`staging_prefix`, then random).
_OWNER = r"pid(?P<pid>\d+)(?:\.(?P<start>\d+))?-(?P<host>[A-Za-z0-9]*)-[A-Za-z0-9_]+"


def _abandoned(match, host):
    """Whether the writer that a staging name's (pid, start, host) groups name is gone."""
    pid, start, where = match.group("pid", "start", "host")
    if where != host or int(pid) == os.getpid():
        return False
    return not _alive(int(pid), int(start) if start else None)


def writer_of(name):
    """The (pid, start, host) groups of the writer that the staging name `name`
    names (a `re.Match`), or None for a name of another form."""
    return re.search("-" + _OWNER + "$", name)


def writer_gone(name):
    """Whether the writer of the staging entry `name` provably ended: it ran on
    this host and its process (that PID with that start time) no longer runs.
    This process' own entries and other hosts' never count as gone."""
    match = writer_of(name)
    return bool(match) and _abandoned(match, host_name())


def _entries(parent, pattern):
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        return []
    return [(name, match) for name in names for match in [pattern.match(name)] if match]


def stale_entries(parent, prefix, label="", suffix=""):
    """The staging entries of `parent` for (`prefix`, `label`) whose writer, on this
    host, has ended (links and names of another form excluded): paths, sorted."""
    pattern = re.compile(re.escape(owner_prefix(prefix, label, suffix)) + _OWNER
                         + re.escape(suffix) + "$")
    host = host_name()
    return [os.path.join(parent, name) for name, match in _entries(parent, pattern)
            if _abandoned(match, host) and not os.path.islink(os.path.join(parent, name))]


def claimed_labels(parent, prefix):
    """The targets (labels) in `parent` with a staging folder of `prefix` whose
    writer runs (or runs on another host): an export version being written is
    taken, though its folder does not exist yet."""
    pattern = re.compile(re.escape(prefix) + r"(?P<label>.*)-(?P<tag>[0-9a-f]{8})-" + _OWNER
                         + "$")
    host = host_name()
    return sorted({match.group("label") for _, match in _entries(parent, pattern)
                   if match.group("tag") == _tag(prefix, match.group("label"))
                   and not _abandoned(match, host)})


def remove_stale(parent, prefix, label="", suffix="", files=False):
    """Removes the abandoned staging entries of (`prefix`, `label`) in `parent`:
    folders, or with `files` files (`make_staging_file`'s). Returns their paths."""
    removed = []
    for path in stale_entries(parent, prefix, label, suffix):
        if not files and os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
        elif files and os.path.isfile(path):
            os.remove(path)
        else:
            continue
        removed.append(path)
    return removed


def make_staging_dir(parent, prefix, label=""):
    """A new, empty staging folder (mode 0700) in `parent` for the target `label`
    by a writer of kind `prefix` (".tmp-export-"), after removing the abandoned
    ones of that same target only."""
    label = label or ""
    remove_stale(parent, prefix, label)
    return tempfile.mkdtemp(prefix=staging_prefix(prefix, label), dir=parent)


def make_staging_file(parent, prefix, label, suffix=""):
    """A new, empty staging file in `parent` for the target file `label`
    (abandoned ones of that target removed first). Returns its path."""
    remove_stale(parent, prefix, label, suffix, files=True)
    handle, path = tempfile.mkstemp(prefix=staging_prefix(prefix, label, suffix),
                                    suffix=suffix, dir=parent)
    os.close(handle)
    return path
