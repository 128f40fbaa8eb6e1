"""Staging folders: where a model directory, conversion or export is written before
the rename that makes it visible, and the cleanup of those a killed process left.

A staging folder's name carries its writer's PID and host,
`{prefix}[{label}-]pid{PID}-{HOST}-{random}`. Making a new one first removes the
folders of the same prefix in the same parent whose writer, on this host,
is no longer running (a SIGKILL skips every `finally`). Folders of live
processes, of other hosts, or without a PID in their name are left alone.
`keras_bert.files.atomic_file` names its temporary files the same way
(`.tmp-NAME-pidN-HOST-RANDOM.EXT`), and `remove_stale(..., files=True)`
removes those of dead writers too.
"""

import os
import re
import shutil
import socket
import tempfile


def host_name():
    """This machine's name as staging names carry it (letters and digits only)."""
    return re.sub(r"[^A-Za-z0-9]", "", socket.gethostname())[:32]


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # Another user's process.
        return True
    return True


def stale_entries(parent, prefix):
    """The `prefix...pidN-HOST-...` entries of `parent` whose process N, on this
    host, has ended (links excluded): paths, sorted."""
    pattern = re.compile(rf"{re.escape(prefix)}(?:.*-)?pid(\d+)-([A-Za-z0-9]*)-[^-]+$")
    try:
        names = os.listdir(parent)
    except OSError:
        return []
    host = host_name()
    stale = []
    for name in sorted(names):
        match = pattern.match(name)
        if not match or match.group(2) != host or int(match.group(1)) == os.getpid():
            continue
        path = os.path.join(parent, name)
        if not _alive(int(match.group(1))) and not os.path.islink(path):
            stale.append(path)
    return stale


def remove_stale(parent, prefix, files=False):
    """Removes `prefix...pidN-HOST-...` folders in `parent` whose process N has ended.

    Args:
        parent: str, the folder to look in.
        prefix: str, the staging names' prefix.
        files: bool, also remove files of that name (`atomic_file`'s).

    Returns:
        list of str, the folders removed.
    """
    removed = []
    for path in stale_entries(parent, prefix):
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        elif files and os.path.isfile(path):
            os.remove(path)
            removed.append(path)
    return removed


def make_staging_dir(parent, prefix, label=None):
    """A new staging folder in `parent` (after removing dead writers' ones).

    Args:
        parent: str, the folder the result will be renamed into.
        prefix: str, the kind of staging folder, e.g. ".tmp-export-".
        label: str or None, e.g. the name of the folder being written,
            for people looking at `parent`.

    Returns:
        str, the path of the new, empty folder (mode 0700, as mkdtemp makes it).
    """
    remove_stale(parent, prefix)
    label = f"{label}-" if label else ""
    return tempfile.mkdtemp(prefix=f"{prefix}{label}pid{os.getpid()}-{host_name()}-", dir=parent)
