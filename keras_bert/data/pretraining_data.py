"""Corpus files -> sharded TFRecords of BERT pretraining instances.

Follows google-research/bert `create_pretraining_data.py` (written anew):
documents are cut into sentence-pair instances `[CLS] A [SEP] B [SEP]` for
masked LM and next-sentence prediction. Differences, and why:

- Streaming. Documents are read a window of `document_pool_size` at a time;
  NotNext segments and the shuffle stay within the window (memory stays flat
  as the corpus grows; training shuffles again, across files).
- The same records for any split. Window w is cut, shuffled and masked with
  `window_seed(seed, w)` alone, and shard k of N holds windows k, k + N, ...:
  N shards hold the records of one, whether written by one process, a pool,
  or N machines apart (`keras_bert.data.pretraining_shards`).
- Balanced next-sentence labels (see `keras_bert.data.instances`).
- Masking. `masking="static"` masks when writing, with the in-graph
  `MaskedLMMasker` that `masking="dynamic"` applies while training; it masks
  `round(masked_lm_prob * n)` of the `n` non-special tokens (the reference
  counts [CLS] and [SEP] in n).
- Truncation is the reference's (`instances.truncate_seq_pair`); `BertPacker`
  then packs the instances a batch at a time.

Output, in `output_dir`:
    pretraining-00000-of-00004.tfrecord ...  tf.train.Example records
    vocab.txt                                the vocabulary used
    metadata.json                            how the records were made

Each record holds (int64 lists, unpadded): `token_ids`, `segment_ids`,
`next_sentence_labels` ([1]: 0 = IsNext, 1 = NotNext) and, for static
masking, `masked_positions` and `masked_ids` (`token_ids` are then already
corrupted). `parse_examples` turns a batch of them back into padded tensors.
"""

import contextlib
import dataclasses
import hashlib
import itertools
import json
import logging
import multiprocessing
import os
import random
import re
import shlex
import shutil
import threading
from queue import Empty

import numpy as np
import tensorflow as tf

from keras_bert import steps, storage
from keras_bert.config import check_count
from keras_bert.data.corpus import read_documents
from keras_bert.data.instances import create_instances_from_document, document_windows
from keras_bert.files import (
    WAY_OUT,
    OutputError,
    check_not_input,
    check_writable,
    locked,
)
from keras_bert.staging import make_staging_dir, staging_prefix, stale_entries
from keras_bert.text import text_files

logger = logging.getLogger("keras_bert.data")

METADATA_FILE = "metadata.json"
VOCAB_FILE = "vocab.txt"
FORMAT = "keras_bert.pretraining_data"
MASKING_MODES = ("static", "dynamic")
# 2: shards hold the corpus' windows round robin (the same records for any split).
VERSION = 2


def vocab_hash(vocabulary):
    """"sha256:<hex>" of the tokens joined by newlines.

    Args:
        vocabulary: list of str, or the path of a vocab.txt (read as
            `keras_bert.text.load_vocabulary` does: lines stripped).
    """
    from keras_bert.text import load_vocabulary

    tokens, _ = load_vocabulary(vocabulary)
    return "sha256:" + hashlib.sha256("\n".join(tokens).encode("utf-8")).hexdigest()


@dataclasses.dataclass
class PretrainingDataConfig:
    """How instances are cut and masked (the flags of the reference script).

    Args:
        max_seq_length: int, longest packed sequence, [CLS] and [SEP]s included.
        max_predictions_per_seq: int, most masked tokens per sequence.
        masked_lm_prob: float, share of tokens masked.
        masking: "static" (masks in the records) or "dynamic" (records hold
            clean ids; training masks every step with `MaskedLMMasker`).
        whole_word_masking: bool, mask all pieces of a word together.
        dupe_factor: int, times each document is cut (with other random
            choices each time).
        short_seq_prob: float, share of instances with a random shorter
            target length (so the model also sees short sequences).
        document_pool_size: int, documents held in memory at once; the
            random "next" documents of NotNext pairs come from this pool.
        lowercase: bool, tokenizer option (True for uncased vocabularies).
        seed: int, seeds every random choice (per window of the corpus:
            `window_seed(seed, window)`, whatever the shards).
    """

    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    masking: str = "static"
    whole_word_masking: bool = False
    dupe_factor: int = 10
    short_seq_prob: float = 0.1
    document_pool_size: int = 1000
    lowercase: bool = True
    seed: int = 12345

    def __post_init__(self):
        def at_least(value, minimum):
            return isinstance(value, int) and not isinstance(value, bool) and value >= minimum

        rules = (  # (field, expected, holds), checked in order.
            ("max_seq_length", "an int >= 5", lambda v: at_least(v, 5)),
            ("max_predictions_per_seq", "an int >= 1", lambda v: at_least(v, 1)),
            ("masked_lm_prob", "in (0, 1]", lambda v: 0 < v <= 1),
            ("masking", f"one of {MASKING_MODES}", lambda v: v in MASKING_MODES),
            ("dupe_factor", "an int >= 1", lambda v: at_least(v, 1)),
            ("short_seq_prob", "in [0, 1]", lambda v: 0 <= v <= 1),
            ("document_pool_size", "an int >= 2 (NotNext pairs need another document)",
             lambda v: at_least(v, 2)),
        )
        for name, expected, holds in rules:
            if not holds(getattr(self, name)):
                raise ValueError(f"Expected {name} to be {expected}. "
                                 f"Received: {name}={getattr(self, name)!r}")


# --- Writing -----------------------------------------------------------------


