"""One shard of a pretraining data set, written by its own process or machine.

`create_pretraining_data` writes a whole set in one process (or a pool of
them on one machine). `create_pretraining_shard` writes shard k of N alone,
so N processes on one or many machines (an Indexed Job, a job array) each
write their part into one folder, local or on a bucket:

    OUTPUT/pretraining-0000k-of-0000N.tfrecord   the records (`write_shard`)
    OUTPUT/pretraining-0000k-of-0000N.json       its manifest, committed last
    OUTPUT/vocab.txt, and once all N exist, metadata.json

The N shards hold exactly the records of one shard, for any N
(`pretraining_data.write_shard`).

A shard is done when its manifest (counts, size in bytes, settings'
identity), written after its moved-in TFRecord file, exists and the file has
the manifest's size: a killed writer leaves a shard that reads as missing,
on an object store too. Rerunning a done shard skips it. The writer that
finds every manifest present writes metadata.json; until then
`read_metadata` assembles it from the manifests, or names the missing shards
and the command that writes each.
"""

import dataclasses
import json
import logging
import os
import time

import tensorflow as tf

from keras_bert import steps
from keras_bert.config import check_count
from keras_bert.data import pretraining_data as data
from keras_bert.files import (
    WAY_OUT,
    OutputError,
    check_not_input,
    check_writable,
    locked,
    write_bytes_atomic,
)
from keras_bert.text import text_files

logger = logging.getLogger("keras_bert.data")


def parse_shard(text):
    """`"I/N"` -> `(I, N)`, 0 <= I < N: which shard of how many (0-based).

    Raises:
        ValueError: naming the value and the expected form.
    """
    parts = str(text).split("/")
    try:
        index, count = (int(p) for p in parts) if len(parts) == 2 else (None, None)
    except ValueError:
        index = count = None
    if index is None:
        raise ValueError(f"Expected --shard I/N (shard I of N, 0-based, e.g. 0/4) or "
                         f"'auto'. Received: --shard {text!r}")
    check_shard(index, count)
    return index, count


def check_shard(shard_index, num_shards):
    check_count("num_shards", num_shards)
    if isinstance(shard_index, bool) or not isinstance(shard_index, int) or not (
            0 <= shard_index < num_shards):
        raise ValueError(
            f"Expected shard_index in [0, {num_shards}) (shards are 0-based: the last of "
            f"{num_shards} is {num_shards - 1}/{num_shards}). Received: "
            f"shard {shard_index!r}/{num_shards}")


def _check_output(output_dir, identity, num_shards, vocab_file):
    """Refuses a folder that holds anything but this set's own files."""
    if not tf.io.gfile.exists(output_dir):
        return
    if not tf.io.gfile.isdir(output_dir):
        raise OutputError(f"The output {output_dir} is a file, not a folder for pretraining "
                          f"data: {WAY_OUT}.")
    ours = {data.shard_file_name(i, num_shards) for i in range(num_shards)}
    ours |= {data.part_file_name(i, num_shards) for i in range(num_shards)}
    others, set_found = [], False
    for name in (n.rstrip("/") for n in tf.io.gfile.listdir(output_dir)):
        if name.startswith(".tmp-"):  # Staging entries (ours, or a killed writer's).
            continue
        path = os.path.join(output_dir, name)
        if name == data.VOCAB_FILE:
            if data.vocab_hash(path) != data.vocab_hash(vocab_file):
                raise OutputError(
                    f"{path} is another vocabulary than --vocab-file {vocab_file}: the "
                    f"folder holds data of other settings. {WAY_OUT[0].upper()}{WAY_OUT[1:]}.")
        elif name == data.METADATA_FILE:
            if data._listed_files(output_dir) is None or _identity_of(path) != identity:
                raise OutputError(
                    f"{output_dir} holds pretraining data of other settings, inputs or "
                    f"shard count ({path}); shards of this set would mix with it: {WAY_OUT}.")
            set_found = True
        elif name in ours:
            if name.endswith(".json"):
                part = data.read_part(output_dir, name)
                if part is None or part.get("identity") != identity:
                    raise OutputError(
                        f"{path} is a shard of another data set (other settings, inputs or "
                        f"vocabulary): {WAY_OUT}.")
                set_found = True
        else:
            others.append(name)
    # A user's file (a README) may lie beside the set once the set is there; a
    # pretraining-* name of another set never (it would be taken for a shard).
    strangers = [n for n in others if n.startswith("pretraining-") or not set_found]
    if strangers:
        raise OutputError(
            f"{output_dir} holds {', '.join(sorted(strangers)[:5])}, which is not a shard of "
            f"this data set ({num_shards} shards), and keras_bert only writes beside its own "
            f"shards: {WAY_OUT}.")


