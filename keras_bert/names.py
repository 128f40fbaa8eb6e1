"""The one rule for a name read from a file or a store before it becomes a path.

Commit markers, their `replaces` lists, safetensors indexes, archive members,
config fields that name files and model-directory manifests all name files
*inside their own folder*. Whoever can edit such a file (anyone with write
access to a shared bucket, the author of a downloaded checkpoint) must not be
able to make keras_bert read, write or remove anything outside that folder.
So every such name passes `inside_name` before it is joined to a folder.

Standard library only: every layer may import it.

Example:
>>> inside_name("variables/variables.index", source="gs://b/m/.keras_bert_commit.json")
'variables/variables.index'
>>> inside_name("../../etc/passwd", source="m/model.safetensors.index.json")
Traceback (most recent call last):
...
keras_bert.names.DamagedFileError: m/model.safetensors.index.json is damaged: ...
"""

import re

# A scheme ("gs://", "file:") or a drive ("C:"): both make a name absolute.
_ABSOLUTE_PREFIX = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class DamagedFileError(ValueError):
    """A file read by keras_bert names something it may not (outside its folder)."""


def name_problem(name):
    """Why `name` is not a relative name inside its folder ('/'-separated
    parts, none empty, '.' or '..'; no backslash, control character, scheme
    or drive), or None."""
    if not isinstance(name, str):
        return f"{name!r} is not a str"
    if not name:
        return "an empty file name"
    if _CONTROL.search(name):
        return f"{name!r} holds a control character"
    if "\\" in name:
        return f"{name!r} holds a backslash"
    if name.startswith("/"):
        return f"{name!r} is an absolute path"
    if _ABSOLUTE_PREFIX.match(name):
        return f"{name!r} starts with a scheme or a drive"
    parts = name.split("/")
    if ".." in parts:
        return f"{name!r} climbs out of its folder ('..')"
    if any(part in ("", ".") for part in parts):
        return f"{name!r} has an empty or '.' part"
    return None


def inside_name(name, *, source, what="a file name"):
    """`name` itself if it is a relative name inside its folder, else DamagedFileError.

    Args:
        name: the value read from the file (of any type, if damaged).
        source: str, the file (or store entry) it was read from.
        what: str, what the name is for ("a shard"), for the error.
    """
    problem = name_problem(name)
    if problem:
        raise DamagedFileError(
            f"{source} is damaged: {what} {problem}; a name there must be a relative "
            f"name inside its folder (no absolute path, no '..', no scheme or drive, no "
            f"control character). Nothing was read or written through it: restore the "
            f"file from its source or write it again.")
    return name