class _ShardWriter:
    """Tokenizes, cuts, masks and writes the documents of one output shard."""

    def __init__(self, vocab_file, config):
        from keras_bert.text import BertPacker, BertTokenizer, MaskedLMMasker

        self.config = config
        self.tokenizer = BertTokenizer(vocab_file, lowercase=config.lowercase)
        self.start_window(0)
        self.tokenize = tf.function(
            lambda texts: self.tokenizer(texts),
            input_signature=[tf.TensorSpec([None], tf.string)],
            autograph=False,
        )
        # Instances already fit (`truncate_seq_pair`): the packer only adds
        # [CLS] / [SEP] and pads to max_seq_length.
        self.packer = BertPacker(
            cls_token_id=self.tokenizer.cls_token_id,
            sep_token_id=self.tokenizer.sep_token_id,
            pad_token_id=self.tokenizer.pad_token_id,
            sequence_length=config.max_seq_length,
        )
        self.masker = None
        if config.masking == "static":
            self.masker = MaskedLMMasker(
                self.tokenizer.vocabulary,
                mask_rate=config.masked_lm_prob,
                max_predictions_per_seq=config.max_predictions_per_seq,
                whole_word_masking=config.whole_word_masking,
            )
        segment = tf.RaggedTensorSpec([None, None], tf.int32, row_splits_dtype=tf.int64)
        self.pack_and_mask = tf.function(
            self._pack_and_mask,
            input_signature=[segment, segment, tf.TensorSpec([2], tf.int64)],
            autograph=False,
        )

    def start_window(self, window):
        """Resets the random state: a window's instances depend only on the
        seed and the window's index in the corpus (not on shard or process)."""
        self.window_seed = window_seed(self.config.seed, window)
        self.rng = random.Random(self.window_seed)
        self.num_mask_batches = 0

    def tokenize_documents(self, documents, batch_size=2048):
        """Documents of str lines -> documents of id lists (batched, in TF)."""
        lines = [line for document in documents for line in document]
        pieces = []
        for start in range(0, len(lines), batch_size):
            ids = self.tokenize(tf.constant(lines[start:start + batch_size]))
            values = ids.flat_values.numpy()
            splits = ids.row_splits.numpy()
            pieces.extend(values[splits[j]:splits[j + 1]].tolist()
                          for j in range(len(splits) - 1))
        result, position = [], 0
        for document in documents:
            segments = [s for s in pieces[position:position + len(document)] if s]
            position += len(document)
            if segments:
                result.append(segments)
        return result

    def _pack_and_mask(self, tokens_a, tokens_b, seed):
        """[CLS] A [SEP] B [SEP], int32 [batch, max_seq_length], masked when static."""
        packed = self.packer((tokens_a, tokens_b))
        if self.masker is not None:
            packed.update(self.masker(packed, seed=seed))
        return packed

    def examples(self, instances):
        """Packs (and for static masking, masks) a batch of instances into tf.train.Examples."""
        if not instances:
            return

        def ragged(segments):
            lengths = np.fromiter((len(s) for s in segments), np.int64, len(segments))
            flat = np.fromiter(itertools.chain.from_iterable(segments), np.int32, lengths.sum())
            return tf.RaggedTensor.from_row_lengths(flat, lengths)

        seed = tf.constant([self.window_seed, self.num_mask_batches], tf.int64)
        if self.masker is not None:
            self.num_mask_batches += 1
        out = self.pack_and_mask(ragged([x[0] for x in instances]),
                                 ragged([x[1] for x in instances]), seed)
        lengths = out["padding_mask"].numpy().sum(axis=1).tolist()
        # Python lists: Int64List takes them much faster than numpy rows.
        token_ids, segment_ids = out["token_ids"].numpy().tolist(), out["segment_ids"].numpy().tolist()
        if self.masker is not None:
            num_masked = out["masked_weights"].numpy().sum(axis=1).astype(int).tolist()
            positions = out["masked_positions"].numpy().tolist()
            masked_ids = out["masked_ids"].numpy().tolist()
        for row, (n, instance) in enumerate(zip(lengths, instances)):
            # Filled in place: nested constructors copy every sub-message.
            example = tf.train.Example()
            feature = example.features.feature
            feature["token_ids"].int64_list.value.extend(token_ids[row][:n])
            feature["segment_ids"].int64_list.value.extend(segment_ids[row][:n])
            feature["next_sentence_labels"].int64_list.value.append(int(instance[2]))
            if self.masker is not None:
                # Masked positions come first (ascending), then padding.
                k = num_masked[row]
                feature["masked_positions"].int64_list.value.extend(positions[row][:k])
                feature["masked_ids"].int64_list.value.extend(masked_ids[row][:k])
            yield example


# Writers (tokenizer and compiled functions) per process, of the last two settings.
_WRITERS = {}


def _get_writer(vocab_file, config):
    # By the vocabulary's tokens, not its path: each run copies vocab.txt
    # into its own staging folder.
    key = (vocab_hash(vocab_file), json.dumps(dataclasses.asdict(config), sort_keys=True))
    if key not in _WRITERS:
        if len(_WRITERS) >= 2:  # Two settings in turn (training and held-out data).
            _WRITERS.pop(next(iter(_WRITERS)))
        _WRITERS[key] = _ShardWriter(vocab_file, config)
    return _WRITERS[key]


