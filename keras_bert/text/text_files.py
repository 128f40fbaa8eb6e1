"""What kind of file a text input is, checked before reading it.

Every reader of user text (vocab.txt, classification CSV/TSV/JSON Lines,
CoNLL, SQuAD JSON, pretraining corpora) expects UTF-8 text. A directory, a
compressed file, a UTF-16 file or a binary file would otherwise be read as
garbage and fail later with a message about something else ("no column
'label'", "unknown tag"), or not fail at all. `check_text_file` and
`check_text_bytes` turn each of those into one line naming the file and
the way out. Only the first bytes are looked at, so a check costs nothing
on large files.
"""

import os

import tensorflow as tf

# Bytes looked at: enough to tell a format, cheap on any file.
SNIFF_BYTES = 64 * 1024

# Magic numbers of the compressed formats people pass by mistake, and the
# command that undoes each.
_COMPRESSED = (
    (b"\x1f\x8b", "gzip", "gunzip"),
    (b"BZh", "bzip2", "bunzip2"),
    (b"\xfd7zXZ\x00", "xz", "unxz"),
    (b"(\xb5/\xfd", "zstd", "unzstd"),
    (b"PK\x03\x04", "zip", "unzip"),
)

# Byte-order marks of the encodings that are not UTF-8; UTF-32 first, as
# its little-endian mark starts with UTF-16's.
_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)


def check_text_bytes(head, path):
    """Raises ValueError when `head` (a file's first bytes) is not UTF-8 text.

    Args:
        head: bytes, the start of the file (`SNIFF_BYTES` are enough).
        path: str, the file, for the message.

    Raises:
        ValueError: a compressed file, a UTF-16/32 byte-order mark, NUL
            bytes (UTF-16 without a mark, or a binary file), or bytes that
            are mostly not UTF-8.
    """
    for magic, name, command in _COMPRESSED:
        if head.startswith(magic):
            raise ValueError(
                f"{path} is {name}-compressed: decompress it ({command} {path}) and pass the "
                f"text file."
            )
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            raise ValueError(
                f"{path} looks like {encoding} (byte-order mark): save it as UTF-8 (e.g. "
                f"iconv -f {encoding} -t UTF-8 {path} > {path}.utf8)."
            )
    if b"\x00" in head:
        # UTF-16 text without a mark has a NUL in every other byte (ASCII).
        even, odd = head[0::2], head[1::2]
        if max(even.count(0), odd.count(0)) > 0.4 * max(len(odd), 1):
            raise ValueError(
                f"{path} looks like UTF-16 (every other byte is NUL): save it as UTF-8 (e.g. "
                f"iconv -f UTF-16 -t UTF-8 {path} > {path}.utf8)."
            )
        raise ValueError(f"{path} is a binary file (it holds NUL bytes), not UTF-8 text.")
    # A few invalid bytes (a Latin-1 accent here and there) are repaired by
    # the readers; a file that is mostly invalid is not text at all. A cut
    # multi-byte character at the end of `head` is not an error.
    text = head.decode("utf-8", errors="replace")
    if len(head) >= 64 and text.count("\ufffd") > 0.3 * len(text):
        raise ValueError(f"{path} is a binary file (its bytes are mostly not UTF-8), not text.")


def check_not_directory(path, what="file"):
    """Raises ValueError when `path` is a directory (a file was expected).

    Args:
        path: str or os.PathLike (any `tf.io.gfile` path).
        what: str, what the file is for ("data file"), for the message.
    """
    if tf.io.gfile.isdir(os.fspath(path)):
        raise ValueError(f"{os.fspath(path)} is a directory: pass a file (the {what} itself), "
                         f"not a folder.")


def check_text_file(path, what="file"):
    """Raises a one-line error unless `path` is an existing UTF-8 text file.

    Args:
        path: str or os.PathLike (any `tf.io.gfile` path).
        what: str, what the file is for ("data file", "corpus file"), for
            the messages.

    Raises:
        FileNotFoundError: `path` does not exist.
        ValueError: `path` is a directory, or see `check_text_bytes`.
    """
    path = os.fspath(path)
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"{what.capitalize()} not found: {path}")
    check_not_directory(path, what)
    with tf.io.gfile.GFile(path, "rb") as f:
        head = f.read(SNIFF_BYTES)
    check_text_bytes(head, path)


def describe_invalid_utf8(data, error):
    """Why `data` (bytes) is not UTF-8, for a message: where, and what it looks like.

    Run `check_text_bytes` first: UTF-16 and binary files are told apart
    there; what fails to decode after it is a legacy 8-bit encoding.

    Args:
        data: bytes that failed to decode.
        error: the `UnicodeDecodeError`.

    Returns:
        str, e.g. "byte 0xe9 on line 6 is not UTF-8; the file looks like
        Latin-1 / Windows-1252 (or another 8-bit encoding)".
    """
    line = data.count(b"\n", 0, error.start) + 1
    return (f"byte 0x{data[error.start]:02x} on line {line} is not UTF-8; the file looks like "
            f"Latin-1 / Windows-1252 (or another 8-bit encoding)")