def _identity_of(metadata_path):
    return (data._read_format(metadata_path, data.FORMAT) or {}).get("identity")


def _write_json(path, value):
    write_bytes_atomic(path, (json.dumps(value, indent=2) + "\n").encode("utf-8"))


def _is_done(output_dir, part, identity):
    if part is None or part.get("identity") != identity:
        return False
    file = os.path.join(output_dir, part["file"])
    return tf.io.gfile.exists(file) and tf.io.gfile.stat(file).length == part["bytes"]


def _complete_set(output_dir, identity):
    """The metadata of `output_dir` when it is this set, complete, with no manifests."""
    path = os.path.join(output_dir, data.METADATA_FILE)
    if not tf.io.gfile.exists(path) or _identity_of(path) != identity:
        return None
    metadata = data.read_metadata(output_dir, check=False)
    if any("manifest" in s for s in metadata["shards"]):
        return None  # Written shard by shard: each manifest says whether its shard is done.
    for shard in metadata["shards"]:
        file = os.path.join(output_dir, shard["file"])
        if not tf.io.gfile.exists(file) or tf.io.gfile.stat(file).length != shard.get("bytes"):
            return None
    return metadata


def finish_set(output_dir):
    """Writes metadata.json once every shard of `output_dir`'s set is committed.

    Returns:
        `(metadata, missing)`: the metadata dict (None while shards are
        missing) and the missing shard indexes.
    """
    with locked(output_dir):
        parts, num_shards = data.read_parts(output_dir)
        missing = data.missing_shards(output_dir, parts, num_shards)
        if missing:
            return None, missing
        metadata = data.assemble_parts(output_dir)
        path = os.path.join(output_dir, data.METADATA_FILE)
        existing = None
        if tf.io.gfile.exists(path):
            with tf.io.gfile.GFile(path) as f:
                existing = f.read()
        if existing != json.dumps(metadata, indent=2) + "\n":
            _write_json(path, metadata)
        return metadata, []