def window_seed(seed, window):
    """The seed of window `window` of the corpus: a 63-bit int of (seed, window).

    A hash, not Python's salted `hash`: the same in every process.
    """
    digest = hashlib.sha256(f"keras_bert.window:{int(seed)}:{int(window)}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def corpus_windows(input_files, size):
    """The corpus' windows of `size` documents, in input order, numbered from 0.

    A last window of fewer than size / 2 documents joins the one before
    (`document_windows`).

    Yields:
        `(window_index, documents)`.
    """
    yield from enumerate(document_windows(read_documents(input_files), size))


def shard_file_name(shard_index, num_shards):
    return f"pretraining-{shard_index:05d}-of-{num_shards:05d}.tfrecord"


def part_file_name(shard_index, num_shards):
    """The manifest a shard written on its own (`create_pretraining_shard`) commits last."""
    return f"pretraining-{shard_index:05d}-of-{num_shards:05d}.json"


def write_shard(input_files, output_dir, vocab_file, config, shard_index, num_shards,
                progress=None):
    """Writes one output shard. Returns its counts (a dict).

    Shard k of N holds windows k, k + N, ... of the corpus (`corpus_windows`),
    each window's instances in their shuffled order. Every shard reads the
    whole corpus and tokenizes only its windows.

    Args:
        progress: optional callable(num_bytes), called as input is consumed
            (the windows of other shards included: they are read too).
    """
    writer = _get_writer(vocab_file, config)
    name = shard_file_name(shard_index, num_shards)
    path = os.path.join(output_dir, name)
    tmp_path = path + ".tmp"
    stats = {"file": name, "num_documents": 0, "num_instances": 0, "num_tokens": 0,
             "num_masked": 0, "num_is_next": 0, "num_random_next": 0,
             "num_windows": 0, "windows": [], "single_document_windows": 0}
    with tf.io.TFRecordWriter(tmp_path) as out:
        for window_index, window in corpus_windows(input_files, config.document_pool_size):
            stats["num_windows"] += 1
            num_bytes = sum(len(line.encode("utf-8")) + 1 for d in window for line in d)
            if window_index % num_shards != shard_index:
                if progress is not None:
                    progress(num_bytes)
                continue
            writer.start_window(window_index)
            pool = writer.tokenize_documents(window)
            instances = []
            for _ in range(config.dupe_factor):
                for index in range(len(pool)):
                    instances.extend(
                        create_instances_from_document(pool, index, config, writer.rng)
                    )
            writer.rng.shuffle(instances)
            for start in range(0, len(instances), 1024):
                for example in writer.examples(instances[start:start + 1024]):
                    out.write(example.SerializeToString(deterministic=True))
                    feature = example.features.feature
                    stats["num_tokens"] += len(feature["token_ids"].int64_list.value)
                    if "masked_ids" in feature:
                        stats["num_masked"] += len(feature["masked_ids"].int64_list.value)
            stats["num_documents"] += len(pool)
            stats["num_instances"] += len(instances)
            stats["windows"].append([window_index, len(instances)])
            stats["single_document_windows"] += int(len(pool) == 1)
            random_next = sum(1 for instance in instances if instance[2])
            stats["num_random_next"] += random_next
            stats["num_is_next"] += len(instances) - random_next
            if progress is not None:
                progress(num_bytes)
    tf.io.gfile.rename(tmp_path, path, overwrite=True)
    return stats


# The progress queue of a worker process (set by the pool's initializer).
_PROGRESS_QUEUE = None


def _init_worker(queue):
    global _PROGRESS_QUEUE
    _PROGRESS_QUEUE = queue


def _write_shard_task(args):
    input_files, output_dir, vocab_file, config_dict, shard_index, num_shards = args
    config = PretrainingDataConfig(**config_dict)
    progress = None if _PROGRESS_QUEUE is None else _PROGRESS_QUEUE.put
    return write_shard(input_files, output_dir, vocab_file, config, shard_index,
                       num_shards, progress)


def _input_bytes(input_files):
    return sum(tf.io.gfile.stat(path).length for path in input_files)


def _warn_thin_shards(shards, input_files):
    """Warns of windows of one document (NotNext pairs then come from the same
    document) and of shards left without a window."""
    where = ", ".join(map(os.fspath, input_files))
    total = sum(s["num_documents"] for s in shards)
    if any(s["single_document_windows"] for s in shards):
        what = ("the corpus is a single document" if total == 1
                else "a window of documents holds a single document")
        logger.warning(
            "%s: %s, so next-sentence prediction has no other document to draw its random "
            "'next' segments from (NotNext pairs come from the same document). Separate "
            "documents with a blank line.", where, what)
    empty = [s["file"] for s in shards if not s["windows"]]
    if empty and total:
        logger.warning(
            "%s: %d documents make %d window(s) of document_pool_size documents, fewer than "
            "the %d shards: %s hold no instances. Pass fewer shards or a smaller "
            "--document-pool-size.", where, total, shards[0]["num_windows"], len(shards),
            ", ".join(empty))


def create_pretraining_data(input_files, output_dir, vocab_file, config=None,
                            num_shards=None, num_workers=1, progress=None):
    """Writes sharded TFRecords of pretraining instances and their metadata.

    Args:
        input_files: list of str, corpus files (one sentence per line, a
            blank line between documents; see `keras_bert.data.corpus`).
        output_dir: str, created if missing; else empty or pretraining data
            keras_bert wrote, which is replaced once the new data is complete
            (only the files its metadata.json lists are deleted; a kill
            leaves the old data or the new, never a mix: `_commit`).
        vocab_file: str, the WordPiece vocab.txt (copied into `output_dir`).
        config: a `PretrainingDataConfig` (default: its defaults).
        num_shards: int, output files (default: `num_workers`); together
            they hold the same records for any `num_shards` (`write_shard`).
            To write them on several machines, see
            `keras_bert.data.create_pretraining_shard`.
        num_workers: int, processes (spawned) writing shards in parallel.
        progress: optional callable(num_bytes, total_bytes) called as input
            is consumed, for a progress bar.

    Returns:
        dict, the metadata written to `output_dir/metadata.json`.

    Example:
    >>> meta = create_pretraining_data(["corpus.txt"], "data/", "vocab.txt",
    ...     PretrainingDataConfig(max_seq_length=128, dupe_factor=5))
    >>> meta["num_instances"], meta["next_sentence_labels"]
    """
    config = config or PretrainingDataConfig()
    input_files = list(input_files)
    storage.check_filesystem(output_dir, flag="The output")  # Before any work.
    for path in [*input_files, vocab_file]:
        storage.check_filesystem(path, flag="The input")
    if not input_files:
        raise ValueError("No input files given: pass corpus files (one sentence a line).")
    for path in input_files:
        # Before anything is written: a directory, gzip, UTF-16 or binary input.
        text_files.check_text_file(path, "input corpus file")
    num_workers = max(int(num_workers), 1)
    num_shards = int(num_shards or num_workers)
    check_count("num_shards", num_shards)
    recover_data_dir(output_dir)  # First: a killed writer's shards are not strangers.
    check_output_dir(output_dir, input_files, vocab_file)
    tf.io.gfile.makedirs(output_dir)
    staging = _make_staging(output_dir)
    try:
        shards = _write_shards(input_files, staging, vocab_file, config, num_shards,
                               num_workers, progress)
        if sum(s["num_instances"] for s in shards) == 0:
            # An empty set would make training spin on empty files: refuse it.
            raise ValueError(
                f"The corpus {', '.join(map(os.fspath, input_files))} gave no pretraining "
                f"instances (documents: {sum(s['num_documents'] for s in shards)}); nothing "
                f"was written to {output_dir}. It needs text: one sentence a line, a blank "
                f"line between documents."
            )
        _warn_thin_shards(shards, input_files)
        for shard in shards:  # The reader checks them: a swap cut short is caught.
            shard["bytes"] = tf.io.gfile.stat(os.path.join(staging, shard["file"])).length
        metadata = _metadata(input_files, os.path.join(staging, VOCAB_FILE), config,
                             num_shards, shards,
                             data_identity(input_files, vocab_file, config, num_shards))
        with tf.io.gfile.GFile(os.path.join(staging, METADATA_FILE), "w") as f:
            f.write(json.dumps(metadata, indent=2) + "\n")
        steps.reached("data:staged")
        moves = sorted(s["file"] for s in shards)
        if not _same_path(vocab_file, os.path.join(output_dir, VOCAB_FILE)):
            moves.append(VOCAB_FILE)
        _commit(output_dir, staging, moves + [METADATA_FILE])
    finally:
        # A committed set (its journal written) is finished, or if that fails
        # too (a store's network), left for the next reader or writer to finish
        # (`recover_data_dir`): an error in the moves loses nothing.
        if storage.exists(os.path.join(staging, _JOURNAL)):
            with contextlib.suppress(Exception):
                _roll_forward(output_dir, staging)
        elif storage.exists(staging):
            storage.remove(staging)
    return metadata


# The commit journal in a staging folder: once it exists the new data set is
# complete and committed, and whoever finds it (the writer, or after a kill
# the next writer or reader) finishes the moves it lists.
_JOURNAL = "commit.json"


def _commit(output_dir, staging, moves):
    """Commits the complete data set in `staging` into `output_dir`.

    Renaming the journal (the moves, metadata.json last, and the old shards
    to remove) into `staging` decides it; moves cut short by a kill are
    finished by `recover_data_dir`.
    """
    with locked(output_dir):
        new = set(moves)
        # The previous data's shards, read now: another writer may have committed.
        removes = [n for n in (_listed_files(output_dir) or []) if n not in new]
        journal = os.path.join(staging, _JOURNAL)
        with tf.io.gfile.GFile(journal + ".part", "w") as f:
            f.write(json.dumps({"move": moves, "remove": removes}) + "\n")
        tf.io.gfile.rename(journal + ".part", journal, overwrite=True)
        steps.reached("data:committed")
        _roll_forward(output_dir, staging)


def _roll_forward(output_dir, staging):
    """Finishes the moves of `staging`'s journal (those not done yet), then the removals."""
    with tf.io.gfile.GFile(os.path.join(staging, _JOURNAL)) as f:
        journal = json.load(f)
    for number, name in enumerate(journal["move"]):
        source = os.path.join(staging, name)
        if tf.io.gfile.exists(source):
            tf.io.gfile.rename(source, os.path.join(output_dir, name), overwrite=True)
        if number == 0:
            steps.reached("data:swap")  # New shard 0 beside the old shards.
    for name in journal["remove"]:
        path = os.path.join(output_dir, name)
        if os.path.basename(name) == name and tf.io.gfile.exists(path):
            tf.io.gfile.remove(path)
    storage.remove(staging)


def recover_data_dir(output_dir):
    """Finishes or removes what killed writers of `output_dir` left (only theirs).

    A dead writer's staging folder with a commit journal is rolled forward,
    one without is removed. Readers call it too; the folder's lock makes them
    wait for a running commit instead of reading half of it.
    """
    if storage.is_remote(output_dir):
        _recover_remote(output_dir)
        return
    if not os.path.isdir(output_dir):
        return
    with locked(output_dir):
        for staging in stale_entries(output_dir, _STAGING_PREFIX):
            if os.path.exists(os.path.join(staging, _JOURNAL)):
                _roll_forward(output_dir, staging)
            else:
                shutil.rmtree(staging, ignore_errors=True)


def _recover_remote(output_dir):
    """`recover_data_dir` on an object store (no lock, no PIDs of other hosts):
    a staging folder without a journal is removed only if its writer provably
    ended (`keras_bert.storage`)."""
    if not storage.isdir(output_dir):
        return
    for name in storage.listdir(output_dir):
        staging = storage.join(output_dir, name)
        if not name.startswith(_STAGING_PREFIX):
            continue
        if storage.exists(storage.join(staging, _JOURNAL)):
            _roll_forward(output_dir, staging)
        elif storage.writer_gone(staging):
            storage.remove(staging)


def _same_path(a, b):
    return os.path.realpath(os.fspath(a)) == os.path.realpath(os.fspath(b))


def _listed_files(output_dir):
    """The shard files a previous run wrote in `output_dir` (its metadata.json
    lists them), or None if it holds no keras_bert pretraining metadata."""
    metadata = _read_format(os.path.join(output_dir, METADATA_FILE), FORMAT)
    if metadata is None:
        return None
    shards = metadata.get("shards")
    if not isinstance(shards, list) or not all(
            isinstance(s, dict) and isinstance(s.get("file"), str)
            and s["file"] == os.path.basename(s["file"]) and s["file"].startswith("pretraining-")
            for s in shards):
        return None
    manifests = [s["manifest"] for s in shards if isinstance(s.get("manifest"), str)
                 and s["manifest"] == os.path.basename(s["manifest"])
                 and s["manifest"].startswith("pretraining-")]
    return [s["file"] for s in shards] + manifests


_STAGING_PREFIX = ".tmp-pretraining-"


def check_output_dir(output_dir, input_files, vocab_file):
    """Raises unless `create_pretraining_data` may write `output_dir`.

    It may be missing, empty (but for the vocab.txt given as `vocab_file`),
    or pretraining data keras_bert wrote with no unlisted pretraining-* file;
    input files must not lie inside it.

    Returns:
        list of str, the shard files of the previous data (replaced).
    """
    check_not_input(output_dir, input_files, flag="The output")
    check_writable(os.path.join(output_dir, METADATA_FILE))
    if not tf.io.gfile.exists(output_dir):
        return []
    if not tf.io.gfile.isdir(output_dir):
        raise OutputError(f"The output {output_dir} is a file, not a folder for pretraining "
                          f"data: {WAY_OUT}.")
    names = [n.rstrip("/") for n in tf.io.gfile.listdir(output_dir)]
    names = [n for n in names if not n.startswith(_STAGING_PREFIX)]
    if VOCAB_FILE in names and _same_path(vocab_file, os.path.join(output_dir, VOCAB_FILE)):
        names.remove(VOCAB_FILE)
    if not names:
        return []
    listed = _listed_files(output_dir)
    if listed is None and part_names(output_dir):
        raise OutputError(
            f"{output_dir} holds shards written one by one (--shard) of a set not complete "
            f"yet ({', '.join(part_names(output_dir)[:3])}, ...): finish it with the same "
            f"--shard command for the missing shards (tools/pretrain.py names them), or "
            f"{WAY_OUT}.")
    if listed is None:
        raise OutputError(
            f"{output_dir} is not empty and holds no keras_bert pretraining data (no "
            f"metadata.json of format {FORMAT!r}; it holds {', '.join(sorted(names)[:5])}); "
            f"keras_bert only replaces what it wrote: {WAY_OUT}.")
    strangers = sorted(n for n in names if n.startswith("pretraining-") and n not in listed)
    if strangers:
        raise OutputError(
            f"{output_dir} holds {', '.join(strangers[:5])}, which its metadata.json does not "
            f"list, and keras_bert would write over it: {WAY_OUT}.")
    return [n for n in listed if n in names]


def _make_staging(output_dir):
    """A staging folder inside `output_dir`, named for this writer (the shards are
    renamed out of it, within one file system)."""
    if "://" not in os.fspath(output_dir):
        return make_staging_dir(output_dir, _STAGING_PREFIX)
    path = os.path.join(output_dir, f"{staging_prefix(_STAGING_PREFIX)}"
                                    f"{random.getrandbits(48):012x}")
    tf.io.gfile.makedirs(path)
    return path


def _write_shards(input_files, output_dir, vocab_file, config, num_shards, num_workers,
                  progress):
    """Writes every shard (and vocab.txt) into `output_dir`; returns their counts."""
    vocab_copy = os.path.join(output_dir, VOCAB_FILE)
    tf.io.gfile.copy(vocab_file, vocab_copy, overwrite=True)
    total_bytes = _input_bytes(input_files)
    reported = [0]
    if progress is not None:
        user_progress = progress

        def progress(num_bytes, total):
            reported[0] += num_bytes
            user_progress(num_bytes, total)
    tasks = [
        (input_files, output_dir, vocab_copy, dataclasses.asdict(config), k, num_shards)
        for k in range(num_shards)
    ]
    if num_workers == 1:
        report = None if progress is None else (lambda n: progress(n, total_bytes))
        shards = [write_shard(*task[:3], config, task[4], num_shards, report)
                  for task in tasks]
    else:
        shards = _run_in_processes(tasks, num_workers, progress, total_bytes)

    if progress is not None and reported[0] < total_bytes:
        # Counted bytes are those of stripped lines: finish the bar.
        progress(total_bytes - reported[0], total_bytes)
    return shards


def data_identity(input_files, vocab_file, config, num_shards):
    """"sha256:<hex>" of what decides a data set's records: the settings, the
    vocabulary, the input files (paths and content digests) and the number
    of shards. Shards written apart belong to one set when their identities
    agree."""
    key = {
        "version": VERSION,
        "config": dataclasses.asdict(config),
        "vocab_hash": vocab_hash(vocab_file),
        "input_files": [os.fspath(p) for p in input_files],
        "input_sha256": [storage.file_sha256(p, 16 << 20) for p in input_files],
        "num_shards": int(num_shards),
    }
    return "sha256:" + hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def _metadata(input_files, vocab_copy, config, num_shards, shards, identity):
    """The metadata.json dict of a finished set of shards."""
    from keras_bert.text import load_vocabulary

    tokens, _ = load_vocabulary(vocab_copy)
    is_next = sum(s["num_is_next"] for s in shards)
    random_next = sum(s["num_random_next"] for s in shards)
    return {
        "format": FORMAT,
        "version": VERSION,
        **dataclasses.asdict(config),
        "vocab_size": len(tokens),
        "vocab_hash": vocab_hash(tokens),
        "num_shards": num_shards,
        "num_instances": sum(s["num_instances"] for s in shards),
        "num_tokens": sum(s["num_tokens"] for s in shards),
        "num_documents": sum(s["num_documents"] for s in shards),
        "num_masked": sum(s["num_masked"] for s in shards),
        "next_sentence_labels": {"is_next": is_next, "random_next": random_next},
        "shards": [
            {"file": s["file"], "num_instances": s["num_instances"],
             **{k: s[k] for k in ("bytes", "manifest") if k in s}} for s in shards
        ],
        "input_files": [os.fspath(p) for p in input_files],
        "identity": identity,
    }


def _run_in_processes(tasks, num_workers, progress, total_bytes):
    # "spawn": TensorFlow is not fork-safe once initialized. Callers' main
    # module needs the `if __name__ == "__main__":` guard.
    context = multiprocessing.get_context("spawn")
    queue = context.Queue() if progress is not None else None
    stop = threading.Event()

    def drain():
        while True:
            try:
                progress(queue.get(timeout=0.2), total_bytes)
            except Empty:
                if stop.is_set():
                    return

    thread = None
    if queue is not None:
        thread = threading.Thread(target=drain, daemon=True)
        thread.start()
    try:
        with context.Pool(min(num_workers, len(tasks)), initializer=_init_worker,
                          initargs=(queue,)) as pool:
            return pool.map(_write_shard_task, tasks, chunksize=1)
    finally:
        stop.set()
        if thread is not None:
            thread.join()


# --- Shards written apart ----------------------------------------------------

PART_FORMAT = FORMAT + ".shard"
_PART_NAME = re.compile(r"^pretraining-(\d{5})-of-(\d{5})\.json$")


def part_names(data_dir):
    """The committed shard manifests in `data_dir` (names, sorted)."""
    if not tf.io.gfile.isdir(data_dir):
        return []
    return sorted(n for n in tf.io.gfile.listdir(data_dir) if _PART_NAME.match(n))


def read_part(data_dir, name):
    """The manifest `name` of `data_dir` as a dict, or None if it is missing or not one."""
    return _read_format(os.path.join(data_dir, name), PART_FORMAT)


def _read_format(path, format):
    """The JSON object in `path` if its "format" is `format`, else None."""
    if not tf.io.gfile.exists(path):
        return None
    try:
        with tf.io.gfile.GFile(path) as f:
            value = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) and value.get("format") == format else None


