"""What kind of file a text input is, checked before reading it.

Every reader of user text (vocab.txt, classification CSV/TSV/JSON Lines,
CoNLL, SQuAD JSON, pretraining corpora) expects UTF-8 text. A directory, a
compressed file, a UTF-16 file or a binary file would otherwise be read as
garbage and fail later with a message about something else ("no column
'label'", "unknown tag"), or not fail at all. `read_text_file` (the one reader: the file is opened
once, so a pipe works), `check_text_file` (for readers that read a file
again: a pipe is refused as not seekable) and `check_text_bytes` turn each
of those into one line naming the file and the way out; `argument_text`
does the same for a command-line text.
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
        # UTF-16 text without a mark has a NUL in every other byte (ASCII), in
        # one half only: a file of NULs is binary.
        even, odd = head[0::2], head[1::2]
        if (even.count(0) > 0.4 * max(len(odd), 1)) != (odd.count(0) > 0.4 * max(len(odd), 1)):
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


def check_exists(path, what="file"):
    """Raises FileNotFoundError or ValueError unless `path` is there and not a folder;
    opens nothing (a pipe stays unread)."""
    if not tf.io.gfile.exists(os.fspath(path)):
        raise FileNotFoundError(f"{what.capitalize()} not found: {os.fspath(path)}")
    check_not_directory(path, what)


def _open(path, what):
    path = os.fspath(path)
    check_exists(path, what)
    # Locally the builtin open: TensorFlow's reads seek, which a pipe refuses.
    return tf.io.gfile.GFile(path, "rb") if "://" in path else open(path, "rb")


def read_text_file(path, what="file"):
    """The bytes of a UTF-8 text file (any `tf.io.gfile` path), less a byte-order mark,
    read once so a pipe or `<(zcat ...)` works: the one reader of a user's text input.
    `what` ("data file") names it in the errors of `check_exists` and `check_text_bytes`."""
    with _open(path, what) as f:
        data = f.read()
    check_text_bytes(data[:SNIFF_BYTES], os.fspath(path))
    return data[3:] if data.startswith(b"\xef\xbb\xbf") else data


def check_text_file(path, what="file"):
    """Raises a one-line error unless `path` is an existing UTF-8 text file that
    can be read again (its reader reads it more than once, or streams it).

    Args:
        path: str or os.PathLike (any `tf.io.gfile` path).
        what: str, what the file is for ("corpus file", "input file"), for
            the messages.

    Raises:
        FileNotFoundError: `path` does not exist.
        ValueError: `path` is a directory or a pipe, or see `check_text_bytes`.
    """
    with _open(path, what) as f:
        if not f.seekable():
            raise ValueError(
                f"{os.fspath(path)} is a pipe: the {what} needs a seekable file (it is read "
                f"more than once). Write it to a file first (e.g. zcat corpus.gz > "
                f"corpus.txt) and pass that.")
        head = f.read(SNIFF_BYTES)
    check_text_bytes(head, os.fspath(path))


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
    return (f"byte 0x{data[error.start]:02x} on line {line} is not UTF-8; it looks like "
            f"Latin-1 / Windows-1252 (or another 8-bit encoding)")


def argument_text(argument, where):
    """A sys.argv text as str, or ValueError naming `where` ("text 2") when its bytes are
    not UTF-8 (Python keeps them as lone surrogates, PEP 383, which TensorFlow refuses)."""
    data = os.fsencode(argument)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(
            f"{where} ({data!r}): {describe_invalid_utf8(data, e)}. Pass UTF-8 text: set the "
            f"terminal to UTF-8, or convert the text (iconv -f LATIN1 -t UTF-8).") from None