def create_pretraining_shard(input_files, output_dir, vocab_file, config=None,
                             shard_index=0, num_shards=1, progress=None, command=None):
    """Writes shard `shard_index` of `num_shards` of a pretraining data set.

    The shard holds the records that `create_pretraining_data(...,
    num_shards=num_shards)` writes into the same file. Run it once per
    shard, in any order, on any machines, into one `output_dir`.

    Args:
        input_files, vocab_file, config, progress: as for
            `create_pretraining_data`; every shard of a set gets the same ones.
        output_dir: str, missing, empty, or holding this set's shards only.
        shard_index, num_shards: int, which shard (0-based) of how many.
        command: optional list of str, the tool's arguments, recorded so that
            a missing shard's error can give the command that writes it.

    Returns:
        dict: `shard` (its manifest: counts, bytes, windows), `skipped`
        (True when it was already done), `seconds`, `missing` (shards of the
        set still missing) and `metadata` (the set's, once complete; else None).

    Example:
    >>> for k in range(3):  # doctest: +SKIP  (three machines, one shard each)
    ...     create_pretraining_shard(["corpus.txt"], "data/", "vocab.txt",
    ...                              shard_index=k, num_shards=3)
    >>> read_metadata("data/")["num_shards"]  # doctest: +SKIP
    3
    """
    started = time.time()
    config = config or data.PretrainingDataConfig()
    check_shard(shard_index, num_shards)
    input_files = [os.fspath(p) for p in input_files]
    if not input_files:
        raise ValueError("No input files given: pass corpus files (one sentence a line).")
    for path in input_files:
        text_files.check_text_file(path, "input corpus file")
    check_not_input(output_dir, input_files, flag="The output")
    check_writable(os.path.join(output_dir, data.METADATA_FILE))
    data.recover_data_dir(output_dir)
    identity = data.data_identity(input_files, vocab_file, config, num_shards)
    _check_output(output_dir, identity, num_shards, vocab_file)
    name = data.shard_file_name(shard_index, num_shards)
    part_name = data.part_file_name(shard_index, num_shards)
    part = data.read_part(output_dir, part_name) if tf.io.gfile.exists(output_dir) else None
    complete = _complete_set(output_dir, identity)
    if complete is not None:
        # The whole set is there (written by one create_pretraining_data run).
        logger.info("%s already holds this data set, complete: skipped.", output_dir)
        entry = complete["shards"][shard_index]
        return {"shard": {**entry, "num_documents": 0}, "skipped": True,
                "seconds": time.time() - started, "missing": [], "metadata": complete}
    skipped = _is_done(output_dir, part, identity)
    if skipped:
        logger.info("%s is already written (%d instances): skipped.", os.path.join(
            output_dir, name), part["num_instances"])
    else:
        tf.io.gfile.makedirs(output_dir)
        vocab_copy = os.path.join(output_dir, data.VOCAB_FILE)
        if not tf.io.gfile.exists(vocab_copy):
            with tf.io.gfile.GFile(vocab_file, "rb") as f:
                write_bytes_atomic(vocab_copy, f.read())
        if part is not None:
            # Replaced (its file is cut short): it never looks done meanwhile,
            # nor does the set.
            metadata_path = os.path.join(output_dir, data.METADATA_FILE)
            if tf.io.gfile.exists(metadata_path):
                tf.io.gfile.remove(metadata_path)
            tf.io.gfile.remove(os.path.join(output_dir, part_name))
        part = _write(input_files, output_dir, vocab_file, config, shard_index, num_shards,
                      progress, identity, command)
    metadata, missing = finish_set(output_dir)
    return {"shard": part, "skipped": skipped, "seconds": time.time() - started,
            "missing": missing, "metadata": metadata}


def _write(input_files, output_dir, vocab_file, config, shard_index, num_shards, progress,
           identity, command):
    """Stages the shard, moves it in, then commits its manifest (last)."""
    total_bytes = data._input_bytes(input_files)
    report = None if progress is None else (lambda n: progress(n, total_bytes))
    staging = data._make_staging(output_dir)
    try:
        stats = data.write_shard(input_files, staging, vocab_file, config, shard_index,
                                 num_shards, report)
        staged = os.path.join(staging, stats["file"])
        stats["bytes"] = tf.io.gfile.stat(staged).length
        steps.reached("shard:staged")
        tf.io.gfile.rename(staged, os.path.join(output_dir, stats["file"]), overwrite=True)
        steps.reached("shard:moved")  # The records in place, no manifest: not done.
        part = {"format": data.PART_FORMAT, "version": data.VERSION, "identity": identity,
                "shard_index": shard_index, "num_shards": num_shards,
                "manifest": data.part_file_name(shard_index, num_shards), **stats,
                "config": dataclasses.asdict(config), "input_files": input_files,
                "command": list(command) if command is not None else None}
        _write_json(os.path.join(output_dir, part["manifest"]), part)
    finally:
        if tf.io.gfile.exists(staging):
            tf.io.gfile.rmtree(staging)
    return part