def shard_command(part, shard_index, num_shards):
    """The command line that writes shard `shard_index` of `part`'s set: the
    manifest's recorded command with its --shard replaced, else a generic one."""
    argv = part.get("command")
    value = f"{shard_index}/{num_shards}"
    if isinstance(argv, list) and all(isinstance(a, str) for a in argv):
        out = [
            value if previous == "--shard"
            else f"--shard={value}" if arg.startswith("--shard=")
            else arg
            for previous, arg in zip([None] + argv, argv)
        ]
        return "python tools/create_pretraining_data.py " + " ".join(shlex.quote(a) for a in out)
    return (f"python tools/create_pretraining_data.py {' '.join(part.get('input_files', []))} "
            f"--output DATA_DIR --vocab-file VOCAB (the other shards' settings) --shard {value}")


def read_parts(data_dir):
    """The shard manifests of `data_dir`'s set: (dict index -> manifest, num_shards).

    Raises:
        ValueError: manifests of two sets (other settings, inputs or shard
            counts) lie side by side, or one is unreadable.
    """
    parts, identity = {}, None
    for name in part_names(data_dir):
        part = read_part(data_dir, name)
        if part is None:
            raise ValueError(f"{os.path.join(data_dir, name)} is not a keras_bert shard "
                             f"manifest (format {PART_FORMAT!r}). Remove it, or write the "
                             f"shards into a new folder.")
        if identity is None:
            identity, first = part.get("identity"), name
        elif part.get("identity") != identity:
            raise ValueError(
                f"{data_dir} holds shards of two data sets: {first} and {name} were made with "
                f"other settings, inputs or shard counts. Keep one set per folder: write "
                f"each into a new folder.")
        parts[part["shard_index"]] = part
    num_shards = next(iter(parts.values()))["num_shards"] if parts else 0
    return parts, num_shards


def missing_shards(data_dir, parts, num_shards):
    """The shards of the set not committed in `data_dir` (no manifest, or a
    TFRecord file of another size than its manifest's): indexes, ascending."""
    missing = []
    for index in range(num_shards):
        part = parts.get(index)
        file = os.path.join(data_dir, shard_file_name(index, num_shards))
        if part is None or not tf.io.gfile.exists(file) or (
                tf.io.gfile.stat(file).length != part["bytes"]):
            missing.append(index)
    return missing


def assemble_parts(data_dir):
    """The metadata of a set of shards written apart, once every shard is committed.

    Raises:
        FileNotFoundError: some shards are missing; the message names them
            and the command that writes each.
    """
    parts, num_shards = read_parts(data_dir)
    missing = missing_shards(data_dir, parts, num_shards)
    if missing:
        part = next(iter(parts.values()))
        names = ", ".join(shard_file_name(i, num_shards) for i in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        commands = "\n".join(f"  {shard_command(part, i, num_shards)}" for i in missing[:5])
        raise FileNotFoundError(
            f"{data_dir} is incomplete: {len(missing)} of its {num_shards} shards are missing "
            f"or cut short ({names}{more}), so it cannot be read as a whole. Write them "
            f"(one command per shard, on any machine; shards already written are skipped):"
            f"\n{commands}")
    ordered = [parts[i] for i in range(num_shards)]
    first = ordered[0]
    config = PretrainingDataConfig(**first["config"])
    return _metadata(first["input_files"], os.path.join(data_dir, VOCAB_FILE), config,
                     num_shards, ordered, first["identity"])


# --- Reading -----------------------------------------------------------------


def read_metadata(data_dir, check=True):
    """The parsed metadata.json of a pretraining data directory, with `check`
    checked against the records first (`check_data_dir`)."""
    recover_data_dir(data_dir)
    path = os.path.join(data_dir, METADATA_FILE)
    if not tf.io.gfile.exists(path) and part_names(data_dir):
        # Shards written apart (`create_pretraining_shard`) whose last writer
        # did not get to write metadata.json: the same metadata, from the parts.
        metadata = assemble_parts(data_dir)
        if check:
            check_data_dir(data_dir, metadata)
        return metadata
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(
            f"{path} not found: {data_dir} is not a pretraining data directory. "
            "Create one with tools/create_pretraining_data.py."
        )
    with tf.io.gfile.GFile(path, "r") as f:
        try:
            metadata = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path} is not valid JSON: {e}") from e
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT:
        found = metadata.get("format") if isinstance(metadata, dict) else type(metadata).__name__
        raise ValueError(
            f"{path} is not keras_bert pretraining metadata "
            f"(format={found!r}, expected {FORMAT!r})."
        )
    if check:
        if any("manifest" in shard for shard in metadata["shards"] if isinstance(shard, dict)):
            # Written shard by shard: a shard cut short since is named with its command.
            assemble_parts(data_dir)
        check_data_dir(data_dir, metadata)
    return metadata


# Records read from the start of each shard to check metadata.json against.
_RECORDS_CHECKED = 64


def check_data_dir(data_dir, metadata):
    """Raises ValueError unless the records and vocab.txt agree with `metadata`.

    Checks the keys training reads, the shards' counts, files and sizes,
    vocab.txt's size and hash, and on the first records of each shard the
    masking mode, lengths and id ranges.
    """
    path = os.path.join(data_dir, METADATA_FILE)
    fix = " Recreate the data with tools/create_pretraining_data.py."
    for key, kind in (("max_seq_length", int), ("max_predictions_per_seq", int),
                      ("vocab_size", int), ("num_instances", int), ("vocab_hash", str),
                      ("masking", str), ("masked_lm_prob", (int, float)),
                      ("whole_word_masking", bool), ("shards", list)):
        value = metadata.get(key)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ValueError(f"{path}: {key} is missing or of the wrong type "
                             f"({value!r}).{fix}")
    if metadata["masking"] not in MASKING_MODES:
        raise ValueError(f"{path}: masking must be one of {MASKING_MODES}. "
                         f"Received: {metadata['masking']!r}.")
    shards = metadata["shards"]
    if not all(isinstance(x, dict) and isinstance(x.get("file"), str)
               and isinstance(x.get("num_instances"), int) for x in shards):
        raise ValueError(f"{path}: shards must be a list of {{file, num_instances}}.{fix}")
    if metadata["num_instances"] < 1 or not shards:
        raise ValueError(
            f"{data_dir} holds no pretraining instances ({path}: num_instances "
            f"{metadata['num_instances']}): nothing to train on. Give "
            f"tools/create_pretraining_data.py a corpus with documents of several sentences."
        )
    counted = sum(x["num_instances"] for x in shards)
    if counted != metadata["num_instances"]:
        raise ValueError(f"{path}: the shards hold {counted} instances, num_instances says "
                         f"{metadata['num_instances']}.{fix}")
    vocab_file = os.path.join(data_dir, VOCAB_FILE)
    if not tf.io.gfile.exists(vocab_file):
        raise FileNotFoundError(f"{vocab_file} is missing: the data's vocabulary.{fix}")
    from keras_bert.text import load_vocabulary

    tokens, _ = load_vocabulary(vocab_file)
    if len(tokens) != metadata["vocab_size"]:
        raise ValueError(f"{vocab_file} has {len(tokens)} tokens, {path} says vocab_size "
                         f"{metadata['vocab_size']}.{fix}")
    if vocab_hash(tokens) != metadata["vocab_hash"]:
        raise ValueError(f"{vocab_file} is not the vocabulary the records were made with "
                         f"({path} vocab_hash {metadata['vocab_hash']}): it was edited.{fix}")
    static = metadata["masking"] == "static"
    for shard in shards:
        file = os.path.join(data_dir, shard["file"])
        if shard["num_instances"] == 0:
            continue
        if not tf.io.gfile.exists(file):
            raise FileNotFoundError(f"{file} is missing ({path} lists it with "
                                    f"{shard['num_instances']} instances).{fix}")
        length = tf.io.gfile.stat(file).length
        if length == 0:
            raise ValueError(f"{file} is empty (0 bytes), {path} says it holds "
                             f"{shard['num_instances']} instances.{fix}")
        if isinstance(shard.get("bytes"), int) and length != shard["bytes"]:
            # Another data set's shard (metadata of data written before has no sizes).
            raise ValueError(f"{file} has {length} bytes, {path} says {shard['bytes']}: it "
                             f"is not the shard this metadata describes.{fix}")
        try:
            records = list(tf.data.TFRecordDataset(file).take(_RECORDS_CHECKED).as_numpy_iterator())
        except tf.errors.OpError as e:
            raise ValueError(f"{file} is not a readable TFRecord file: {e.message}.{fix}") from e
        if not records:
            raise ValueError(f"{file} holds no records, {path} says "
                             f"{shard['num_instances']}.{fix}")
        for number, record in enumerate(records):
            _check_record(record, metadata, f"{file} record {number}", static, path)


def _check_record(record, metadata, where, static, path):
    try:
        feature = tf.train.Example.FromString(record).features.feature
    except Exception as e:  # google.protobuf DecodeError
        raise ValueError(f"{where} is not a tf.train.Example: {e}") from e
    values = {name: list(feature[name].int64_list.value) for name in feature}
    if "token_ids" not in values or "segment_ids" not in values:
        raise ValueError(f"{where} has no token_ids / segment_ids: not pretraining data.")
    has_masks = "masked_ids" in values
    if has_masks != static:
        raise ValueError(
            f"{where} {'holds' if has_masks else 'has no'} masked_ids, but {path} says masking "
            f"{metadata['masking']!r}: the records were made with masking "
            f"{'static' if has_masks else 'dynamic'}. Fix masking in {path}."
        )
    length = len(values["token_ids"])
    if length > metadata["max_seq_length"]:
        raise ValueError(
            f"{where} has {length} tokens, more than max_seq_length "
            f"{metadata['max_seq_length']} in {path} (they would be truncated). Fix "
            f"max_seq_length in {path}.")
    if has_masks and len(values["masked_ids"]) > metadata["max_predictions_per_seq"]:
        raise ValueError(
            f"{where} has {len(values['masked_ids'])} masked tokens, more than "
            f"max_predictions_per_seq {metadata['max_predictions_per_seq']} in {path}.")
    ids = values["token_ids"] + values.get("masked_ids", [])
    if ids and not 0 <= min(ids) <= max(ids) < metadata["vocab_size"]:
        raise ValueError(f"{where} has token ids outside [0, vocab_size "
                         f"{metadata['vocab_size']}) of {path}.")


def corrupt_data_error(error, data_dir):
    """A ValueError naming the shard of `data_dir` that raised `error` (a DataLossError,
    whose message does not name the file): every shard's CRCs are read to find it."""
    for file in shard_paths(data_dir, read_metadata(data_dir, check=False)):
        try:
            for _ in tf.data.TFRecordDataset(file):
                pass
        except tf.errors.OpError as e:
            return ValueError(f"{file} is corrupt: {e.message}. Recreate the data with "
                              f"tools/create_pretraining_data.py.")
    return ValueError(f"Reading the pretraining data in {data_dir} failed: {error.message}")


def shard_paths(data_dir, metadata=None):
    """The TFRecord files of a data directory that hold records, in shard order."""
    metadata = metadata or read_metadata(data_dir)
    return [os.path.join(data_dir, shard["file"]) for shard in metadata["shards"]
            if shard["num_instances"] > 0]


def parse_examples(serialized, metadata):
    """Parses a batch of records into padded tensors.

    Args:
        serialized: string Tensor [batch], serialized tf.train.Examples.
        metadata: dict from `read_metadata`.

    Returns:
        dict of Tensors: `token_ids`, `segment_ids`, `padding_mask` int32
        [batch, max_seq_length]; `next_sentence_labels` int32 [batch]; with
        static masking also `masked_positions`, `masked_ids` int32 and
        `masked_weights` float32 [batch, max_predictions_per_seq].
    """
    ragged = tf.io.RaggedFeature(tf.int64, row_splits_dtype=tf.int32)
    spec = {
        "token_ids": ragged,
        "segment_ids": ragged,
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    }
    static = metadata["masking"] == "static"
    if static:
        spec["masked_positions"] = ragged
        spec["masked_ids"] = ragged
    parsed = tf.io.parse_example(serialized, spec)
    length = metadata["max_seq_length"]
    width = metadata["max_predictions_per_seq"]

    def dense(name, size, dtype=tf.int32):
        values = tf.cast(parsed[name], dtype)
        return values.to_tensor(0, shape=[None, size])

    out = {
        "token_ids": dense("token_ids", length),
        "segment_ids": dense("segment_ids", length),
        "padding_mask": tf.ones_like(parsed["token_ids"], tf.int32).to_tensor(
            0, shape=[None, length]
        ),
        "next_sentence_labels": tf.cast(parsed["next_sentence_labels"][:, 0], tf.int32),
    }
    if static:
        out["masked_positions"] = dense("masked_positions", width)
        out["masked_ids"] = dense("masked_ids", width)
        out["masked_weights"] = tf.ones_like(
            parsed["masked_ids"], tf.float32
        ).to_tensor(0.0, shape=[None, width])
    return out
